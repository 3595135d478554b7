-- ls_hashscan: the CustomScan "LeanStore Hash Lookup" (leanstore-only:
-- plans and counters heap does not have; the answers are compared with
-- heap's in ls_hashscan_data).
SET max_parallel_workers_per_gather = 0;
CREATE TABLE hs (id int PRIMARY KEY, code text UNIQUE, a int, b text, v text,
                 UNIQUE (a, b)) USING leanstore;
CREATE UNIQUE INDEX hs_part ON hs (v) WHERE a > 0;
CREATE UNIQUE INDEX hs_expr ON hs ((id * 2));
CREATE TABLE hs_def (id int UNIQUE DEFERRABLE INITIALLY DEFERRED) USING leanstore;
CREATE TABLE hs_heap (id int PRIMARY KEY, v text) USING heap;
INSERT INTO hs SELECT g, 'c' || g, g % 100, 'b' || (g / 100), 'v' || g
  FROM generate_series(1, 2000) g;
INSERT INTO hs_def SELECT generate_series(1, 100);
INSERT INTO hs_heap SELECT generate_series(1, 100);
ANALYZE hs, hs_def, hs_heap;

-- planned: every key column of a unique index compared with =
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE id = 5;
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE 5 = id;
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE code = 'c7';
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE a = 7 AND b = 'b1';
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE id = 5 AND v <> 'x';
EXPLAIN (COSTS OFF) SELECT id FROM hs WHERE id = 5;  -- not an index-only scan
-- not planned: a key column missing, other operators, cross-type
-- comparison (but between integer types: at the end), partial,
-- expression, deferrable and heap indexes
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE a = 7;
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE id IN (5, 6);
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE code = 'c5'::name COLLATE "default";
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE v = 'v5' AND a > 0;
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE id * 2 = 10;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM hs_def WHERE id = 5;
EXPLAIN (COSTS OFF) SELECT id FROM hs_heap WHERE id = 5;
RESET enable_seqscan;

-- parameters: prepared statements, custom and generic plans
PREPARE hs_p(int) AS SELECT v FROM hs WHERE id = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE hs_p(5);
EXECUTE hs_p(5);
SET plan_cache_mode = force_custom_plan;
EXPLAIN (COSTS OFF) EXECUTE hs_p(5);
RESET plan_cache_mode;

-- nested loop inner side with an outer parameter
EXPLAIN (COSTS OFF)
SELECT o.id, i.v FROM hs o JOIN hs i ON i.id = o.id + 1 WHERE o.id < 4;
SELECT o.id, i.v FROM hs o JOIN hs i ON i.id = o.id + 1 WHERE o.id < 4 ORDER BY 1;

-- hits and misses: a miss fills, the next lookup hits
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE id = 1001;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE id = 1001;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE code = 'c1001';
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE code = 'c1001';
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF)
SELECT o.id, i.v FROM hs o JOIN hs i ON i.id = o.id + 1000 WHERE o.id < 4;
-- a key change moves the row to a new rowid: the update removes the old
-- row's entries (a plain miss, no stale entry), the index finds nothing for
-- the old key; then a DELETE removes the new row's entries the same way
UPDATE hs SET code = 'moved' WHERE id = 1001;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE code = 'c1001';
SELECT v FROM hs WHERE code = 'c1001';
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE id = 1001;
CREATE TEMP TABLE hs_before AS SELECT hash_cache_removed AS r FROM leanstore_stats();
DELETE FROM hs WHERE id = 1001;
SELECT hash_cache_removed - r AS removed_by_delete FROM leanstore_stats(), hs_before;
DROP TABLE hs_before;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE id = 1001;
-- a stale entry: filled inside a transaction that rolls back; the lookup
-- finds no visible row there, removes the entry and asks the index
BEGIN;
INSERT INTO hs VALUES (3001, 'c3001', 3001, 'x', 'v3001');
SELECT v FROM hs WHERE id = 3001;
ROLLBACK;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE id = 3001;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE id = 3001;
-- colliding hashes (test setting: 1 bit of each hash kept): the entry of
-- another key is found, its row fails the recheck, the index answers
-- (which keys collide depends on the index's OID, part of every hash: the
-- counts are checked for their sum and for stale entries being misses)
CREATE FUNCTION hs_lookup_counts(q text, OUT lookups int, OUT stale_are_misses bool)
LANGUAGE plpgsql AS $$
DECLARE line text; hits int := 0; misses int := 0; stale int := 0;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF line ~ 'Hash Hits:' THEN hits := substring(line FROM '\d+')::int; END IF;
    IF line ~ 'Hash Misses:' THEN misses := substring(line FROM '\d+')::int; END IF;
    IF line ~ 'Hash Stale:' THEN stale := substring(line FROM '\d+')::int; END IF;
  END LOOP;
  lookups := hits + misses;
  stale_are_misses := stale <= misses;
