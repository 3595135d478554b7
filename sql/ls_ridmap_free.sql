-- ls_ridmap_free: the hot tier's RID-map gives its memory back when rows
-- leave it.  Once pack has moved a table's rows to the cold tier (and
-- VACUUM has forgotten its DEAD rowids), the chunks and nodes that mapped
-- them are freed: the table's hot bytes fall back to those of a table
-- whose map is empty (its inner nodes: the root and one node per level
-- above the rowids used), and so does the tier's used memory.
-- It needs rows to go cold at once (regress-cold: leanstore.pack_eager).
SELECT NOT current_setting('leanstore.pack_eager')::bool AS hot \gset
\if :hot
\echo 'skipped: rows stay hot in this configuration'
\quit
\endif
SET leanstore.bulk_load_rows = 0;	-- every insert goes through the hot tier
SET max_parallel_workers_per_gather = 0;
-- the reference: a map that had one row, packed (only inner nodes left)
CREATE TABLE rf_ref (id int, pad text) USING leanstore;
INSERT INTO rf_ref VALUES (1, 'x');
SELECT wait_packed('rf_ref');
CREATE TABLE rf (id int, pad text) USING leanstore;
CREATE INDEX rf_id ON rf (id);
CREATE TEMP TABLE rf_mem (step text, used bigint) USING heap;
INSERT INTO rf_mem SELECT 'before', used_bytes FROM leanstore_stats();
-- 30000 narrow rows: about 500 virtual blocks, 150,000 rowids
INSERT INTO rf SELECT g, repeat('p', 40) FROM generate_series(1, 30000) g;
INSERT INTO rf_mem SELECT 'inserted', used_bytes FROM leanstore_stats();
SELECT wait_packed('rf');
INSERT INTO rf_mem SELECT 'packed', used_bytes FROM leanstore_stats();
SELECT count(*), sum(id) FROM rf;
SELECT s.hot_bytes = r.hot_bytes AS map_back_to_empty, r.hot_bytes > 0 AS root_kept
FROM leanstore_table_stats('rf') s, leanstore_table_stats('rf_ref') r;
-- the tier's used bytes came back (retired memory still waiting for its
-- epoch may remain: less than a tenth of what the rows took)
SELECT p.used - b.used < (i.used - b.used) / 10 AS tier_memory_back
FROM rf_mem b, rf_mem i, rf_mem p
WHERE b.step = 'before' AND i.step = 'inserted' AND p.step = 'packed';
SELECT leanstore_verify('rf');

-- updates bring rows back (migrated: new chunks) and pack takes them
-- again; deleted rows stay hot until VACUUM; an aborted insert leaves DEAD
-- rowids, which keep their chunks until VACUUM forgets them
UPDATE rf SET pad = 'u' WHERE id % 100 = 0;
SELECT wait_packed('rf');
SELECT s.hot_bytes = r.hot_bytes AS map_back_to_empty
FROM leanstore_table_stats('rf') s, leanstore_table_stats('rf_ref') r;
DELETE FROM rf WHERE id % 100 = 50;
BEGIN;
INSERT INTO rf SELECT g, 'a' FROM generate_series(100001, 100500) g;
ROLLBACK;
-- wait until pack took the updated rows: only the deleted rows (hot, or
-- DEAD once pack's collector of rows it cannot pack got to them) and the
-- aborted rowids (DEAD) are left.  (hot_rows <= 300 alone was reached
-- while an updated row was still hot when the collector had turned a
-- deleted one DEAD first: 801 below.)
DO $$
DECLARE
  t0 timestamptz := clock_timestamp();
  h bigint;
  d bigint;
BEGIN
  LOOP
    SELECT hot_rows, dead_rowids INTO h, d FROM leanstore_table_stats('rf');
    EXIT WHEN h <= 300 AND h + d <= 800;
    IF clock_timestamp() - t0 > interval '120 s' THEN
      RAISE EXCEPTION 'rf: % hot rows and % DEAD rowids after 120 s', h, d;
    END IF;
    PERFORM pg_sleep(0.02);
  END LOOP;
END $$;
-- the 300 deleted rows stay hot until VACUUM, unless pack's collector of
-- rows it cannot pack already turned some DEAD (timing); the 500 aborted
-- rowids are DEAD
SELECT hot_rows <= 300 AS deleted_hot_or_dead, hot_rows + dead_rowids AS hot_or_dead
FROM leanstore_table_stats('rf');
SELECT s.hot_bytes > r.hot_bytes AS chunks_kept
FROM leanstore_table_stats('rf') s, leanstore_table_stats('rf_ref') r;
VACUUM rf;
SELECT hot_rows, dead_rowids FROM leanstore_table_stats('rf');
SELECT s.hot_bytes = r.hot_bytes AS map_back_to_empty
FROM leanstore_table_stats('rf') s, leanstore_table_stats('rf_ref') r;
SELECT count(*), sum(id), count(*) FILTER (WHERE pad = 'u') AS updated FROM rf;
SELECT leanstore_verify('rf');
DROP TABLE rf, rf_ref, rf_mem;
