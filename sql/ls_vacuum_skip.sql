-- ls_vacuum_skip: VACUUM skips runs of all-visible blocks (as heap skips
-- all-visible pages), yet still removes what writes left in the blocks
-- they touched (each write clears its block's bit first), keeps
-- relfrozenxid where a skipped block may hold unfrozen rows, and reads
-- everything when it must freeze (FREEZE, DISABLE_PAGE_SKIPPING).
-- (Not in regress-cold: its eager pack collects deleted rows and old
-- versions, and packs updated rows, whenever it comes by, so what is left
-- for VACUUM to count depends on timing there.)
SET leanstore.cold_writes = off;
CREATE TABLE vs (id int PRIMARY KEY, v int) USING leanstore;
INSERT INTO vs SELECT g, g FROM generate_series(1, 100000) g;
VACUUM vs;
SELECT relallvisible AS marked, relpages FROM pg_class WHERE relname = 'vs';
-- a delete in one block, an update in another (their bits go)
DELETE FROM vs WHERE id BETWEEN 50001 AND 50010;
UPDATE vs SET v = -v WHERE id = 70000;
SELECT relfrozenxid AS frozen_before FROM pg_class WHERE relname = 'vs' \gset
VACUUM (VERBOSE) vs;
-- the deleted rows are gone from both tiers and from the index, the
-- updated row's old version too; the row estimate is the old density
SELECT dead_rowids, hot_versions - hot_rows AS old_versions
  FROM leanstore_table_stats('vs');
SELECT count(*), sum(v) FROM vs;
SET enable_seqscan = off;
SELECT count(*), sum(v) FROM vs WHERE id > 0;
RESET enable_seqscan;
SELECT reltuples BETWEEN 99000 AND 101000 AS estimated, relallvisible = relpages AS all_marked,
       relfrozenxid = :'frozen_before'::xid AS relfrozenxid_kept
  FROM pg_class WHERE relname = 'vs';
-- nothing changed since: every block is skipped
VACUUM (VERBOSE) vs;
-- DISABLE_PAGE_SKIPPING and FREEZE read every block; FREEZE advances
-- relfrozenxid past every xid the table holds
VACUUM (VERBOSE, DISABLE_PAGE_SKIPPING) vs;
-- the log still names those xids (replay decides such records by clog):
-- two checkpoints move it past them, and then relfrozenxid may pass them
SELECT leanstore_checkpoint() AND leanstore_checkpoint() AS log_moved;
VACUUM (FREEZE, VERBOSE) vs;
SELECT age(relfrozenxid) < age(:'frozen_before'::xid) AS relfrozenxid_advanced,
       reltuples AS rows FROM pg_class WHERE relname = 'vs';
SELECT leanstore_verify('vs');
DROP TABLE vs;
-- COPY FREEZE marks the blocks it filled all-visible, as heap's does: an
-- index-only scan right after it reads no row, and VACUUM skips them
BEGIN;
CREATE TABLE vf (id int PRIMARY KEY, v int DEFAULT 7) USING leanstore;
COPY vf (id) FROM PROGRAM 'seq 1 30000' (FREEZE);
COMMIT;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM vf WHERE id > 0;
VACUUM (VERBOSE) vf;
-- not when something wrote to the loaded rows in the meantime (a trigger)
CREATE FUNCTION vf_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE vf SET v = 8 WHERE id = NEW.id - 5; RETURN NULL; END $$;
BEGIN;
TRUNCATE vf;
CREATE TRIGGER vf_touch AFTER INSERT ON vf FOR EACH ROW WHEN (NEW.id % 10000 = 0) EXECUTE FUNCTION vf_touch();
COPY vf (id) FROM PROGRAM 'seq 1 30000' (FREEZE);
COMMIT;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM vf WHERE id > 0;
SELECT count(*), sum(v) FROM vf WHERE id > 0;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT leanstore_verify('vf');
-- nor when a trigger inserts into the loaded table (a row not frozen)
DROP TRIGGER vf_touch ON vf;
CREATE FUNCTION vf_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO vf VALUES (NEW.id + 100000, 9); RETURN NULL; END $$;
BEGIN;
TRUNCATE vf;
CREATE TRIGGER vf_add AFTER INSERT ON vf FOR EACH ROW WHEN (NEW.id = 30000) EXECUTE FUNCTION vf_add();
COPY vf (id) FROM PROGRAM 'seq 1 30000' (FREEZE);
COMMIT;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM vf WHERE id > 0;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM vf WHERE id > 100000;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE vf;
DROP FUNCTION vf_touch();
DROP FUNCTION vf_add();
RESET leanstore.cold_writes;