END $$;
SET leanstore.hash_cache_test_bits = 1;
SELECT v FROM hs WHERE id = 1002;
SELECT * FROM hs_lookup_counts('SELECT o.id, i.v FROM hs o JOIN hs i ON i.id = o.id + 1000 WHERE o.id < 9');
SELECT o.id, i.v FROM hs o JOIN hs i ON i.id = o.id + 1000 WHERE o.id < 9 ORDER BY 1;
RESET leanstore.hash_cache_test_bits;
DROP FUNCTION hs_lookup_counts(text, OUT int, OUT bool);
-- NULL keys match nothing, without a lookup
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) EXECUTE hs_p(NULL);
RESET plan_cache_mode;

-- UPDATE / DELETE / FOR UPDATE by key go through the lookup
EXPLAIN (COSTS OFF) UPDATE hs SET v = 'u' WHERE id = 10;
EXPLAIN (COSTS OFF) DELETE FROM hs WHERE id = 10;
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE id = 10 FOR UPDATE;
-- the node emits what its parent needs: plain columns as they are, with
-- no projection (custom_scan_tlist: Output and the condition name the
-- columns as before); system columns and whole rows from a slot of the
-- table's shape (UPDATE, DELETE and row locks read ctid)
EXPLAIN (COSTS OFF, VERBOSE) SELECT v FROM hs WHERE id = 5;
EXPLAIN (COSTS OFF, VERBOSE) SELECT v, id, v FROM hs WHERE code = 'c5';
EXPLAIN (COSTS OFF, VERBOSE) SELECT v FROM hs WHERE id = 5 AND a <> 3;
EXPLAIN (COSTS OFF, VERBOSE) SELECT hs FROM hs WHERE id = 5;
EXPLAIN (COSTS OFF, VERBOSE) SELECT ctid, xmin, v FROM hs WHERE id = 5;
EXPLAIN (COSTS OFF, VERBOSE) SELECT upper(v) FROM hs WHERE id = 5;
EXPLAIN (COSTS OFF, VERBOSE) UPDATE hs SET v = 'u' WHERE id = 10 RETURNING v;
EXPLAIN (COSTS OFF, VERBOSE) SELECT v FROM hs WHERE id = 10 FOR UPDATE;
EXPLAIN (COSTS OFF, VERBOSE)
SELECT o.id, i.v FROM hs o JOIN hs i ON i.id = o.id + 1 WHERE o.id < 4;
SELECT v FROM hs WHERE id = 10;  -- fills
UPDATE hs SET v = 'u10' WHERE id = 10 RETURNING id, v;
SELECT v FROM hs WHERE id = 10 FOR UPDATE;
DELETE FROM hs WHERE id = 10 RETURNING id, v;
SELECT v FROM hs WHERE id = 10;

