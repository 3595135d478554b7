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
INSERT INTO seg_ff10 SELECT g, repeat('x', 380) FROM generate_series(1, 135000) g;
SELECT count(DISTINCT (ctid::text::point)[0]) AS blocks,
       max((ctid::text::point)[0]) AS last_block FROM seg_ff10;
ANALYZE seg_ff10;
SELECT relpages, reltuples FROM pg_class WHERE relname = 'seg_ff10';
CREATE INDEX seg_ff10_a ON seg_ff10 (a);
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
DROP TABLE seg_ff10;
DROP FUNCTION seg_lossy(text);
