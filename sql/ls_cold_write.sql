-- ls_cold_write: deletes and updates made in the cold tier itself.  Once a
-- transaction has written leanstore.bulk_load_rows cold rows of a table,
-- further deletes of cold rows only stamp the transaction into the row's
-- image, and updates also write the new version into the tree at a new
-- rowid, instead of migrating the row into the hot tier (a large DELETE or
-- UPDATE then needs no hot memory).  The rows here go cold by the
-- bulk-load path in both test configurations.
SET max_parallel_workers_per_gather = 0;
SET leanstore.bulk_load_rows = 5;
-- (the default, auto, does so only while the hot tier is nearly full)
SET leanstore.cold_writes = always;
CREATE TABLE cdel (id int PRIMARY KEY, k int, v text) USING leanstore;
CREATE INDEX cdel_k ON cdel (k);
INSERT INTO cdel SELECT g, g % 10, 'v' || g FROM generate_series(1, 2000) g;
-- at most the first rows stay hot (five, plus what pack did not move yet)
SELECT hot_rows <= 5 AS mostly_cold FROM leanstore_table_stats('cdel');

CREATE FUNCTION cdel_counts(OUT seq bigint, OUT idx bigint, OUT bmp bigint, OUT total bigint)
LANGUAGE plpgsql AS $$
BEGIN
  SELECT count(*), sum(id) INTO seq, total FROM cdel;
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  SELECT count(*) INTO idx FROM cdel WHERE id BETWEEN 1 AND 100000;
  PERFORM set_config('enable_bitmapscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  SELECT count(*) INTO bmp FROM cdel WHERE k BETWEEN 0 AND 9;
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'on', true);
END $$;

-- a large delete rolled back: every row is back, and the hot tier did not
-- receive a version per deleted row
BEGIN;
DELETE FROM cdel WHERE id <= 1500;
SELECT * FROM cdel_counts();
SELECT hot_versions < 100 AS deleted_in_cold FROM leanstore_table_stats('cdel');
-- the deleting transaction sees its deletes, also through the indexes
SELECT count(*) FROM cdel WHERE id = 700;
ROLLBACK;
SELECT * FROM cdel_counts();

-- the same in a subtransaction: ROLLBACK TO brings the rows back, RELEASE keeps
-- the delete
BEGIN;
SAVEPOINT s1;
DELETE FROM cdel WHERE id BETWEEN 1 AND 300;
ROLLBACK TO s1;
SAVEPOINT s2;
DELETE FROM cdel WHERE id BETWEEN 1001 AND 1300;
RELEASE s2;
SELECT * FROM cdel_counts();
COMMIT;
SELECT * FROM cdel_counts();

-- RETURNING and a row deleted twice by one statement (a self-join: the
-- second attempt finds the row gone by this very command)
DELETE FROM cdel WHERE id BETWEEN 1301 AND 1320 RETURNING id, k, v;
DELETE FROM cdel c USING cdel d WHERE c.id BETWEEN 1321 AND 1340 AND d.k = c.k AND d.id BETWEEN 1321 AND 1340;
SELECT * FROM cdel_counts();

-- a savepoint rolled back over cold deletes: the outer ones stay visible to
-- the transaction as deleted, the inner ones come back
BEGIN;
DELETE FROM cdel WHERE id BETWEEN 1401 AND 1410;
SAVEPOINT s;
DELETE FROM cdel WHERE id BETWEEN 1411 AND 1420;
ROLLBACK TO s;
SELECT count(*) FROM cdel WHERE id BETWEEN 1401 AND 1420;
ROLLBACK;

-- VACUUM removes the committed deletes (their index entries too) and drops
-- the xmax of the rolled-back ones; the table stays whole
VACUUM cdel;
SELECT * FROM cdel_counts();
SELECT dead_rowids FROM leanstore_table_stats('cdel');
SELECT leanstore_verify('cdel');
-- deleted again after the VACUUM dropped an aborted xmax: works as before
DELETE FROM cdel WHERE id BETWEEN 1 AND 100;
SELECT * FROM cdel_counts();
VACUUM cdel;
SELECT * FROM cdel_counts();
SELECT leanstore_verify('cdel');

-- an UPDATE of a row deleted by a committed transaction finds nothing
UPDATE cdel SET v = 'gone' WHERE id = 50;
-- and an UPDATE of a cold row still works (it migrates the row)
UPDATE cdel SET v = 'updated' WHERE id = 200 RETURNING *;

-- large updates: of a non-key column, of an indexed column, of the key
BEGIN;
UPDATE cdel SET v = v || '+' WHERE id BETWEEN 101 AND 900;
SELECT hot_versions < 100 AS updated_in_cold FROM leanstore_table_stats('cdel');
SELECT count(*), sum(length(v)) FROM cdel WHERE id BETWEEN 101 AND 900;
ROLLBACK;
SELECT * FROM cdel_counts();
SELECT count(*) FROM cdel WHERE v LIKE '%+';
UPDATE cdel SET v = v || '+' WHERE id BETWEEN 101 AND 900;
UPDATE cdel SET k = k + 100 WHERE id BETWEEN 901 AND 1000;
UPDATE cdel SET id = id + 10000 WHERE id BETWEEN 1501 AND 1600;
SELECT * FROM cdel_counts();
SELECT count(*) FILTER (WHERE v LIKE '%+'), count(*) FILTER (WHERE k >= 100),
       count(*) FILTER (WHERE id > 10000) FROM cdel;
SET enable_seqscan = off;
SELECT count(*) FROM cdel WHERE k >= 100;
SELECT id, k, v FROM cdel WHERE id IN (150, 950, 11550) ORDER BY id;
RESET enable_seqscan;
-- updated twice and then deleted in one transaction (the second write meets
-- the transaction's own new version, which goes the hot way), and a
-- subtransaction's updates rolled back
BEGIN;
UPDATE cdel SET v = 'twice' WHERE id BETWEEN 1701 AND 1760;
UPDATE cdel SET v = v || '!' WHERE id BETWEEN 1701 AND 1760;
DELETE FROM cdel WHERE id BETWEEN 1751 AND 1760;
SAVEPOINT s;
UPDATE cdel SET v = 'undone' WHERE id BETWEEN 1761 AND 1800;
ROLLBACK TO s;
COMMIT;
SELECT count(*) FILTER (WHERE v = 'twice!') AS twice, count(*) FILTER (WHERE v = 'v' || id) AS unchanged,
       count(*) FROM cdel WHERE id BETWEEN 1701 AND 1800;
-- row triggers see OLD and NEW of rows updated in the cold tier
CREATE TABLE cdel_audit (id int, old_v text, new_v text);
CREATE FUNCTION cdel_audit_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cdel_audit VALUES (OLD.id, OLD.v, NEW.v);
  RETURN NEW;
END $$;
CREATE TRIGGER cdel_audit_t AFTER UPDATE ON cdel FOR EACH ROW EXECUTE FUNCTION cdel_audit_fn();
UPDATE cdel SET v = 'trig' WHERE id BETWEEN 1801 AND 1850;
SELECT count(*), count(DISTINCT old_v), min(new_v), max(new_v) FROM cdel_audit;
DROP TRIGGER cdel_audit_t ON cdel;
DROP TABLE cdel_audit;
DROP FUNCTION cdel_audit_fn();
VACUUM cdel;
SELECT * FROM cdel_counts();
SELECT leanstore_verify('cdel');
DROP TABLE cdel;
DROP FUNCTION cdel_counts();
