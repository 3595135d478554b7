-- Epochs and row latches are held like LWLocks (src/pg/hold.c): interrupts
-- are held while an epoch is held, and one still held at commit fails the
-- transaction in the asserting build that test/run uses.
CREATE FUNCTION ls_test_hold(text) RETURNS void
    AS 'leanstore', 'leanstore_test_hold' LANGUAGE C STRICT;
SELECT ls_test_hold('hold');
-- a leaked epoch is reported at commit, not released silently
SELECT ls_test_hold('leak-epoch');
-- the failed commit released it: the backend goes on normally
CREATE TABLE ls_hold_t (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO ls_hold_t SELECT g, 'v' || g FROM generate_series(1, 10) g;
BEGIN;
SELECT ls_test_hold('leak-epoch');
SELECT count(*) FROM ls_hold_t;
COMMIT;
UPDATE ls_hold_t SET v = 'x' WHERE id = 1;
SELECT count(*), count(*) FILTER (WHERE v = 'x') FROM ls_hold_t;
SELECT ls_test_hold('nonsense');

-- An error thrown inside an epoch (palloc, a corrupted version's length in
-- ls_heaptuple_size) or under a row latch leaves them held until the
-- (sub)transaction aborts; the abort callbacks must give both back, or
-- every later writer of the row would spin and no memory would be reused.
CREATE FUNCTION ls_test_row_latched(regclass, tid) RETURNS bool
    AS 'leanstore', 'leanstore_test_row_latched' LANGUAGE C STRICT;
-- (Scans and index fetches copy rows into buffers sized outside the epoch
-- and never throw inside it.)  In a row lock that returns the locked
-- version (ls_store_version):
SELECT ls_test_hold('fail-in-epoch');
SELECT id FROM ls_hold_t WHERE id = 2 FOR UPDATE;
SELECT ls_test_hold('state');
-- in a sample scan's fetch (ls_store_version)
SELECT ls_test_hold('fail-in-epoch');
SELECT count(*) FROM ls_hold_t TABLESAMPLE SYSTEM (100);
SELECT ls_test_hold('state');
-- in VACUUM FULL's copy of the rows (palloc inside the epoch)
SELECT ls_test_hold('fail-in-epoch');
VACUUM FULL ls_hold_t;
SELECT ls_test_hold('state');
-- under the row latch of an update, then again in a subtransaction
SELECT ls_test_hold('fail-under-latch');
UPDATE ls_hold_t SET v = 'y' WHERE id = 3;
SELECT ls_test_hold('state');
SELECT ls_test_row_latched('ls_hold_t', ctid) FROM ls_hold_t WHERE id = 3;
BEGIN;
UPDATE ls_hold_t SET v = 'y' WHERE id = 4;
SAVEPOINT s;
SELECT ls_test_hold('fail-under-latch');
UPDATE ls_hold_t SET v = 'z' WHERE id = 3;
ROLLBACK TO s;
SELECT ls_test_hold('state');
SELECT ls_test_row_latched('ls_hold_t', ctid) FROM ls_hold_t WHERE id = 3;
-- the row is writable, and the commit check finds nothing held
UPDATE ls_hold_t SET v = 'z' WHERE id = 3;
COMMIT;
-- caught by PL/pgSQL (a subtransaction) while the transaction goes on
DO $$
BEGIN
    PERFORM ls_test_hold('fail-in-epoch');
    PERFORM id FROM ls_hold_t WHERE id = 5 FOR SHARE;
EXCEPTION WHEN internal_error THEN
    RAISE NOTICE 'caught: %', SQLERRM;
END $$;
SELECT ls_test_hold('state');
SELECT id, v FROM ls_hold_t WHERE id <= 4 ORDER BY id;
SELECT bool_or(ls_test_row_latched('ls_hold_t', ctid)) FROM ls_hold_t;
-- Pack tries a row's latch (skipping a busy row), then stores the row in
-- the cold tree and logs it, both of which may throw: the latch is held
-- like ls_row_lock's (ls_row_trylock), so the abort gives it back.
CREATE FUNCTION ls_test_pack(regclass, bool) RETURNS bigint
    AS 'leanstore', 'leanstore_test_pack' LANGUAGE C STRICT;
CREATE TABLE ls_hold_p (id int PRIMARY KEY, v text) USING leanstore;
-- regress-cold's pack worker packs committed rows at once: commit one more
-- row until this backend's own pass (failing at its first latch) meets one
CREATE PROCEDURE ls_hold_pack_fail() LANGUAGE plpgsql AS $$
DECLARE
    i int := 0;
BEGIN
    LOOP
        i := i + 1;
        INSERT INTO ls_hold_p VALUES (i, 'p' || i);
        COMMIT;
        BEGIN
            PERFORM ls_test_pack('ls_hold_p', true);
        EXCEPTION WHEN internal_error THEN
            RAISE NOTICE 'caught: %', SQLERRM;
            RETURN;
        END;
        IF i >= 1000 THEN
            RAISE EXCEPTION 'pack met no hot row in % tries', i;
        END IF;
    END LOOP;
END $$;
CALL ls_hold_pack_fail();
SELECT ls_test_hold('state');
SELECT bool_or(ls_test_row_latched('ls_hold_p', ctid)) FROM ls_hold_p;
-- the row pack failed on can be packed (a pass starts after the batch the
-- failed one took: two passes wrap around; regress-cold's worker may be
-- first) and written
SELECT ls_test_pack('ls_hold_p', false) + ls_test_pack('ls_hold_p', false) >= 0 AS passes;
SELECT hot_rows FROM leanstore_table_stats('ls_hold_p');
-- (a latch left behind would make the update spin for ever: not tried then)
UPDATE ls_hold_p SET v = 'w'
 WHERE NOT EXISTS (SELECT FROM ls_hold_p q WHERE ls_test_row_latched('ls_hold_p', q.ctid));
SELECT count(*) > 0 AND count(*) = count(*) FILTER (WHERE v = 'w') AS all_written FROM ls_hold_p;
SELECT leanstore_verify('ls_hold_p');
DROP PROCEDURE ls_hold_pack_fail();
DROP FUNCTION ls_test_pack(regclass, bool);
DROP TABLE ls_hold_p;
-- VACUUM forgets dead rowids in bounded epochs and serves a cancel between
-- them: a cancel that arrives inside the first epoch (interrupts held
-- there) stops it right after that epoch; the rowids not reached stay DEAD
-- until the next VACUUM.  (Deletes migrate the rows, also under
-- regress-cold, so that VACUUM has rowids to forget.)
CREATE FUNCTION ls_test_pause(text) RETURNS bigint
    AS 'leanstore', 'leanstore_test_pause' LANGUAGE C STRICT;
SET leanstore.cold_writes = off;
CREATE TABLE ls_hold_v (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO ls_hold_v SELECT g, 'v' FROM generate_series(1, 2000) g;
DELETE FROM ls_hold_v WHERE id > 1000;
SELECT ls_test_pause('cancel:vacuum-forget') > 0 AS armed;
VACUUM ls_hold_v;
SELECT dead_rowids BETWEEN 1 AND 999 AS some_left_dead FROM leanstore_table_stats('ls_hold_v');
SELECT ls_test_hold('state');
VACUUM ls_hold_v;
SELECT dead_rowids FROM leanstore_table_stats('ls_hold_v');
SELECT count(*), sum(id) FROM ls_hold_v;
SELECT leanstore_verify('ls_hold_v');
RESET leanstore.cold_writes;
DROP TABLE ls_hold_v;
DROP FUNCTION ls_test_pause(text);
-- VACUUM removes the cold image of a row whose insert aborted only after
-- its rowid got a DEAD slot, which needs hot memory.  When the tier stays
-- full (armed here), VACUUM does not fail ("hot tier is full" before) and
-- leaves no rowid with neither image nor slot: the images stay for a later
-- VACUUM, and their xid holds relfrozenxid back even under FREEZE.
CREATE TABLE ls_hold_d (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO ls_hold_d VALUES (0, 'kept');
BEGIN;
SET LOCAL leanstore.bulk_load_rows = 5;
INSERT INTO ls_hold_d SELECT g, 'v' || g FROM generate_series(1, 200) g;
SELECT txid_current() AS ls_hold_load_xid \gset
ROLLBACK;
SELECT ls_test_hold('dead-slot-full');
VACUUM (FREEZE) ls_hold_d;
SELECT ls_test_hold('disarm');
SELECT relfrozenxid::text::bigint <= :ls_hold_load_xid AS images_hold_relfrozenxid
FROM pg_class WHERE relname = 'ls_hold_d';
SELECT count(*), sum(id) FROM ls_hold_d;
SELECT leanstore_verify('ls_hold_d');
-- the log still names those xids (replay decides such records by clog):
-- two checkpoints move it past them, and then relfrozenxid may pass them
SELECT leanstore_checkpoint() AND leanstore_checkpoint() AS log_moved;
VACUUM (FREEZE) ls_hold_d;
SELECT relfrozenxid::text::bigint > :ls_hold_load_xid AS images_removed
FROM pg_class WHERE relname = 'ls_hold_d';
SET enable_seqscan = off;
SELECT count(*), sum(id) FROM ls_hold_d WHERE id >= 0;
RESET enable_seqscan;
SELECT leanstore_verify('ls_hold_d');
DROP TABLE ls_hold_d;
-- INSERT ... ON CONFLICT with a full hot tier (forced here): the
-- speculative inserts of new keys go into the cold tree with their token,
-- conflicting keys are updated (their new versions spill there too)
CREATE TABLE ls_hold_u (id int PRIMARY KEY, n int) USING leanstore;
INSERT INTO ls_hold_u SELECT g, 0 FROM generate_series(1, 10) g;
SELECT cold_rows AS ls_hold_u_cold FROM leanstore_table_stats('ls_hold_u') \gset
SELECT ls_test_hold('tier-full');
INSERT INTO ls_hold_u SELECT g, 1 FROM generate_series(5, 30) g
  ON CONFLICT (id) DO UPDATE SET n = ls_hold_u.n + 1;
INSERT INTO ls_hold_u SELECT g, 5 FROM generate_series(25, 40) g ON CONFLICT DO NOTHING;
SELECT ls_test_hold('disarm');
SELECT cold_rows - :ls_hold_u_cold >= 30 AS new_keys_cold FROM leanstore_table_stats('ls_hold_u');
SELECT count(*), sum(n), count(DISTINCT id) FROM ls_hold_u;
SET enable_seqscan = off;
SELECT count(*), sum(n) FROM ls_hold_u WHERE id > 0;
RESET enable_seqscan;
VACUUM ls_hold_u;
SELECT leanstore_verify('ls_hold_u');
DROP TABLE ls_hold_u;
DROP TABLE ls_hold_t;
DROP FUNCTION ls_test_row_latched(regclass, tid);
DROP FUNCTION ls_test_hold(text);
