-- ls_blocks: virtual blocks fill as heap pages do, so insert-only tables get
-- heap's ctids (INSERT, INSERT ... SELECT, COPY; varied widths, NULLs,
-- fillfactor, rows of one per page, TOASTed values), and everything that
-- hashes or counts blocks agrees with heap: TABLESAMPLE, TID range scans,
-- BRIN summaries, relation sizes, planner estimates, heap_blks_* statistics.
-- Row widths grow (or stay) in insertion order: heap's free space map may
-- put a row into an earlier page's leftover space when that is larger than
-- the row, which never happens then (leanstore never goes back).
SET max_parallel_workers_per_gather = 0;
SET synchronize_seqscans = off;

-- a row's place: block, offset and the block's row count and id range
CREATE FUNCTION blk_layout(r regclass) RETURNS TABLE (blk int, nrows bigint, first_off int, last_off int, ids text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format(
    'SELECT (ctid::text::point)[0]::int, count(*), min((ctid::text::point)[1])::int,
            max((ctid::text::point)[1])::int, min(id) || ''..'' || max(id)
       FROM %s GROUP BY 1 ORDER BY 1', r);
END $$;
-- every (ctid, id) pair at once
CREATE FUNCTION blk_digest(r regclass) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE d text;
BEGIN
  EXECUTE format('SELECT md5(string_agg(ctid::text || ''='' || id, '','' ORDER BY id)) FROM %s', r) INTO d;
  RETURN d;
END $$;

-- narrow fixed-width rows, one INSERT ... SELECT: 226 rows a page
CREATE TABLE blk_narrow (id int, v int) USING leanstore;
INSERT INTO blk_narrow SELECT g, g FROM generate_series(1, 1000) g;
SELECT * FROM blk_layout('blk_narrow');
SELECT blk_digest('blk_narrow');

-- one row per INSERT, NULLs in some rows (a null bitmap makes the header wider)
CREATE TABLE blk_nulls (id int, a int, b text, c bigint) USING leanstore;
DO $$
BEGIN
  FOR i IN 1 .. 600 LOOP
    INSERT INTO blk_nulls VALUES (i, CASE WHEN i % 3 = 0 THEN NULL ELSE i END,
                                  CASE WHEN i % 5 = 0 THEN NULL ELSE 'row ' || i END, i);
  END LOOP;
END $$;
SELECT * FROM blk_layout('blk_nulls');
SELECT blk_digest('blk_nulls');

-- growing widths, fillfactor 100, 50 and 10
CREATE TABLE blk_ff100 (id int, t text) USING leanstore;
CREATE TABLE blk_ff50 (id int, t text) USING leanstore WITH (fillfactor = 50);
CREATE TABLE blk_ff10 (id int, t text) USING leanstore WITH (fillfactor = 10);
INSERT INTO blk_ff100 SELECT g, repeat('x', g / 3) FROM generate_series(1, 1500) g;
INSERT INTO blk_ff50 SELECT g, repeat('x', g / 3) FROM generate_series(1, 1500) g;
INSERT INTO blk_ff10 SELECT g, repeat('y', g / 4) FROM generate_series(1, 600) g;
SELECT count(*) AS blocks, sum(nrows), min(nrows), max(nrows) FROM blk_layout('blk_ff100');
SELECT blk_digest('blk_ff100');
SELECT count(*) AS blocks, sum(nrows), min(nrows), max(nrows) FROM blk_layout('blk_ff50');
SELECT blk_digest('blk_ff50');
SELECT * FROM blk_layout('blk_ff10') WHERE blk < 12 OR blk > (SELECT max(blk) - 3 FROM blk_layout('blk_ff10'));
SELECT blk_digest('blk_ff10');

-- rows that fill a page alone: wide plain values, and heap's nearly-empty
-- rule at fillfactor 10 (a 700-byte row wants a nearly empty page)
CREATE TABLE blk_wide (id int, t text) USING leanstore;
ALTER TABLE blk_wide ALTER COLUMN t SET STORAGE PLAIN;
INSERT INTO blk_wide SELECT g, repeat('w', 3000 + g) FROM generate_series(1, 12) g;
INSERT INTO blk_wide SELECT g, repeat('w', 4500 + g) FROM generate_series(13, 20) g;
SELECT * FROM blk_layout('blk_wide');
CREATE TABLE blk_near (id int, t text) USING leanstore WITH (fillfactor = 10);
INSERT INTO blk_near SELECT g, repeat('n', 100) FROM generate_series(1, 20) g;
INSERT INTO blk_near SELECT g, repeat('n', 700) FROM generate_series(21, 26) g;
SELECT * FROM blk_layout('blk_near');

-- TOASTed values: compressed inline and moved out of line (toast pointers)
CREATE TABLE blk_toast (id int, t text) USING leanstore;
INSERT INTO blk_toast SELECT g, (SELECT string_agg(md5(g::text || '/' || k), '') FROM generate_series(1, 100) k)
  FROM generate_series(1, 200) g;
INSERT INTO blk_toast SELECT g, repeat('z', 20000) FROM generate_series(201, 400) g;
SELECT count(*) FILTER (WHERE pg_column_size(t) = 3200) AS out_of_line,
       count(*) FILTER (WHERE pg_column_size(t) < 2000) AS compressed_inline
  FROM blk_toast;
SELECT * FROM blk_layout('blk_toast');
SELECT blk_digest('blk_toast');

-- COPY (multi-insert), growing widths
CREATE TABLE blk_copy (id int, t text, n numeric) USING leanstore;
COPY blk_copy FROM stdin;
1	a	1
2	bb	22
3	ccc	333
4	dddd	\N
5	eeeee	55555
\.
INSERT INTO blk_copy SELECT g, repeat('c', g / 10), g FROM generate_series(6, 3000) g;
SELECT '/tmp/ls_blocks_copy_' || pg_backend_pid() || '.data' AS copyfile \gset
SELECT format('cat %s && rm -f %s', :'copyfile', :'copyfile') AS copyprog \gset
COPY (SELECT id + 3000, t || repeat('c', 300), n FROM blk_copy ORDER BY id) TO :'copyfile';
COPY blk_copy FROM PROGRAM :'copyprog';
SELECT count(*) AS blocks, sum(nrows), min(nrows), max(nrows) FROM blk_layout('blk_copy');
SELECT blk_digest('blk_copy');

-- sizes: pg_class after ANALYZE and after VACUUM, planner estimates
ANALYZE blk_narrow, blk_ff50;
SELECT relname, relpages, reltuples FROM pg_class WHERE relname IN ('blk_narrow', 'blk_ff50') ORDER BY 1;
VACUUM blk_ff10, blk_copy;
SELECT relname, relpages, reltuples FROM pg_class WHERE relname IN ('blk_ff10', 'blk_copy') ORDER BY 1;
EXPLAIN SELECT * FROM blk_ff10;
EXPLAIN SELECT * FROM blk_copy;
EXPLAIN SELECT * FROM blk_ff100;

-- TABLESAMPLE: both methods hash block numbers (and offsets)
SELECT id FROM blk_ff10 TABLESAMPLE SYSTEM (5) REPEATABLE (0) ORDER BY id;
SELECT id FROM blk_ff10 TABLESAMPLE BERNOULLI (2) REPEATABLE (0) ORDER BY id;
SELECT count(*), sum(id) FROM blk_ff100 TABLESAMPLE SYSTEM (30) REPEATABLE (7);
SELECT count(*), sum(id) FROM blk_ff100 TABLESAMPLE BERNOULLI (30) REPEATABLE (7);
SELECT count(*), sum(id) FROM blk_narrow TABLESAMPLE BERNOULLI (10) REPEATABLE (3);

-- TID range scans
EXPLAIN (COSTS OFF) SELECT ctid, id FROM blk_ff10 WHERE ctid >= '(2,2)' AND ctid < '(4,2)';
SELECT ctid, id FROM blk_ff10 WHERE ctid >= '(2,2)' AND ctid < '(4,2)';
SELECT ctid, id FROM blk_narrow WHERE ctid > '(3,220)' ORDER BY ctid;
SELECT count(*), min(id), max(id) FROM blk_ff100 WHERE ctid < '(5,0)';
SELECT ctid, id FROM blk_wide WHERE ctid BETWEEN '(6,1)' AND '(9,1)';

-- BRIN: ranges of 2 pages, summarized, then rows appended
CREATE INDEX blk_ff10_brin ON blk_ff10 USING brin (id) WITH (pages_per_range = 2);
SELECT brin_summarize_new_values('blk_ff10_brin');
INSERT INTO blk_ff10 SELECT g, repeat('y', 150) FROM generate_series(601, 700) g;
SELECT brin_summarize_new_values('blk_ff10_brin');
SELECT brin_summarize_new_values('blk_ff10_brin');
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM blk_ff10 WHERE id BETWEEN 100 AND 110;
SELECT count(*) FROM blk_ff10 WHERE id BETWEEN 100 AND 110;
RESET enable_seqscan;

-- heap_blks_*: one read per block a seq scan or TID range scan passes,
-- and per block an index scan moves to
CREATE INDEX blk_narrow_id ON blk_narrow (id);
SELECT pg_stat_force_next_flush();
SELECT heap_blks_read + heap_blks_hit AS before FROM pg_statio_user_tables WHERE relname = 'blk_narrow' \gset
SELECT count(*) FROM blk_narrow;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT heap_blks_read + heap_blks_hit - :before AS seqscan_blocks FROM pg_statio_user_tables WHERE relname = 'blk_narrow';
SELECT heap_blks_read + heap_blks_hit AS before FROM pg_statio_user_tables WHERE relname = 'blk_narrow' \gset
SELECT count(*) FROM blk_narrow WHERE ctid >= '(1,100)' AND ctid < '(3,5)';
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT heap_blks_read + heap_blks_hit - :before AS tidrange_blocks FROM pg_statio_user_tables WHERE relname = 'blk_narrow';
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT heap_blks_read + heap_blks_hit AS before FROM pg_statio_user_tables WHERE relname = 'blk_narrow' \gset
SELECT sum(v) FROM blk_narrow WHERE id BETWEEN 200 AND 240;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT heap_blks_read + heap_blks_hit - :before AS indexscan_blocks FROM pg_statio_user_tables WHERE relname = 'blk_narrow';
RESET enable_seqscan;
RESET enable_bitmapscan;

-- VACUUM FULL and CLUSTER rewrite like heap's rewrite (fillfactor, no
-- nearly-empty exception), here in id order
DELETE FROM blk_ff50 WHERE id % 4 <> 0;
VACUUM FULL blk_ff50;
SELECT count(*) AS blocks, sum(nrows), min(nrows), max(nrows) FROM blk_layout('blk_ff50');
SELECT blk_digest('blk_ff50');
CREATE INDEX blk_near_id ON blk_near (id DESC);
CLUSTER blk_near USING blk_near_id;
SELECT * FROM blk_layout('blk_near');

DROP TABLE blk_narrow, blk_nulls, blk_ff100, blk_ff50, blk_ff10, blk_wide, blk_near, blk_toast, blk_copy;
DROP FUNCTION blk_layout(regclass), blk_digest(regclass);