-- PL/pgSQL variables: each lookup is counted in leanstore_stats
CREATE FUNCTION hs_loop(n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  s bigint := 0;
  x int;
BEGIN
  FOR i IN 1..n LOOP
    SELECT a INTO x FROM hs WHERE id = 100 + i;
    s := s + x;
  END LOOP;
  RETURN s;
END $$;
CREATE TEMP TABLE hs_before AS
  SELECT hash_cache_hits AS h, hash_cache_misses AS m FROM leanstore_stats();
SELECT hs_loop(50);
SELECT hs_loop(50);
SELECT hash_cache_hits - h AS hits, hash_cache_misses - m AS misses
  FROM leanstore_stats(), hs_before;
DROP TABLE hs_before;

-- SERIALIZABLE bypasses the cache (predicate locks as the index scan's)
BEGIN ISOLATION LEVEL SERIALIZABLE;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE id = 5;
COMMIT;

-- leanstore.hash_cache = off: the ordinary index scan
SET leanstore.hash_cache = off;
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE id = 5;
EXPLAIN (COSTS OFF) EXECUTE hs_p(5);
RESET leanstore.hash_cache;
EXPLAIN (COSTS OFF) SELECT v FROM hs WHERE id = 5;
-- a generic plan made with the cache on bypasses it once it is off
SET plan_cache_mode = force_generic_plan;
EXECUTE hs_p(5);
SET leanstore.hash_cache = off;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) EXECUTE hs_p(5);
RESET leanstore.hash_cache;
RESET plan_cache_mode;

-- parallel plans: the inner side of a nested loop below a Gather
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM hs o JOIN hs i ON i.id = o.id + 1 WHERE o.a < 10;
SELECT count(*) FROM hs o JOIN hs i ON i.id = o.id + 1 WHERE o.a < 10;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- a hit counts in pg_stat_user_indexes what the index scan it replaces
-- counts (idx_scan, idx_tup_read, idx_tup_fetch): the same numbers as heap's
SELECT v FROM hs WHERE id = 20;  -- fills
SELECT pg_stat_force_next_flush();
CREATE TEMP TABLE hs_before AS
  SELECT indexrelname AS i, idx_scan AS s, idx_tup_read AS r, idx_tup_fetch AS f
  FROM pg_stat_user_indexes WHERE indexrelname IN ('hs_pkey', 'hs_heap_pkey');
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE id = 20;
SELECT v FROM hs WHERE id = 20;
-- hits in one transaction count into the pending entry found first
BEGIN;
SELECT v FROM hs WHERE id = 20;
SELECT hs_loop(3) IS NOT NULL AS looped;
COMMIT;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT v FROM hs_heap WHERE id = 20;
SELECT v FROM hs_heap WHERE id = 20;
SELECT v FROM hs_heap WHERE id = 20;
BEGIN;
SELECT v FROM hs_heap WHERE id = 20;
SELECT v FROM hs_heap WHERE id = 20;
SELECT v FROM hs_heap WHERE id = 20;
SELECT v FROM hs_heap WHERE id = 20;
COMMIT;
RESET enable_seqscan;
SELECT pg_stat_force_next_flush();
SELECT i, idx_scan - s AS idx_scan, idx_tup_read - r AS idx_tup_read,
       idx_tup_fetch - f AS idx_tup_fetch
  FROM pg_stat_user_indexes JOIN hs_before ON indexrelname = i ORDER BY i;
DROP TABLE hs_before;

-- VACUUM drops the entries of rows gone for good (here: inserts rolled
-- back after a lookup filled their entries), as it drops their index
-- entries: the next lookups miss plainly instead of finding stale entries
BEGIN;
INSERT INTO hs VALUES (3002, 'c3002', 3002, 'x', 'v3002'),
                      (3003, 'c3003', 3003, 'x', 'v3003');
SELECT v FROM hs WHERE id = 3002;
SELECT v FROM hs WHERE code = 'c3002';
SELECT v FROM hs WHERE id = 3003;
ROLLBACK;
CREATE TEMP TABLE hs_before AS SELECT hash_cache_removed AS r FROM leanstore_stats();
VACUUM hs;
SELECT hash_cache_removed - r AS removed_by_vacuum FROM leanstore_stats(), hs_before;
DROP TABLE hs_before;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE id = 3002;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE code = 'c3002';
-- TRUNCATE and DROP remove the table's entries from the cache
SELECT count(*) FROM hs o JOIN hs i ON i.id = o.id WHERE o.id BETWEEN 1 AND 20
  AND i.v IS NOT NULL;
CREATE TEMP TABLE hs_before AS SELECT hash_cache_removed AS r FROM leanstore_stats();
SELECT hash_cache_entries >= 18 AS entries_there FROM leanstore_stats();
TRUNCATE hs;
SELECT hash_cache_removed - r >= 18 AS removed FROM leanstore_stats(), hs_before;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) SELECT v FROM hs WHERE id = 5;
DROP TABLE hs_before;
-- the memory is bounded by leanstore.hash_cache_memory
SELECT hash_cache_bytes = pg_size_bytes(current_setting('leanstore.hash_cache_memory'))
  AS bounded FROM leanstore_stats();
