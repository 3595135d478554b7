-- hotfull: this server has the smallest hot tier (test/hotfull/regress.conf).
CREATE EXTENSION leanstore;
SHOW leanstore.hot_memory;
-- A load far larger than the hot tier, in one transaction, fits: after
-- leanstore.bulk_load_rows rows its rows go straight to the cold tier.
CREATE TABLE hf_big (id int, pad text) USING leanstore;
INSERT INTO hf_big SELECT g, repeat('x', 200) FROM generate_series(1, 300000) g;
SELECT count(*), sum(id) FROM hf_big;
SELECT hot_rows <= 10000 AS few_hot, cold_pages > 0 AS on_disk FROM leanstore_table_stats('hf_big');
DROP TABLE hf_big;
-- With bulk loads kept hot, filling the tier in one transaction makes an
-- insert fail with an error naming leanstore.hot_memory; the table stays
-- intact and usable, and TRUNCATE and DROP give the memory back.
SET leanstore.bulk_load_rows = 0;
CREATE TABLE hf_result (round int, batches int, rows_kept bigint, sqlstate text, message text, hint text, detail text);
-- inserts batches of 1000 rows (each in its own subtransaction) into tab until
-- an insert fails; records the rows that made it and the error
CREATE FUNCTION hf_fill(tab regclass, round int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  b int := 0;
  st text; msg text; hnt text; det text;
BEGIN
  LOOP
    BEGIN
      EXECUTE format('INSERT INTO %s SELECT $1 * 1000 + g, repeat(''x'', 200) FROM generate_series(1, 1000) g', tab)
        USING b;
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hnt = PG_EXCEPTION_HINT,
                              det = PG_EXCEPTION_DETAIL;
      INSERT INTO hf_result VALUES (round, b, b * 1000::bigint, st, msg, hnt, det);
      RETURN b * 1000::bigint;
    END;
    b := b + 1;
    IF b > 100000 THEN
      RAISE EXCEPTION 'the hot tier never filled up (% rows)', b * 1000;
    END IF;
  END LOOP;
END $$;
CREATE TABLE hf_t (id int, pad text) USING leanstore;
SELECT hf_fill('hf_t', 1) > 10000 AS filled;
SELECT sqlstate, message LIKE 'leanstore hot tier is full%' AS full_message,
       hint LIKE '%leanstore.hot_memory%' AS hint_names_guc
FROM hf_result WHERE round = 1;
-- the error as the user sees it: this one transaction's rows fill the
-- tier (pack cannot move rows a running transaction wrote), and it says so
SELECT message, hint FROM hf_result WHERE round = 1;
SELECT detail ~ '^This transaction added \d+ of the \d+ row versions in the hot tier; rows a transaction changed stay there until it ends\.$' AS detail_names_own_versions
FROM hf_result WHERE round = 1;
-- the rows inserted before the error are all there, the failed batch is not
SELECT count(*) = (SELECT rows_kept FROM hf_result WHERE round = 1) AS intact,
       min(id) = 1 AS first_row, max(id) = (SELECT rows_kept FROM hf_result WHERE round = 1) AS last_row
FROM hf_t;
-- reads and deletes keep working on the full table
SELECT count(*) FROM hf_t WHERE id <= 1000;
DELETE FROM hf_t WHERE id <= 1000;
SELECT count(*) FROM hf_t WHERE id <= 1000;
-- TRUNCATE releases the memory: the table takes as many rows again
TRUNCATE hf_t;
SELECT count(*) FROM hf_t;
SELECT hf_fill('hf_t', 2) >= 0.9 * (SELECT rows_kept FROM hf_result WHERE round = 1) AS refilled_after_truncate;
-- DROP releases it as well: a new table takes as many rows again
DROP TABLE hf_t;
CREATE TABLE hf_t2 (id int, pad text) USING leanstore;
SELECT hf_fill('hf_t2', 3) >= 0.9 * (SELECT rows_kept FROM hf_result WHERE round = 1) AS refilled_after_drop;
SELECT count(*) = (SELECT rows_kept FROM hf_result WHERE round = 3) AS intact FROM hf_t2;
DROP TABLE hf_t2, hf_result;
DROP FUNCTION hf_fill(regclass, int);
-- A bulk insert that fills the tier and fails gives its rows' memory back at
-- abort, without a VACUUM: other tables stay writable (issue 12).  Every
-- insert stays hot here (large loads would go to the cold tier otherwise).
SET leanstore.bulk_load_rows = 0;
CREATE TABLE hf_big (id int, pad text) USING leanstore;
CREATE TABLE hf_other (id int, pad text) USING leanstore;
SELECT used_bytes AS used_before, region_bytes FROM leanstore_stats() \gset
\set VERBOSITY terse
INSERT INTO hf_big SELECT g, repeat('x', 200) FROM generate_series(1, 3000000) g;
SELECT count(*) FROM hf_big;
INSERT INTO hf_other SELECT g, repeat('y', 200) FROM generate_series(1, 20000) g;
SELECT count(*) FROM hf_other;
-- what stays behind is the RID map of the failed rows (DEAD until VACUUM)
SELECT hot_rows, dead_rowids > 20000 AS dead_rowids_left FROM leanstore_table_stats('hf_big');
TRUNCATE hf_other;
SELECT (used_bytes - :used_before) < :region_bytes / 10 AS memory_back FROM leanstore_stats();
-- the same inside a subtransaction: ROLLBACK TO gives the memory back, and
-- the transaction goes on writing
BEGIN;
INSERT INTO hf_other VALUES (0, 'kept');
SAVEPOINT s;
INSERT INTO hf_big SELECT g, repeat('x', 200) FROM generate_series(1, 3000000) g;
ROLLBACK TO s;
\set VERBOSITY default
INSERT INTO hf_other SELECT g, repeat('y', 200) FROM generate_series(1, 20000) g;
COMMIT;
SELECT count(*) FROM hf_other;
SELECT count(*) FROM hf_big;
SELECT leanstore_verify('hf_big'), leanstore_verify('hf_other');
DROP TABLE hf_big, hf_other;
-- the same for a bulk UPDATE in place (no indexed column) that fills the
-- tier: its new versions give their memory back at abort
CREATE TABLE hf_upd (id int, pad text) USING leanstore;
CREATE TABLE hf_other (id int, pad text) USING leanstore;
INSERT INTO hf_upd SELECT g, repeat('a', 200) FROM generate_series(1, 30000) g;
SELECT used_bytes AS used_before FROM leanstore_stats() \gset
\set VERBOSITY terse
DO $$
BEGIN
  FOR i IN 1 .. 100 LOOP
    UPDATE hf_upd SET pad = repeat(chr(98 + i % 20), 200);
  END LOOP;
END $$;
\set VERBOSITY default
SELECT count(*), min(pad) = max(pad) AND min(pad) = repeat('a', 200) AS unchanged FROM hf_upd;
INSERT INTO hf_other SELECT g, repeat('y', 200) FROM generate_series(1, 20000) g;
SELECT count(*) FROM hf_other;
TRUNCATE hf_other;
SELECT (used_bytes - :used_before) < :region_bytes / 10 AS memory_back FROM leanstore_stats();
SELECT hot_rows, hot_versions FROM leanstore_table_stats('hf_upd');
SELECT leanstore_verify('hf_upd');
DROP TABLE hf_upd, hf_other;
-- With leanstore.bulk_load_rows at its default the same kind of updates
-- fit: once the hot tier has no room for a new version, an update writes it
-- into the cold tree at a new rowid (heap's non-HOT update), and further
-- writes of cold rows are made in the cold tier instead of migrating them
-- into the full tier; inserts that find it full go to the cold tree too
RESET leanstore.bulk_load_rows;
-- ten updates of every row of tab in the calling transaction: its own
-- versions fill the tier (pack cannot move them before it ends)
CREATE PROCEDURE hf_churn(tab regclass) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 10 LOOP
    EXECUTE format('UPDATE %s SET pad = repeat(chr(%s), 200)', tab, 98 + i);
  END LOOP;
END $$;
CREATE TABLE hf_upd2 (id int PRIMARY KEY, pad text) USING leanstore;
INSERT INTO hf_upd2 SELECT g, repeat('a', 200) FROM generate_series(1, 20000) g;
SELECT writes_spilled AS spilled_before FROM leanstore_stats() \gset
BEGIN;
CALL hf_churn('hf_upd2');
SELECT writes_spilled > :spilled_before AS spilled FROM leanstore_stats();
INSERT INTO hf_upd2 SELECT g, repeat('i', 200) FROM generate_series(20001, 40000) g;
SELECT count(*), count(*) FILTER (WHERE pad = repeat('l', 200)) AS updated FROM hf_upd2;
SET enable_seqscan = off;
SELECT count(*) FROM hf_upd2 WHERE id BETWEEN 1001 AND 2000 AND pad = repeat('l', 200);
RESET enable_seqscan;
DELETE FROM hf_upd2 WHERE id % 2 = 0;
COMMIT;
SELECT count(*), count(DISTINCT pad) FROM hf_upd2;
VACUUM hf_upd2;
SELECT leanstore_verify('hf_upd2');
DROP TABLE hf_upd2;
-- Row locks of cold rows while the hot tier is full (this transaction's
-- own versions fill it): SELECT ... FOR UPDATE / FOR SHARE put the lock
-- into the row's image instead of migrating the row ("hot tier is full"
-- before); the same transaction then updates and deletes the locked rows
-- there, and locks rows its own spilled updates wrote.
CREATE TABLE hf_lock (id int PRIMARY KEY, n int, pad text) USING leanstore;
INSERT INTO hf_lock SELECT g, 0, repeat('c', 200) FROM generate_series(1, 100000) g;
CREATE TABLE hf_fill (id int PRIMARY KEY, pad text) USING leanstore;
INSERT INTO hf_fill SELECT g, repeat('a', 200) FROM generate_series(1, 20000) g;
BEGIN;
CALL hf_churn('hf_fill');
SELECT count(*) FROM (SELECT id FROM hf_lock WHERE id BETWEEN 50001 AND 52000 FOR UPDATE) l;
SELECT count(*) FROM (SELECT id FROM hf_lock WHERE id BETWEEN 60001 AND 62000 FOR SHARE) l;
SELECT count(*) FROM (SELECT id FROM hf_lock WHERE id BETWEEN 70001 AND 72000 FOR KEY SHARE) l;
UPDATE hf_lock SET n = n + 1 WHERE id BETWEEN 50001 AND 51000;
UPDATE hf_lock SET n = n + 1 WHERE id BETWEEN 60001 AND 61000;
DELETE FROM hf_lock WHERE id BETWEEN 51001 AND 51500;
DELETE FROM hf_lock WHERE id BETWEEN 70001 AND 70500;
SELECT count(*) FROM (SELECT id FROM hf_fill WHERE id <= 1000 FOR UPDATE) l;
UPDATE hf_fill SET pad = 'locked' WHERE id <= 1000;
SELECT count(*), sum(n), count(*) FILTER (WHERE n = 1) AS updated FROM hf_lock;
COMMIT;
SELECT count(*), sum(n), count(*) FILTER (WHERE n = 1) AS updated FROM hf_lock;
SELECT count(*) FILTER (WHERE pad = 'locked') AS locked_updated FROM hf_fill;
SET enable_seqscan = off;
SELECT count(*), sum(n) FROM hf_lock WHERE id BETWEEN 1 AND 100000;
RESET enable_seqscan;
VACUUM hf_lock;
SELECT leanstore_verify('hf_lock'), leanstore_verify('hf_fill');
-- Subtransactions' FOR KEY SHARE locks beside their parent's in cold
-- images while the tier is full: each one makes a multixact of parent and
-- subtransaction, whose creation reaches the WAL before it goes into an
-- image (ls_log_multi_durable); 3000 of them cross many WAL pages (the
-- flush once failed with "xlog flush request ... is not satisfied" when a
-- creation record ended a page).  The parent then updates some of the rows
-- in the cold tier beside those locks.
BEGIN;
CALL hf_churn('hf_fill');
SELECT count(*) FROM (SELECT id FROM hf_lock WHERE id BETWEEN 20001 AND 23000 FOR KEY SHARE) l;
DO $$
BEGIN
  FOR i IN 20001 .. 23000 LOOP
    BEGIN
      PERFORM id FROM hf_lock WHERE id = i FOR KEY SHARE;
    EXCEPTION WHEN division_by_zero THEN NULL;
    END;
  END LOOP;
END $$;
UPDATE hf_lock SET n = n + 2 WHERE id BETWEEN 20001 AND 20100;
COMMIT;
SELECT count(*), count(*) FILTER (WHERE n = 2) AS updated FROM hf_lock WHERE id BETWEEN 20001 AND 23000;
UPDATE hf_lock SET n = 0 WHERE id BETWEEN 20001 AND 20100;
-- The same in a SERIALIZABLE transaction (its writes of cold rows used to
-- migrate them always, and failed with "hot tier is full" here)
BEGIN ISOLATION LEVEL SERIALIZABLE;
CALL hf_churn('hf_fill');
SELECT count(*) FROM (SELECT id FROM hf_lock WHERE id BETWEEN 80001 AND 82000 FOR UPDATE) l;
SELECT count(*) FROM (SELECT id FROM hf_lock WHERE id BETWEEN 82001 AND 84000 FOR SHARE) l;
UPDATE hf_lock SET n = n + 10 WHERE id BETWEEN 80001 AND 81000;
DELETE FROM hf_lock WHERE id BETWEEN 81001 AND 81500;
UPDATE hf_lock SET n = n + 100 WHERE id BETWEEN 90001 AND 95000;
DELETE FROM hf_lock WHERE id BETWEEN 95001 AND 96000;
COMMIT;
SELECT count(*), sum(n), count(*) FILTER (WHERE n = 10) AS by10, count(*) FILTER (WHERE n = 100) AS by100 FROM hf_lock;
SET enable_seqscan = off;
SELECT count(*), sum(n) FROM hf_lock WHERE id BETWEEN 80001 AND 96000;
RESET enable_seqscan;
VACUUM hf_lock;
SELECT leanstore_verify('hf_lock');
-- INSERT ... ON CONFLICT while the tier is full: the speculative inserts
-- of new keys go into the cold tree with their token ("hot tier is full"
-- before), conflicting keys are updated or skipped as usual
CREATE TABLE hf_ups (id int PRIMARY KEY, n int, pad text) USING leanstore;
INSERT INTO hf_ups SELECT g, 0, repeat('u', 100) FROM generate_series(1, 1000) g;
BEGIN;
CALL hf_churn('hf_fill');
INSERT INTO hf_ups SELECT g, 1, repeat('v', 100) FROM generate_series(1, 2000) g
  ON CONFLICT (id) DO UPDATE SET n = hf_ups.n + 1;
INSERT INTO hf_ups SELECT g, 5, 'x' FROM generate_series(1500, 2500) g ON CONFLICT DO NOTHING;
SELECT count(*), sum(n), count(DISTINCT id) FROM hf_ups;
COMMIT;
SELECT count(*), sum(n), count(DISTINCT id) FROM hf_ups;
SET enable_seqscan = off;
SELECT count(*), sum(n) FROM hf_ups WHERE id BETWEEN 1 AND 3000;
RESET enable_seqscan;
VACUUM hf_ups;
SELECT leanstore_verify('hf_ups');
DROP TABLE hf_ups;
-- Foreign key actions under REPEATABLE READ and SERIALIZABLE delete and
-- update with a crosscheck snapshot: the cascaded writes of cold rows are
-- made in their images too when the tier is full ("hot tier is full"
-- before; an image the crosscheck snapshot could not see would take the
-- migrating path, which reports the serialization failure)
CREATE TABLE hf_parent (id int PRIMARY KEY) USING leanstore;
CREATE TABLE hf_child (id int PRIMARY KEY,
  pid int REFERENCES hf_parent ON DELETE CASCADE ON UPDATE CASCADE, pad text) USING leanstore;
INSERT INTO hf_parent VALUES (1), (2), (3);
INSERT INTO hf_child SELECT g, 1 + g % 3, repeat('k', 100) FROM generate_series(1, 60000) g;
BEGIN ISOLATION LEVEL REPEATABLE READ;
CALL hf_churn('hf_fill');
DELETE FROM hf_parent WHERE id = 1;
UPDATE hf_parent SET id = 4 WHERE id = 2;
SELECT pid, count(*) FROM hf_child GROUP BY pid ORDER BY pid;
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
CALL hf_churn('hf_fill');
DELETE FROM hf_parent WHERE id = 3;
COMMIT;
SELECT pid, count(*) FROM hf_child GROUP BY pid ORDER BY pid;
SELECT leanstore_verify('hf_child');
DROP TABLE hf_child, hf_parent;
DROP TABLE hf_lock, hf_fill;
DROP PROCEDURE hf_churn(regclass);
SET leanstore.bulk_load_rows = 0;
-- A DELETE (and then an UPDATE) of far more cold rows than the hot tier could take versions for
-- (every row it deletes used to migrate into the tier first, and failed
-- there with "hot tier is full"): past leanstore.bulk_load_rows cold rows it
-- deletes in the cold tier, and rolls back and commits like any delete.
RESET leanstore.bulk_load_rows;
CREATE TABLE hf_del (id int PRIMARY KEY, pad text) USING leanstore;
INSERT INTO hf_del SELECT g, repeat('d', 200) FROM generate_series(1, 300000) g;
BEGIN;
DELETE FROM hf_del WHERE id > 10;
SELECT count(*) FROM hf_del;
ROLLBACK;
SELECT count(*) FROM hf_del;
DELETE FROM hf_del WHERE id % 2 = 0;
SELECT count(*), sum(id) FROM hf_del;
SET enable_seqscan = off;
SELECT count(*) FROM hf_del WHERE id BETWEEN 1 AND 300000;
RESET enable_seqscan;
-- and an UPDATE of every one of them (their new versions go into the cold
-- tree at new rowids)
UPDATE hf_del SET pad = repeat('u', 200);
SELECT count(*), min(pad) = max(pad) AND min(pad) = repeat('u', 200) AS updated FROM hf_del;
SELECT count(*) FROM hf_del WHERE id = 4711;
VACUUM hf_del;
SELECT count(*), leanstore_verify('hf_del') FROM hf_del;
SELECT dead_rowids FROM leanstore_table_stats('hf_del');
DROP TABLE hf_del;

-- ALTER TABLE ... SET TABLESPACE of a table far larger than the hot tier
-- copies its cold rows into the new cold tree and leaves out the rows a
-- committed DELETE left (dead to every snapshot), but a row some snapshot
-- may still need with its xmax is copied into the hot tier: the
-- transaction's own DELETE of most rows, then the move, finds no room and
-- fails with the hot tier's error; the table stays as it was.
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE hf_space LOCATION '';
RESET allow_in_place_tablespaces;
CREATE TABLE hf_move (id int PRIMARY KEY, pad text) USING leanstore;
INSERT INTO hf_move SELECT g, repeat('m', 200) FROM generate_series(1, 300000) g;
DELETE FROM hf_move WHERE id % 3 = 0;
ALTER TABLE hf_move SET TABLESPACE hf_space;
SELECT count(*), sum(id) FROM hf_move;
BEGIN;
DELETE FROM hf_move WHERE id > 100;
\set VERBOSITY terse
ALTER TABLE hf_move SET TABLESPACE pg_default;
\set VERBOSITY default
ROLLBACK;
SELECT count(*), sum(id), leanstore_verify('hf_move') FROM hf_move;
DROP TABLE hf_move;
DROP TABLESPACE hf_space;
