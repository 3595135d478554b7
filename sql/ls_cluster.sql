-- ls_cluster: CLUSTER and VACUUM FULL write the rows in the order PostgreSQL
-- asks for (index order, or a sort by the index's keys), like heap's rewrite.
-- Tables stay small (one heap page), so ctids are layout-independent.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE c10 (a int) USING leanstore;
INSERT INTO c10 VALUES (3), (1), (2);
CREATE INDEX c10_a ON c10 (a);
CLUSTER c10 USING c10_a;
SELECT ctid, a FROM c10;
-- the new order survives later inserts (appended behind it)
INSERT INTO c10 VALUES (0);
SELECT ctid, a FROM c10;

-- index scan order (sort disabled) and sort order (index scans disabled),
-- descending index, NULLs, duplicates, expression index
CREATE TABLE c20 (id int, k int, t text) USING leanstore;
INSERT INTO c20 SELECT g, (g * 37) % 11, 't' || ((g * 13) % 50) FROM generate_series(1, 60) g;
INSERT INTO c20 VALUES (61, NULL, NULL), (62, NULL, 'z');
CREATE INDEX c20_k_desc ON c20 (k DESC, id);
CREATE INDEX c20_t_expr ON c20 (lower(t), id);
SET enable_sort = off;
CLUSTER c20 USING c20_k_desc;
RESET enable_sort;
SELECT ctid, id, k FROM c20;
SET enable_indexscan = off;
CLUSTER c20 USING c20_t_expr;
RESET enable_indexscan;
SELECT ctid, id, t FROM c20;
-- CLUSTER without USING takes the remembered index; indexes still work
UPDATE c20 SET k = -k WHERE id % 3 = 0;
DELETE FROM c20 WHERE id % 5 = 0;
SET enable_indexscan = off;
CLUSTER c20;
RESET enable_indexscan;
SELECT ctid, id, t FROM c20;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM c20 WHERE k = -3 ORDER BY k DESC, id;
SELECT id FROM c20 WHERE k = -3 ORDER BY k DESC, id;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- VACUUM FULL: dead rows are gone and the rows are numbered densely in
-- their current order
DELETE FROM c20 WHERE id < 40;
VACUUM FULL c20;
SELECT ctid, id FROM c20;
SELECT relpages > 0 AS has_pages, reltuples FROM pg_class WHERE relname = 'c20';

-- xmin is kept by the copy
CREATE TABLE c30 (a int, b text) USING leanstore;
INSERT INTO c30 VALUES (2, 'two');
CREATE TEMP TABLE c30_xmin AS SELECT xmin AS x FROM c30;
INSERT INTO c30 VALUES (1, 'one');
CREATE INDEX c30_a ON c30 (a);
CLUSTER c30 USING c30_a;
SELECT ctid, a, b, xmin = (SELECT x FROM c30_xmin) AS first_xmin FROM c30;

-- a larger table: order checked without looking at ctids
CREATE TABLE c40 (id int PRIMARY KEY, k int, pad text) USING leanstore;
INSERT INTO c40 SELECT g, (g * 7919) % 1000, repeat('p', 20) FROM generate_series(1, 5000) g;
CREATE INDEX c40_k ON c40 (k, id);
SET enable_sort = off;
CLUSTER c40 USING c40_k;
RESET enable_sort;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE (k, id) < (pk, pid)) AS out_of_order
FROM (SELECT k, id, lag(k) OVER w AS pk, lag(id) OVER w AS pid
      FROM c40 WINDOW w AS (ORDER BY ctid)) s;
SET enable_indexscan = off;
CLUSTER c40 USING c40_pkey;
RESET enable_indexscan;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE id < pid) AS out_of_order
FROM (SELECT id, lag(id) OVER (ORDER BY ctid) AS pid FROM c40) s;
SELECT count(*), sum(k) FROM c40 WHERE id BETWEEN 100 AND 200;

-- past leanstore.bulk_load_rows rows, the copies write rows of one version
-- straight to the cold tier: the rows, their xmins, their order and the
-- index lookups stay the same, and the copied rows can be written again
SET leanstore.bulk_load_rows = 10;
CREATE TABLE c50 (id int PRIMARY KEY, k int, v text) USING leanstore;
INSERT INTO c50 SELECT g, g % 7, 'v' || g FROM generate_series(1, 100) g;
UPDATE c50 SET v = 'u' || id WHERE id % 3 = 0;
DELETE FROM c50 WHERE id % 10 = 0;
CREATE INDEX c50_k ON c50 (k, id);
CREATE TEMP TABLE c50_before AS SELECT id, k, v, xmin::text AS x FROM c50;
VACUUM FULL c50;
SELECT count(*) FROM c50 a FULL JOIN c50_before b USING (id)
WHERE a.id IS NULL OR b.id IS NULL OR (a.k, a.v, a.xmin::text) IS DISTINCT FROM (b.k, b.v, b.x);
SET enable_sort = off;
CLUSTER c50 USING c50_k;
RESET enable_sort;
SELECT count(*) FROM c50 a FULL JOIN c50_before b USING (id)
WHERE a.id IS NULL OR b.id IS NULL OR (a.k, a.v, a.xmin::text) IS DISTINCT FROM (b.k, b.v, b.x);
SELECT count(*) AS rows,
       count(*) FILTER (WHERE (k, id) < (pk, pid)) AS out_of_order
FROM (SELECT k, id, lag(k) OVER w AS pk, lag(id) OVER w AS pid
      FROM c50 WINDOW w AS (ORDER BY ctid)) s;
SET enable_seqscan = off;
UPDATE c50 SET v = 'w' || id WHERE id IN (3, 34, 99);
DELETE FROM c50 WHERE id = 41;
SELECT id, k, v FROM c50 WHERE id IN (3, 34, 41, 99) ORDER BY id;
RESET enable_seqscan;
RESET leanstore.bulk_load_rows;

DROP TABLE c10, c20, c30, c40, c50;
