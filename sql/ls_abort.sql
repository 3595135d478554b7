-- Rows inserted by an aborted (sub)transaction leave the hot tier at abort
-- (src/pg/abort.c): no VACUUM needed, their rowids are DEAD until VACUUM
-- removes the index entries.  Rows of other transactions stay.
-- Hot-tier bookkeeping: it only shows while rows stay hot, so the cold
-- configuration (regress-cold packs rows at once) skips it.
SELECT current_setting('leanstore.pack_eager')::bool AS cold \gset
\if :cold
\echo 'skipped: rows go cold at once in this configuration'
\quit
\endif
SET leanstore.bulk_load_rows = 0;
CREATE TABLE la (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO la SELECT g, 'v' || g FROM generate_series(1, 100) g;
SELECT hot_rows, dead_rowids FROM leanstore_table_stats('la');
-- top-level abort: inserts, a moving update (key changed: new rowids) and
-- in-place updates of the transaction's own rows
BEGIN;
INSERT INTO la SELECT g, 'n' || g FROM generate_series(101, 200) g;
UPDATE la SET id = id + 1000 WHERE id <= 10;
UPDATE la SET v = 'w' WHERE id BETWEEN 150 AND 160;
ROLLBACK;
SELECT hot_rows, dead_rowids FROM leanstore_table_stats('la');
SELECT count(*), min(id), max(id), count(*) FILTER (WHERE v <> 'v' || id) AS changed FROM la;
SET enable_seqscan = off;
SELECT id, v FROM la WHERE id IN (5, 150, 1005) ORDER BY id;
RESET enable_seqscan;
-- subtransactions: a rolled back level goes, a released one stays
BEGIN;
INSERT INTO la SELECT g, 'a' FROM generate_series(201, 210) g;
SAVEPOINT a;
INSERT INTO la SELECT g, 'b' FROM generate_series(211, 220) g;
ROLLBACK TO a;
SAVEPOINT b;
INSERT INTO la SELECT g, 'c' FROM generate_series(221, 230) g;
RELEASE b;
SELECT hot_rows FROM leanstore_table_stats('la');
COMMIT;
SELECT v, count(*) FROM la WHERE id > 200 GROUP BY v ORDER BY v;
-- a released level's rows go when its parent level rolls back
BEGIN;
SAVEPOINT a;
INSERT INTO la SELECT g, 'd' FROM generate_series(301, 310) g;
SAVEPOINT b;
INSERT INTO la SELECT g, 'e' FROM generate_series(311, 320) g;
RELEASE b;
ROLLBACK TO a;
INSERT INTO la VALUES (400, 'f');
COMMIT;
SELECT id, v FROM la WHERE id > 300 ORDER BY id;
SELECT hot_rows FROM leanstore_table_stats('la');
-- an error inside a PL/pgSQL exception block (a subtransaction)
DO $$
BEGIN
  BEGIN
    INSERT INTO la SELECT g, 'g' FROM generate_series(501, 520) g;
    INSERT INTO la VALUES (1, 'duplicate');
  EXCEPTION WHEN unique_violation THEN
    RAISE NOTICE 'caught';
  END;
END $$;
SELECT count(*) FROM la WHERE id > 500;
SELECT hot_rows FROM leanstore_table_stats('la');
-- a table created in the aborted transaction simply goes
BEGIN;
CREATE TABLE la_new (id int) USING leanstore;
INSERT INTO la_new SELECT generate_series(1, 100);
ROLLBACK;
-- an aborted level's range lies between rows of the levels that stay: only
-- its own rows go (rows are matched by their inserting xid)
BEGIN;
INSERT INTO la VALUES (600, 'x');
SAVEPOINT s;
INSERT INTO la VALUES (601, 'y');
ROLLBACK TO s;
INSERT INTO la VALUES (602, 'z');
COMMIT;
SELECT id, v FROM la WHERE id >= 600 ORDER BY id;
-- in-place updates (no indexed column changes) of committed rows: their
-- new versions go at abort, the committed versions are current again
SELECT hot_rows, hot_versions FROM leanstore_table_stats('la');
BEGIN;
UPDATE la SET v = 'u1' WHERE id <= 50;
UPDATE la SET v = 'u2' WHERE id <= 50;
SAVEPOINT s;
UPDATE la SET v = 'u3' WHERE id <= 20;
SELECT hot_versions FROM leanstore_table_stats('la');
ROLLBACK TO s;
SELECT hot_versions FROM leanstore_table_stats('la');
SELECT v, count(*) FROM la WHERE id <= 50 GROUP BY v ORDER BY v;
ROLLBACK;
SELECT hot_rows, hot_versions FROM leanstore_table_stats('la');
SELECT count(*) FILTER (WHERE v = 'v' || id) AS unchanged, count(*) FROM la WHERE id <= 100;
-- a row another transaction updates after ours committed keeps both
BEGIN;
UPDATE la SET v = 'kept' WHERE id = 7;
COMMIT;
BEGIN;
UPDATE la SET v = 'gone' WHERE id = 7;
ROLLBACK;
SELECT id, v FROM la WHERE id = 7;
VACUUM la;
SELECT hot_rows, dead_rowids FROM leanstore_table_stats('la');
SELECT leanstore_verify('la');
DROP TABLE la;
-- a transaction with very many inserting subtransactions (distinct xids)
-- keeps at most 8192 ranges: it forgets its oldest ones, whose rows wait
-- for VACUUM as before
CREATE TABLE la_many (id int) USING leanstore;
BEGIN;
DO $$
BEGIN
  FOR i IN 1 .. 10000 LOOP
    BEGIN
      INSERT INTO la_many VALUES (i);
    EXCEPTION WHEN OTHERS THEN
      RAISE;
    END;
  END LOOP;
END $$;
SELECT hot_rows FROM leanstore_table_stats('la_many');
ROLLBACK;
SELECT hot_rows, dead_rowids FROM leanstore_table_stats('la_many');
SELECT count(*) FROM la_many;
VACUUM la_many;
SELECT hot_rows, dead_rowids FROM leanstore_table_stats('la_many');
SELECT leanstore_verify('la_many');
DROP TABLE la_many;
