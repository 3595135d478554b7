-- Sequential scans build the cold rows they are sure of (frozen ones, and
-- those of an inserter the scan already found visible) straight from the
-- tree's leaves into their batch; every other row, and index scans, go
-- through stand-ins.  Both ways must give the same rows with the same system
-- columns.  Loads past leanstore.bulk_load_rows go to the cold tree at once
-- (not frozen: clog decides their inserter until VACUUM freezes them).
SET leanstore.bulk_load_rows = 1;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE cs_t (id int PRIMARY KEY, pad text) USING leanstore;
INSERT INTO cs_t SELECT g, repeat('x', g % 50) FROM generate_series(1, 2000) g;
-- rows wider than a tree value (continued in chunks), another inserter
INSERT INTO cs_t SELECT g, repeat('y', 3000 + g) FROM generate_series(2001, 2010) g;
-- a third inserter, nulls
INSERT INTO cs_t SELECT g, NULL FROM generate_series(2011, 2500) g;

CREATE FUNCTION cs_compare() RETURNS TABLE (what text, n bigint)
LANGUAGE plpgsql AS $$
BEGIN
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_bitmapscan = off;
  SET LOCAL enable_seqscan = on;
  CREATE TEMP TABLE cs_seq AS
    SELECT id, pad, xmin::text AS xn, xmax::text AS xx, cmin::text AS cn, ctid::text AS tid FROM cs_t;
  SET LOCAL enable_indexscan = on;
  SET LOCAL enable_seqscan = off;
  CREATE TEMP TABLE cs_idx AS
    SELECT id, pad, xmin::text AS xn, xmax::text AS xx, cmin::text AS cn, ctid::text AS tid FROM cs_t
    WHERE id > 0;
  RETURN QUERY SELECT 'rows', count(*) FROM cs_seq;
  RETURN QUERY SELECT 'inserters', count(DISTINCT xn) FROM cs_seq;
  RETURN QUERY SELECT 'xmax set', count(*) FROM cs_seq WHERE xx <> '0';
  RETURN QUERY SELECT 'cmin set', count(*) FROM cs_seq WHERE cn <> '0';
  RETURN QUERY SELECT 'seq only', count(*) FROM (SELECT * FROM cs_seq EXCEPT ALL SELECT * FROM cs_idx) d;
  RETURN QUERY SELECT 'index only', count(*) FROM (SELECT * FROM cs_idx EXCEPT ALL SELECT * FROM cs_seq) d;
  DROP TABLE cs_seq, cs_idx;
END $$;

SET enable_indexscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM cs_t;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT * FROM cs_compare();

-- rows of this transaction's own load: visible to its later commands only
BEGIN;
INSERT INTO cs_t SELECT g, 'mine' FROM generate_series(2501, 3000) g;
SELECT count(*), count(*) FILTER (WHERE pad = 'mine') AS mine FROM cs_t;
-- the rows the command inserts are not read by its own scan
INSERT INTO cs_t SELECT id + 10000, pad FROM cs_t WHERE pad = 'mine' OR id <= 500;
SELECT count(*), count(*) FILTER (WHERE pad = 'mine') AS mine FROM cs_t;
SELECT * FROM cs_compare();
ROLLBACK;
-- an aborted load: invisible
SELECT count(*), max(id) FROM cs_t;

-- rows deleted in the cold tier (an xmax in the image): stand-ins
BEGIN;
SET LOCAL leanstore.cold_writes = always;
DELETE FROM cs_t WHERE id % 10 = 0 AND id <= 2200;
SELECT count(*), sum(id) FROM cs_t;
ROLLBACK;
SELECT count(*), sum(id) FROM cs_t;

-- frozen rows
VACUUM (FREEZE) cs_t;
SELECT * FROM cs_compare();
SELECT count(*), sum(id), sum(length(pad)) FROM cs_t;

DROP FUNCTION cs_compare();
DROP TABLE cs_t;

-- wide cold rows, every 50th with an xmax in its image (a delete rolled
-- back): a batch whose first row is such a stand-in, followed by rows built
-- in place that fill the batch buffer, must still make progress (it came
-- back to the same row for ever)
SET leanstore.bulk_load_rows = 10;
CREATE TABLE cs_w (id int, pad text) USING leanstore;
INSERT INTO cs_w SELECT g, repeat(chr(97 + g % 26), 600) FROM generate_series(1, 5000) g;
BEGIN;
SET LOCAL leanstore.cold_writes = always;
DELETE FROM cs_w WHERE id % 50 = 1;
ROLLBACK;
SELECT count(*), sum(id), sum(length(pad)) FROM cs_w;
SELECT count(*) FROM cs_w WHERE id % 50 = 1;
RESET leanstore.bulk_load_rows;
DROP TABLE cs_w;