DROP TABLE hs, hs_def, hs_heap;
DROP FUNCTION hs_loop(int);
-- an integer key compared with another integer type (drivers bind 64-bit
-- integers: sysbench's point select sends a bigint for an int4 key): the
-- lookup serves it, and the recheck reads each side at its own width
CREATE TABLE hs_i4 (id int4 PRIMARY KEY, v text) USING leanstore;
CREATE TABLE hs_i8 (id int8 PRIMARY KEY, v text) USING leanstore;
CREATE TABLE hs_i2 (id int2 PRIMARY KEY, v text) USING leanstore;
INSERT INTO hs_i4 SELECT g, 'i4-' || g FROM generate_series(1, 100) g;
-- 4294967301 is 5 in its low 32 bits, 65541 is 5 in its low 16
INSERT INTO hs_i8 VALUES (5, 'i8-5'), (4294967301, 'i8-big'), (7, 'i8-7');
INSERT INTO hs_i2 VALUES (5, 'i2-5'), (-3, 'i2-neg');
INSERT INTO hs_i4 VALUES (65541, 'i4-big');
PREPARE p8(bigint) AS SELECT v FROM hs_i4 WHERE id = $1;
PREPARE p4(int4) AS SELECT v FROM hs_i8 WHERE id = $1;
PREPARE p2(int2) AS SELECT v FROM hs_i4 WHERE id = $1;
EXPLAIN (COSTS OFF) EXECUTE p8(5);
EXPLAIN (COSTS OFF) EXECUTE p4(5);
EXPLAIN (COSTS OFF) SELECT v FROM hs_i2 WHERE id = 5::int8;
-- twice each: an index scan fills the entry, the second is a hit
EXECUTE p8(5); EXECUTE p8(5);
EXECUTE p8(65541); EXECUTE p8(65541);
EXECUTE p8(4294967301);
EXECUTE p8(-1);
EXECUTE p4(5); EXECUTE p4(5);
EXECUTE p4(7); EXECUTE p4(7);
EXECUTE p2(5); EXECUTE p2(5);
SELECT v FROM hs_i2 WHERE id = 5::int8; SELECT v FROM hs_i2 WHERE id = 5::int8;
SELECT v FROM hs_i2 WHERE id = -3::int4; SELECT v FROM hs_i2 WHERE id = -3::int4;
SELECT v FROM hs_i2 WHERE id = 65541::int4;
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) EXECUTE p8(5);
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF) EXECUTE p4(5);
-- with the hash cut to one bit, keys share entries: an entry filled for
-- 4294967296 + g must not answer a lookup of g with an int4 value (their
-- low 32 bits agree)
SET leanstore.hash_cache_test_bits = 1;
INSERT INTO hs_i8 SELECT 4294967296 + g, 'big-' || g FROM generate_series(10, 29) g;
INSERT INTO hs_i8 SELECT g, 'small-' || g FROM generate_series(10, 29) g;
CREATE TEMP TABLE hs_before AS SELECT hash_cache_stale AS st FROM leanstore_stats();
EXPLAIN (COSTS OFF) SELECT g, (SELECT v FROM hs_i8 WHERE id = g::int4) FROM generate_series(10, 29) g;
-- per g: the big key (its entry filled), then g (often the same entry)
SELECT count(*) AS lookups,
       count(*) FILTER (WHERE big IS DISTINCT FROM 'big-' || g
                           OR small IS DISTINCT FROM 'small-' || g) AS wrong
  FROM (SELECT g, (SELECT v FROM hs_i8 WHERE id = 4294967296 + g) AS big,
               (SELECT v FROM hs_i8 WHERE id = g::int4) AS small
          FROM generate_series(10, 29) g) s;
-- and the other way: an entry filled for an int4 column's g must not
-- answer a bigint key 4294967296 + g (no such int4 row), nor an int2
-- column's g a key 65536 + g
SELECT count(*) AS lookups,
       count(*) FILTER (WHERE small IS DISTINCT FROM 'i4-' || g OR big IS NOT NULL) AS wrong
  FROM (SELECT g, (SELECT v FROM hs_i4 WHERE id = g) AS small,
               (SELECT v FROM hs_i4 WHERE id = 4294967296 + g) AS big
          FROM generate_series(10, 29) g) s;
