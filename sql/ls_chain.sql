-- Every version-chain walk takes its steps through one helper with one
-- bound (ls_chain_next); a chain longer than the bound is corruption and
-- raises ERRCODE_DATA_CORRUPTED naming the table and the rowid, never a
-- silent stop with a wrong answer.  The asserting build lets a test lower
-- the bound (1M versions by default) for its own backend.
CREATE FUNCTION ls_test_chain_bound(int) RETURNS int
    AS 'leanstore', 'leanstore_test_chain_bound' LANGUAGE C STRICT;
CREATE TABLE lc (id int PRIMARY KEY, v int) USING leanstore;
INSERT INTO lc VALUES (1, 0), (2, 0);
SELECT ls_test_chain_bound(8);
-- a cursor's snapshot needs the oldest version of a row that the same
-- transaction then updates in place 7 times: 8 versions, within the bound
BEGIN;
DECLARE c1 CURSOR FOR SELECT id, v FROM lc ORDER BY id;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
FETCH ALL FROM c1;
SELECT id, v FROM lc ORDER BY id;
ROLLBACK;
-- the rolled back versions stay on the chain until VACUUM prunes them
SELECT ls_test_chain_bound(0);
VACUUM lc;
-- a read that needs the oldest of 8 versions with the bound lowered to 7:
-- the error names table and rowid, the scan does not return a wrong row
BEGIN;
DECLARE c2 CURSOR FOR SELECT id, v FROM lc ORDER BY id;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
SELECT ls_test_chain_bound(7);
FETCH ALL FROM c2;
ROLLBACK;
SELECT ls_test_chain_bound(0);
VACUUM lc;
-- an index scan, and an update whose own walk passes the bound
SELECT ls_test_chain_bound(8);
BEGIN;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
DECLARE c3 CURSOR FOR SELECT id, v FROM lc WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
FETCH ALL FROM c3;
UPDATE lc SET v = v + 1 WHERE id = 1;
ROLLBACK;
-- back to the default bound: the same walks succeed
SELECT ls_test_chain_bound(0);
VACUUM lc;
BEGIN;
DECLARE c5 CURSOR FOR SELECT id, v FROM lc ORDER BY id;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
UPDATE lc SET v = v + 1 WHERE id = 1;
FETCH ALL FROM c5;
COMMIT;
SELECT id, v FROM lc ORDER BY id;
SELECT ls_test_chain_bound(1);
SELECT ls_test_chain_bound(-5);
SELECT leanstore_verify('lc');
-- a walk that passes the bound on a row no RID-map holds is named too: a
-- cold row's stand-in, and a hot row that pack evicted after the read found
-- it (the table is the one this backend read the row from)
CREATE FUNCTION ls_test_chain_overrun(regclass, tid, bool) RETURNS void
    AS 'leanstore', 'leanstore_test_chain_overrun' LANGUAGE C STRICT;
CREATE FUNCTION ls_test_pack(regclass, bool) RETURNS bigint
    AS 'leanstore', 'leanstore_test_pack' LANGUAGE C STRICT;
CREATE TABLE lc_cold (id int PRIMARY KEY, v int) USING leanstore;
INSERT INTO lc_cold VALUES (1, 0), (2, 0);
-- (packed once every snapshot sees the rows: regress-cold's pack worker
-- may hold an older one for a moment, so try for up to 5 s)
DO $$
BEGIN
  FOR i IN 1 .. 500 LOOP
    PERFORM ls_test_pack('lc_cold', false);
    EXIT WHEN (SELECT hot_rows FROM leanstore_table_stats('lc_cold')) = 0;
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
SELECT hot_rows FROM leanstore_table_stats('lc_cold');
SELECT ls_test_chain_overrun('lc_cold', ctid, false) FROM lc_cold WHERE id = 1;
INSERT INTO lc_cold VALUES (3, 0);
SELECT ls_test_chain_overrun('lc_cold', ctid, true) FROM lc_cold WHERE id = 3;
SELECT hot_rows FROM leanstore_table_stats('lc_cold');
SELECT count(*) FROM lc_cold;
DROP TABLE lc_cold;
-- the hooks take leanstore tables only (a heap table got "data of
-- leanstore table ... was lost in a server restart" before session 29)
CREATE TABLE lc_heap (id int) USING heap;
SELECT ls_test_pack('lc_heap', false);
DROP TABLE lc_heap;
DROP FUNCTION ls_test_pack(regclass, bool);
DROP FUNCTION ls_test_chain_overrun(regclass, tid, bool);
DROP TABLE lc;
DROP FUNCTION ls_test_chain_bound(int);
