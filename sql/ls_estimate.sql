-- ls_estimate: planner size estimates are those of the heap table holding
-- the same rows (heap pages the rows would fill; heap's 10-page guess and
-- width-based density for a table never vacuumed nor analyzed; no
-- all-visible pages, as there is no visibility map).
SET max_parallel_workers_per_gather = 0;
-- the plans compared here are heap's (no hash lookups: ls_hashscan)
SET leanstore.hash_cache = off;
-- empty, never analyzed: heap's 10 pages
CREATE TABLE est_e (a int PRIMARY KEY, b text) USING leanstore;
EXPLAIN SELECT * FROM est_e;
EXPLAIN SELECT * FROM est_e WHERE a = 1;
-- rows, never analyzed: still at least 10 pages, density from the widths
INSERT INTO est_e SELECT g, 'x' FROM generate_series(1, 1000) g;
EXPLAIN SELECT * FROM est_e;
-- more rows than 10 pages hold: pages from the rows' bytes
INSERT INTO est_e SELECT g, 'x' FROM generate_series(1001, 10000) g;
EXPLAIN SELECT * FROM est_e;
ANALYZE est_e;
SELECT reltuples FROM pg_class WHERE relname = 'est_e';
EXPLAIN SELECT * FROM est_e;
-- wider rows, fixed width
CREATE TABLE est_w (a int, b bigint, c float8, d char(40)) USING leanstore;
INSERT INTO est_w SELECT g, g, g, 'd' FROM generate_series(1, 5000) g;
EXPLAIN SELECT * FROM est_w;
VACUUM est_w;
EXPLAIN SELECT * FROM est_w;
-- emptied and vacuumed: 0 pages, no 10-page guess any more
DELETE FROM est_w;
VACUUM est_w;
EXPLAIN SELECT * FROM est_w;
-- analyzed, never vacuumed: no page is all-visible, so a generic plan for
-- an unselective value is a seq scan, not an index-only scan
CREATE TABLE est_m (a int) USING leanstore;
INSERT INTO est_m SELECT 1 FROM generate_series(1, 1000) UNION ALL SELECT 2;
CREATE INDEX ON est_m (a);
ANALYZE est_m;
PREPARE est_pp (int) AS SELECT count(*) FROM est_m WHERE a = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE est_pp(2);
SET plan_cache_mode = force_custom_plan;
EXPLAIN (COSTS OFF) EXECUTE est_pp(2);
RESET plan_cache_mode;
DEALLOCATE est_pp;
DROP TABLE est_e, est_w, est_m;
