-- ls_index_build: CREATE INDEX, REINDEX and CREATE INDEX CONCURRENTLY over
-- many batches of rows (nearly all cold in regress-cold) with deleted,
-- updated, wide and uncommitted rows, versions whose inserter aborted
-- (subtransactions), partial and expression indexes, serial and parallel
-- builds; every index is read back (index scans only) and compared with
-- the same on a heap twin.
SET max_parallel_workers_per_gather = 0;
SET max_parallel_maintenance_workers = 0;
CREATE TABLE ib_h (id int, k int, t text) USING heap;
CREATE TABLE ib_l (id int, k int, t text) USING leanstore;
INSERT INTO ib_h SELECT g, g % 97,
	CASE WHEN g % 50 = 0 THEN (SELECT string_agg(md5((g * 100 + i)::text), '') FROM generate_series(1, 60) i)
		 ELSE 'r' || g END
	FROM generate_series(1, 3000) g;
INSERT INTO ib_l SELECT * FROM ib_h ORDER BY id;
DELETE FROM ib_h WHERE id % 7 = 0;
DELETE FROM ib_l WHERE id % 7 = 0;
UPDATE ib_h SET k = k + 1000 WHERE id % 11 = 0;
UPDATE ib_l SET k = k + 1000 WHERE id % 11 = 0;
UPDATE ib_h SET t = t || 'x' WHERE id % 13 = 0;
UPDATE ib_l SET t = t || 'x' WHERE id % 13 = 0;

-- what index scans of both tables return for the indexed expressions
CREATE FUNCTION ib_read(tab regclass) RETURNS TABLE (what text, n bigint, ids bigint, ks bigint)
LANGUAGE plpgsql AS $$
BEGIN
	SET LOCAL enable_seqscan = off;
	SET LOCAL enable_bitmapscan = off;
	RETURN QUERY EXECUTE format($q$
		SELECT 'k', count(*), sum(id), sum(k) FROM %1$s WHERE k >= 0
		UNION ALL SELECT 'k2', count(*), sum(id), sum(k) FROM %1$s WHERE k * 2 >= 0
		UNION ALL SELECT 'len', count(*), sum(id), sum(k) FROM %1$s WHERE length(t) > 100
		UNION ALL SELECT 'part', count(*), sum(id), sum(k) FROM %1$s WHERE id %% 3 = 0 AND k < 1000
	$q$, tab);
END $$;
CREATE FUNCTION ib_compare() RETURNS TABLE (what text, n bigint, ids bigint, ks bigint, same_as_heap bool)
LANGUAGE sql AS $$
	SELECT l.*, l IS NOT DISTINCT FROM h FROM ib_read('ib_l') l JOIN ib_read('ib_h') h USING (what) ORDER BY what
$$;
CREATE FUNCTION ib_build(tab text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE INDEX %1$s_k ON %1$s (k)', tab);
	EXECUTE format('CREATE INDEX %1$s_k2 ON %1$s ((k * 2))', tab);
	EXECUTE format('CREATE INDEX %1$s_len ON %1$s (length(t))', tab);
	EXECUTE format('CREATE INDEX %1$s_part ON %1$s (k) WHERE id %% 3 = 0 AND k < 1000', tab);
END $$;
CREATE FUNCTION ib_drop(tab text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('DROP INDEX %1$s_k, %1$s_k2, %1$s_len, %1$s_part', tab);
END $$;

-- serial builds over committed rows
SELECT ib_build('ib_h'), ib_build('ib_l');
EXPLAIN (COSTS OFF) SELECT count(*) FROM ib_l WHERE id % 3 = 0 AND k < 1000;
SELECT * FROM ib_compare();
-- reltuples counts the table's live rows, also after a partial index
SELECT l.reltuples, l.reltuples = h.reltuples AS same_as_heap
	FROM pg_class l, pg_class h WHERE l.relname = 'ib_l' AND h.relname = 'ib_h';
REINDEX TABLE ib_h;
REINDEX TABLE ib_l;
SELECT * FROM ib_compare();
SELECT ib_drop('ib_h'), ib_drop('ib_l');

-- built inside the transaction that inserted, deleted and updated rows,
-- with updates and deletes of a subtransaction rolled back (the row's
-- newest version never existed: the one below it is indexed)
BEGIN;
INSERT INTO ib_h SELECT g, g % 97, 'new' || g FROM generate_series(3001, 3200) g;
INSERT INTO ib_l SELECT g, g % 97, 'new' || g FROM generate_series(3001, 3200) g;
DELETE FROM ib_h WHERE id % 5 = 2;
DELETE FROM ib_l WHERE id % 5 = 2;
UPDATE ib_h SET k = k + 2000 WHERE id % 17 = 0;
UPDATE ib_l SET k = k + 2000 WHERE id % 17 = 0;
SAVEPOINT s;
UPDATE ib_h SET k = k + 5000 WHERE id % 3 = 1;
UPDATE ib_l SET k = k + 5000 WHERE id % 3 = 1;
DELETE FROM ib_h WHERE id % 4 = 1;
DELETE FROM ib_l WHERE id % 4 = 1;
ROLLBACK TO SAVEPOINT s;
SELECT ib_build('ib_h'), ib_build('ib_l');
COMMIT;
SELECT * FROM ib_compare();
SELECT l.reltuples, l.reltuples = h.reltuples AS same_as_heap
	FROM pg_class l, pg_class h WHERE l.relname = 'ib_l' AND h.relname = 'ib_h';
SELECT ib_drop('ib_h'), ib_drop('ib_l');

-- CONCURRENTLY: the build and the validate scan (MVCC)
CREATE INDEX CONCURRENTLY ib_h_k ON ib_h (k);
CREATE INDEX CONCURRENTLY ib_l_k ON ib_l (k);
CREATE INDEX CONCURRENTLY ib_h_k2 ON ib_h ((k * 2));
CREATE INDEX CONCURRENTLY ib_l_k2 ON ib_l ((k * 2));
CREATE INDEX CONCURRENTLY ib_h_len ON ib_h (length(t));
CREATE INDEX CONCURRENTLY ib_l_len ON ib_l (length(t));
CREATE INDEX CONCURRENTLY ib_h_part ON ib_h (k) WHERE id % 3 = 0 AND k < 1000;
CREATE INDEX CONCURRENTLY ib_l_part ON ib_l (k) WHERE id % 3 = 0 AND k < 1000;
SELECT count(*) FROM pg_index WHERE indrelid = 'ib_l'::regclass AND indisvalid AND indisready;
SELECT * FROM ib_compare();
REINDEX TABLE CONCURRENTLY ib_h;
REINDEX TABLE CONCURRENTLY ib_l;
SELECT * FROM ib_compare();
SELECT ib_drop('ib_h'), ib_drop('ib_l');

-- parallel builds (the workers' scans share the table's rowid chunks)
SET max_parallel_maintenance_workers = 2;
SET maintenance_work_mem = '256MB';	-- 32MB per participant: two workers
ALTER TABLE ib_h SET (parallel_workers = 2);
ALTER TABLE ib_l SET (parallel_workers = 2);
SELECT ib_build('ib_h'), ib_build('ib_l');
SELECT * FROM ib_compare();
RESET max_parallel_maintenance_workers;
RESET maintenance_work_mem;

DROP TABLE ib_h, ib_l;
DROP FUNCTION ib_compare(), ib_read(regclass), ib_build(text), ib_drop(text);
