--
-- The visibility map of leanstore tables: VACUUM sets all-visible bits,
-- every write clears its block's bit, index-only scans skip the table for
-- all-visible blocks and bitmap scans that need no column skip them; the
-- planner sees relallvisible.  Results and plan shapes must be heap's.
--
CREATE EXTENSION IF NOT EXISTS pg_visibility;

-- Heap Fetches of an index-only scan, from EXPLAIN ANALYZE
CREATE FUNCTION vm_heap_fetches(query text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query LOOP
		IF line ~ 'Heap Fetches' THEN
			RETURN substring(line FROM 'Heap Fetches: (\d+)')::int;
		END IF;
	END LOOP;
	RETURN NULL;
END $$;

CREATE TABLE vm_t (id int PRIMARY KEY, v int, pad text) USING leanstore;
INSERT INTO vm_t SELECT g, g % 7, repeat('p', 40) FROM generate_series(1, 3000) g;

-- before VACUUM nothing is all-visible
SELECT relallvisible FROM pg_class WHERE relname = 'vm_t';
SELECT bool_or(all_visible) AS any_visible FROM pg_visibility_map('vm_t');
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT vm_heap_fetches('SELECT id FROM vm_t WHERE id BETWEEN 1 AND 100') > 0 AS fetches;

VACUUM vm_t;
SELECT relallvisible > 0 AS some_visible, relallvisible <= relpages AS bounded
  FROM pg_class WHERE relname = 'vm_t';
SELECT bool_and(all_visible) AS all_visible, bool_or(all_frozen) AS any_frozen
  FROM pg_visibility_map('vm_t');
EXPLAIN (COSTS OFF) SELECT id FROM vm_t WHERE id BETWEEN 1 AND 100;
SELECT vm_heap_fetches('SELECT id FROM vm_t WHERE id BETWEEN 1 AND 100') AS fetches;
SELECT count(*), sum(id) FROM vm_t WHERE id BETWEEN 1 AND 100;

-- an update in place (no indexed column) clears its block's bit
UPDATE vm_t SET v = -1 WHERE id = 10;
SELECT bool_and(all_visible) AS all_visible FROM pg_visibility_map('vm_t');
SELECT vm_heap_fetches('SELECT id FROM vm_t WHERE id BETWEEN 1 AND 100') > 0 AS fetches;

-- a delete: the index-only scan must not return the row
DELETE FROM vm_t WHERE id BETWEEN 2950 AND 2959;
SELECT count(*), sum(id) FROM vm_t WHERE id BETWEEN 2901 AND 3000;
-- an update of the key: new rowid at the end, old one deleted
UPDATE vm_t SET id = 5000 WHERE id = 2960;
SELECT count(*), sum(id) FROM vm_t WHERE id BETWEEN 2901 AND 6000;

-- a bitmap scan that needs no column skips all-visible blocks: counts stay right
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM vm_t WHERE id BETWEEN 2001 AND 3000;
SELECT count(*) FROM vm_t WHERE id BETWEEN 2001 AND 3000;
RESET enable_indexscan;
RESET enable_indexonlyscan;
SET enable_bitmapscan = off;

-- VACUUM sets the bits again; rows inserted afterwards clear them
VACUUM vm_t;
SELECT bool_and(all_visible) AS all_visible FROM pg_visibility_map('vm_t');
SELECT vm_heap_fetches('SELECT id FROM vm_t WHERE id BETWEEN 1 AND 6000') AS fetches;
BEGIN;
INSERT INTO vm_t VALUES (6001, 0, 'new');
SELECT count(*), max(id) FROM vm_t WHERE id > 4000;
ROLLBACK;
SELECT count(*), max(id) FROM vm_t WHERE id > 4000;
INSERT INTO vm_t VALUES (6002, 0, 'new');
SELECT count(*), max(id) FROM vm_t WHERE id > 4000;

-- a row locked FOR UPDATE stays all-visible (heap keeps the bit too)
VACUUM vm_t;
BEGIN;
SELECT id FROM vm_t WHERE id = 20 FOR UPDATE;
SELECT vm_heap_fetches('SELECT id FROM vm_t WHERE id BETWEEN 1 AND 100') AS fetches;
COMMIT;

-- ANALYZE counts the bits into relallvisible too
UPDATE pg_class SET relallvisible = 0 WHERE relname = 'vm_t';
ANALYZE vm_t;
SELECT relallvisible > 0 AS some_visible FROM pg_class WHERE relname = 'vm_t';

-- an aborted insert leaves its block not all-visible (the row is dead, its
-- index entry must go first); the next VACUUM cleans it and sets the bit
BEGIN;
INSERT INTO vm_t SELECT g, 0, 'x' FROM generate_series(7000, 7100) g;
ROLLBACK;
VACUUM vm_t;
SELECT bool_and(all_visible) AS all_visible FROM pg_visibility_map('vm_t');
SELECT count(*) FROM vm_t WHERE id >= 7000;

-- TRUNCATE in the creating transaction empties the map as well
BEGIN;
CREATE TABLE vm_trunc (id int PRIMARY KEY) USING leanstore;
INSERT INTO vm_trunc SELECT generate_series(1, 500);
TRUNCATE vm_trunc;
INSERT INTO vm_trunc SELECT generate_series(1, 10);
SELECT count(*) FROM vm_trunc WHERE id > 0;
COMMIT;
SELECT count(*) FROM pg_visibility_map('vm_trunc') WHERE all_visible;

-- the planner picks index-only scans on a vacuumed table as it does on heap
RESET enable_seqscan;
RESET enable_bitmapscan;
CREATE TABLE vm_plan (a int, b int, c text) USING leanstore;
INSERT INTO vm_plan SELECT g, g % 100, repeat('c', 50) FROM generate_series(1, 20000) g;
CREATE INDEX vm_plan_b ON vm_plan (b);
VACUUM ANALYZE vm_plan;
EXPLAIN (COSTS OFF) SELECT DISTINCT b FROM vm_plan;
EXPLAIN (COSTS OFF) SELECT count(*) FROM vm_plan WHERE b < 5;
SELECT count(*) FROM vm_plan WHERE b < 5;

DROP TABLE vm_t, vm_trunc, vm_plan;
DROP FUNCTION vm_heap_fetches(text);
DROP EXTENSION pg_visibility;
