-- ls_scans: every scan type on a leanstore table, with EXPLAIN proving the plan.
-- Row order of the table itself differs from heap, so every result is
-- ordered or aggregated; sampled and TID-ranged results are checked against
-- properties that hold for any physical layout.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE scan_t (id int, k int, v text) USING leanstore;
INSERT INTO scan_t SELECT g, (g * 7919) % 20000, 'val' || g FROM generate_series(1, 20000) g;
CREATE UNIQUE INDEX scan_t_id ON scan_t (id);
CREATE INDEX scan_t_k ON scan_t (k);
ANALYZE scan_t;

-- sequential scan
EXPLAIN (COSTS OFF) SELECT count(*) FROM scan_t WHERE v LIKE '%77';
SELECT count(*) FROM scan_t WHERE v LIKE '%77';
SELECT count(*), sum(id), sum(k), min(v), max(v) FROM scan_t;

-- index scan (forward and backward)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM scan_t WHERE id BETWEEN 10 AND 15 ORDER BY id;
SELECT * FROM scan_t WHERE id BETWEEN 10 AND 15 ORDER BY id;
EXPLAIN (COSTS OFF) SELECT * FROM scan_t WHERE id > 19990 ORDER BY id DESC;
SELECT * FROM scan_t WHERE id > 19990 ORDER BY id DESC;
EXPLAIN (COSTS OFF) SELECT id, v FROM scan_t WHERE k IN (0, 1, 2, 3) ORDER BY k;
SELECT id, v FROM scan_t WHERE k IN (0, 1, 2, 3) ORDER BY k;

-- index-only scan
EXPLAIN (COSTS OFF) SELECT id FROM scan_t WHERE id < 50 ORDER BY id;
SELECT count(*), sum(id) FROM (SELECT id FROM scan_t WHERE id < 50 ORDER BY id) s;
EXPLAIN (COSTS OFF) SELECT k FROM scan_t WHERE k >= 19995 ORDER BY k;
SELECT k FROM scan_t WHERE k >= 19995 ORDER BY k;

-- bitmap heap scan (plain, OR of two bitmaps, and lossy under a tiny work_mem)
SET enable_indexscan = off;
SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT sum(id) FROM scan_t WHERE k < 100;
SELECT count(*), sum(id) FROM scan_t WHERE k < 100;
EXPLAIN (COSTS OFF) SELECT sum(id) FROM scan_t WHERE k < 50 OR id > 19950;
SELECT count(*), sum(id) FROM scan_t WHERE k < 50 OR id > 19950;
SET work_mem = '64kB';
SELECT count(*), sum(id) FROM scan_t WHERE k > 10;
SELECT count(*), sum(id) FROM scan_t WHERE k > 10 AND v LIKE '%3%';
RESET work_mem;
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_bitmapscan;