INSERT INTO hs_i2 SELECT g, 'i2-' || g FROM generate_series(10, 29) g;
SELECT count(*) AS lookups,
       count(*) FILTER (WHERE small IS DISTINCT FROM 'i2-' || g OR big IS NOT NULL) AS wrong
  FROM (SELECT g, (SELECT v FROM hs_i2 WHERE id = g::int2) AS small,
               (SELECT v FROM hs_i2 WHERE id = 65536 + g) AS big
          FROM generate_series(10, 29) g) s;
SELECT hash_cache_stale > st AS rechecks_refused FROM leanstore_stats(), hs_before;
DROP TABLE hs_before;
RESET leanstore.hash_cache_test_bits;
DEALLOCATE p8; DEALLOCATE p4; DEALLOCATE p2;
DROP TABLE hs_i4, hs_i8, hs_i2;

-- A partitionwise join whose inner side is the hash lookup, parameterized
-- by the outer side's partition: the lookup's index path is translated to
-- each child (the plan used to fail with "variable not found in subplan
-- target list")
CREATE TABLE hs_pp (k int PRIMARY KEY, a int) PARTITION BY RANGE (k);
CREATE TABLE hs_pp1 PARTITION OF hs_pp FOR VALUES FROM (0) TO (1000) USING leanstore;
CREATE TABLE hs_pp2 PARTITION OF hs_pp FOR VALUES FROM (1000) TO (2000) USING leanstore;
CREATE TABLE hs_pq (k int PRIMARY KEY, b int) PARTITION BY RANGE (k);
CREATE TABLE hs_pq1 PARTITION OF hs_pq FOR VALUES FROM (0) TO (1000) USING leanstore;
CREATE TABLE hs_pq2 PARTITION OF hs_pq FOR VALUES FROM (1000) TO (2000) USING leanstore;
INSERT INTO hs_pp SELECT g, g FROM generate_series(0, 1999) g;
INSERT INTO hs_pq SELECT g, -g FROM generate_series(0, 1999) g;
ANALYZE hs_pp, hs_pq;
SET enable_partitionwise_join = on;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT * FROM hs_pp JOIN hs_pq ON hs_pp.k = hs_pq.k WHERE hs_pp.a < 2 OR hs_pp.a = 1500 ORDER BY 1;
SELECT * FROM hs_pp JOIN hs_pq ON hs_pp.k = hs_pq.k WHERE hs_pp.a < 2 OR hs_pp.a = 1500 ORDER BY 1;
RESET enable_partitionwise_join;
RESET enable_hashjoin;
RESET enable_mergejoin;
DROP TABLE hs_pp, hs_pq;

-- UPDATE / DELETE ... WHERE CURRENT OF a cursor planned as the hash
-- lookup: the scan slot carries the row's TID (it used to fail with
-- "tid (4294967295, 0) is not valid"), after a miss (the index scan inside
-- the node) and after a hit, with the narrow slot
CREATE TABLE hs_cc (k int PRIMARY KEY, v text) USING leanstore;
INSERT INTO hs_cc SELECT g, 'v' || g FROM generate_series(1, 100) g;
EXPLAIN (COSTS OFF) SELECT v FROM hs_cc WHERE k = 5;
BEGIN;
DECLARE c1 CURSOR FOR SELECT * FROM hs_cc WHERE k = 5;
FETCH c1;
UPDATE hs_cc SET v = 'x' WHERE CURRENT OF c1 RETURNING *;
ROLLBACK;
BEGIN;
DECLARE c2 CURSOR FOR SELECT v FROM hs_cc WHERE k = 5;
FETCH c2;
DELETE FROM hs_cc WHERE CURRENT OF c2 RETURNING k;
ROLLBACK;
BEGIN;
DECLARE c3 CURSOR FOR SELECT v FROM hs_cc WHERE k = 7;
FETCH c3;
UPDATE hs_cc SET v = 'y' WHERE CURRENT OF c3;
FETCH c3;
COMMIT;
SELECT k, v FROM hs_cc WHERE k IN (5, 7) ORDER BY k;
DROP TABLE hs_cc;
