-- ls_segments: PostgreSQL 15 prefetches a table's main-fork blocks through
-- md.c with the table AM's block numbers (ANALYZE's block sampler, bitmap
-- heap scans), and md.c opens a block's segment only when every segment
-- before it is whole.  leanstore's block numbers are virtual (they fill as
-- heap's pages do), so a low fillfactor gives far more of them than its
-- tree has pages, and hot rows are not in the file at all.  These scans
-- must still work past the first 1 GB segment (131072 blocks).
SET max_parallel_workers_per_gather = 0;

-- fillfactor 10 and 412-byte rows: one row a block, 135000 blocks
CREATE TABLE seg_ff10 (a int, b text) USING leanstore WITH (fillfactor = 10);
CREATE INDEX seg_ff10_a ON seg_ff10 (a);
INSERT INTO seg_ff10 SELECT g, repeat('x', 380) FROM generate_series(1, 10) g;
-- A cursor's bitmap is built at its first FETCH, long after the scan
-- began; it holds the rows inserted in between, and prefetching jumps
-- from block 1 to block 134990.  The inserts themselves make segment 1.
BEGIN;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_indexscan = off;
DECLARE seg_cur CURSOR FOR SELECT a FROM seg_ff10 WHERE a < 3 OR a > 134990;
INSERT INTO seg_ff10 SELECT g, repeat('x', 380) FROM generate_series(11, 135000) g;
SELECT (pg_stat_file(pg_relation_filepath('seg_ff10') || '.1', true)).size IS NOT NULL
  AS segment_1_made_by_inserts;
FETCH ALL seg_cur;
COMMIT;
SELECT count(DISTINCT (ctid::text::point)[0]) AS blocks,
       max((ctid::text::point)[0]) AS last_block FROM seg_ff10;
ANALYZE seg_ff10;
SELECT relpages, reltuples FROM pg_class WHERE relname = 'seg_ff10';
SET enable_seqscan = off;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT count(*), min(a), max(a) FROM seg_ff10 WHERE a > 134000;
SELECT count(*), min(a), max(a) FROM seg_ff10 WHERE a > 134000;

-- rows inserted later reach further: a bitmap scan of them, and of all
SELECT count(*), min(a), max(a), sum(length(b)) FROM seg_ff10 WHERE a > 120000;
-- a lossy bitmap (every rowid of a block a candidate): the rows found
-- through it are the rows the sequential scan finds
CREATE FUNCTION seg_lossy(q text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF l ~ 'lossy=[1-9]' THEN RETURN true; END IF;
  END LOOP;
  RETURN false;
END $$;
SET work_mem = '64kB';
SELECT seg_lossy('SELECT count(*) FROM seg_ff10 WHERE a > 100');
SELECT count(*), min(a), max(a), sum(length(b)) FROM seg_ff10 WHERE a > 100 AND a % 7 <> 0;
RESET work_mem;
SET enable_bitmapscan = off;
SET enable_seqscan = on;
SELECT count(*), min(a), max(a), sum(length(b)) FROM seg_ff10 WHERE a > 100 AND a % 7 <> 0;
RESET enable_bitmapscan;
SET enable_seqscan = off;
INSERT INTO seg_ff10 SELECT g, repeat('y', 380) FROM generate_series(135001, 140000) g;
SELECT count(*), min(a), max(a) FROM seg_ff10 WHERE a > 139000;
-- a rescan per outer row (a correlated subquery) with a new bitmap each time
EXPLAIN (COSTS OFF) SELECT o.k, (SELECT count(*) FROM seg_ff10 s WHERE s.a > o.k)
  FROM (VALUES (131000), (135500), (139990)) o(k);
SELECT o.k, (SELECT count(*) FROM seg_ff10 s WHERE s.a > o.k)
  FROM (VALUES (131000), (135500), (139990)) o(k);
RESET enable_seqscan;
RESET enable_indexscan;
ANALYZE seg_ff10;
SELECT relpages, reltuples FROM pg_class WHERE relname = 'seg_ff10';
SELECT leanstore_verify('seg_ff10');
-- The same through COPY (rows go to the cold tree in batches), in a
-- table whose cursor began on an empty table.
DO $$ BEGIN EXECUTE format('COPY (SELECT a, b FROM seg_ff10 WHERE a <= 135000) TO %L',
  current_setting('data_directory') || '/ls_segments.copy'); END $$;
CREATE TABLE seg_copy (a int, b text) USING leanstore WITH (fillfactor = 10);
CREATE INDEX seg_copy_a ON seg_copy (a);
BEGIN;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_indexscan = off;
DECLARE seg_cur CURSOR FOR SELECT a FROM seg_copy WHERE a < 3 OR a > 134990;
DO $$ BEGIN EXECUTE format('COPY seg_copy FROM %L',
  current_setting('data_directory') || '/ls_segments.copy'); END $$;
SELECT (pg_stat_file(pg_relation_filepath('seg_copy') || '.1', true)).size IS NOT NULL
  AS segment_1_made_by_copy;
FETCH ALL seg_cur;
COMMIT;
SELECT count(*), max((ctid::text::point)[0]) AS last_block FROM seg_copy;
SELECT leanstore_verify('seg_copy');
DROP TABLE seg_copy;
DROP TABLE seg_ff10;
DROP FUNCTION seg_lossy(text);