-- TID scan (the plan compared is heap's: no hash lookup, see ls_hashscan)
SET leanstore.hash_cache = off;
EXPLAIN (COSTS OFF) SELECT * FROM scan_t WHERE ctid = (SELECT ctid FROM scan_t WHERE id = 4242);
SELECT * FROM scan_t WHERE ctid = (SELECT ctid FROM scan_t WHERE id = 4242);
SELECT id FROM scan_t WHERE ctid = ANY (ARRAY(SELECT ctid FROM scan_t WHERE id IN (5, 500, 5000))) ORDER BY id;
SELECT count(*) FROM scan_t WHERE ctid = '(0,0)';
SELECT count(*) FROM scan_t WHERE ctid = '(4000000000,1)';
-- ctids are unique
SELECT count(DISTINCT ctid) = count(*) AS ctids_unique FROM scan_t;
-- a row updated in this transaction is found through its current ctid
BEGIN;
UPDATE scan_t SET v = 'moved' WHERE id = 77;
SELECT id, v FROM scan_t WHERE id = 77;
SELECT id, v FROM scan_t WHERE ctid = (SELECT ctid FROM scan_t WHERE id = 77);
ROLLBACK;
SELECT id, v FROM scan_t WHERE id = 77;

-- TID range scan
EXPLAIN (COSTS OFF) SELECT count(*) FROM scan_t WHERE ctid >= '(0,1)';
SELECT count(*) FROM scan_t WHERE ctid >= '(0,1)';
SELECT count(*) FROM scan_t WHERE ctid < '(0,1)';
EXPLAIN (COSTS OFF) SELECT id FROM scan_t WHERE ctid >= '(1,0)' AND ctid < '(3,0)';
-- the range returns exactly the rows whose ctid falls into it (checked by a
-- sequential scan over the textual ctid), whatever the layout
SELECT count(*) > 0 AS nonempty,
       count(*) = (SELECT count(*) FROM scan_t WHERE (ctid::text::point)[0] >= 1 AND (ctid::text::point)[0] < 3) AS same_count
FROM scan_t WHERE ctid >= '(1,0)' AND ctid < '(3,0)';
SELECT count(*) AS differing FROM (
  (SELECT id FROM scan_t WHERE ctid >= '(1,0)' AND ctid < '(3,0)'
   EXCEPT ALL
   SELECT id FROM scan_t WHERE (ctid::text::point)[0] >= 1 AND (ctid::text::point)[0] < 3)
  UNION ALL
  (SELECT id FROM scan_t WHERE (ctid::text::point)[0] >= 1 AND (ctid::text::point)[0] < 3
   EXCEPT ALL
   SELECT id FROM scan_t WHERE ctid >= '(1,0)' AND ctid < '(3,0)')) d;

-- TABLESAMPLE
EXPLAIN (COSTS OFF) SELECT count(*) FROM scan_t TABLESAMPLE SYSTEM (50) REPEATABLE (5);
EXPLAIN (COSTS OFF) SELECT count(*) FROM scan_t TABLESAMPLE BERNOULLI (10) REPEATABLE (3);
SELECT count(*) FROM scan_t TABLESAMPLE SYSTEM (100);
SELECT count(*) FROM scan_t TABLESAMPLE SYSTEM (0);
SELECT count(*) FROM scan_t TABLESAMPLE BERNOULLI (100);
SELECT count(*) FROM scan_t TABLESAMPLE BERNOULLI (0);
SELECT count(*) BETWEEN 1400 AND 2600 AS bernoulli_10_plausible FROM scan_t TABLESAMPLE BERNOULLI (10) REPEATABLE (3);
SELECT count(*) BETWEEN 2000 AND 18000 AS system_50_plausible FROM scan_t TABLESAMPLE SYSTEM (50) REPEATABLE (5);
-- REPEATABLE gives the same sample twice
SELECT count(*) AS differing FROM (
  (SELECT id FROM scan_t TABLESAMPLE BERNOULLI (10) REPEATABLE (3)
   EXCEPT ALL SELECT id FROM scan_t TABLESAMPLE BERNOULLI (10) REPEATABLE (3))
  UNION ALL
  (SELECT id FROM scan_t TABLESAMPLE SYSTEM (50) REPEATABLE (5)
   EXCEPT ALL SELECT id FROM scan_t TABLESAMPLE SYSTEM (50) REPEATABLE (5))) d;
-- a sample holds only real rows, each once
SELECT count(*) = count(DISTINCT s.id) AND bool_and(s.v = t.v) AS sample_rows_real
FROM scan_t AS s TABLESAMPLE BERNOULLI (30) REPEATABLE (11) JOIN scan_t t ON t.id = s.id;

-- parallel sequential scan
CREATE TABLE par_t (id int, x int, pad text) USING leanstore WITH (parallel_workers = 2);
INSERT INTO par_t SELECT g, g % 1000, repeat('p', 100) FROM generate_series(1, 100000) g;
ANALYZE par_t;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
EXPLAIN (COSTS OFF) SELECT count(*), sum(id), sum(x) FROM par_t;
SELECT count(*), sum(id), sum(x) FROM par_t;
EXPLAIN (COSTS OFF) SELECT x, count(*) FROM par_t WHERE x < 3 GROUP BY x ORDER BY x;
SELECT x, count(*) FROM par_t WHERE x < 3 GROUP BY x ORDER BY x;
-- the workers alone must see every row exactly once
SET parallel_leader_participation = off;
SELECT count(*), count(DISTINCT id), sum(id) FROM par_t;
RESET parallel_leader_participation;
-- rows written by this transaction, then read in parallel after commit
DELETE FROM par_t WHERE id % 10 = 0;
UPDATE par_t SET x = -1 WHERE id % 10 = 1;
SELECT count(*), sum(id), sum(x) FROM par_t;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- a join mixing scan types
SET max_parallel_workers_per_gather = 0;
SELECT count(*), sum(s.id) FROM scan_t s JOIN par_t p ON p.id = s.id WHERE s.k < 1000;
DROP TABLE scan_t, par_t;
