-- after a clean restart: every committed row is back, nothing else
CREATE FUNCTION same(a text, b text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n1 bigint; n2 bigint; c bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM %s', a) INTO n1;
  EXECUTE format('SELECT count(*) FROM %s', b) INTO n2;
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL TABLE %s) UNION ALL (TABLE %s EXCEPT ALL TABLE %s)) x',
                 a, b, b, a) INTO c;
  RETURN format('%s: %s rows, heap %s rows, %s differ', a, n1, n2, c);
END $$;
SELECT same('t1', 'h_t1');
SELECT same('wide', 'h_wide');
SELECT same('toasty', 'h_toasty');
SELECT same('typed', 'h_typed');
SELECT same('parted', 'h_parted');
SELECT same('rewritten', 'h_rewritten');
SELECT count(*) FROM unl;
SELECT count(*) FROM empty_ls;
SELECT * FROM truncated;
SELECT count(*) FROM t1 WHERE v = 'aborted';
-- index scans and index-only scans agree with the data
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id, k, w FROM t1 WHERE id = 77;
SELECT count(*) FROM t1 WHERE k = 5011;
SELECT count(*) FROM t1 WHERE id BETWEEN 100 AND 200;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t1 WHERE id BETWEEN 100 AND 200;
-- a write after the restart clears the visibility map bit of its block
DELETE FROM t1 WHERE id BETWEEN 100 AND 150;
SELECT count(*) FROM t1 WHERE id BETWEEN 100 AND 200;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) FROM t1 WHERE id BETWEEN 100 AND 200;
-- new rows continue the rowid sequence (no rowid an index entry may name is reused)
INSERT INTO t1 VALUES (50001, 1, 'after', 1);
SELECT (ctid::text::point)[0] * 291 + (ctid::text::point)[1] - 1 >= (SELECT rowid_limit FROM limits)
  AS after_old_rowids FROM t1 WHERE id = 50001;
UPDATE t1 SET k = k + 1 WHERE id BETWEEN 1 AND 20;
UPDATE wide SET b = 'short' WHERE id % 2 = 0;
SELECT leanstore_verify(c.oid::regclass) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE a.amname = 'leanstore' ORDER BY c.relname;
SELECT tables_opened >= 9 AS opened, cold_reads > 0 AS cold_reads, rows_migrated > 0 AS migrated FROM leanstore_stats();
SELECT cold_pages > 1 AS has_pages FROM leanstore_table_stats('t1');
SELECT pg_relation_size('t1') > 0 AS real_size;
-- new heap copies for the next restart
DROP TABLE h_t1, h_wide;
CREATE TABLE h_t1 AS SELECT * FROM t1;
CREATE TABLE h_wide AS SELECT * FROM wide;
-- after the restart the free pages are found again (a walk of the tree's
-- inner nodes when the table is opened), and new rows fill them: the file
-- does not grow
SELECT f.cold_pages = b.cold_pages AS same_file, f.cold_free_pages > b.cold_pages / 2 AS free_found
  FROM leanstore_table_stats('freed') f, freed_before b;
-- the clean shutdown wrote every row into the tree, and the count of row
-- images came back with the meta page
SELECT cold_rows = (SELECT count(*) FROM freed) AS rows_counted, hot_rows
  FROM leanstore_table_stats('freed');
SET leanstore.bulk_load_rows = 10;
INSERT INTO freed SELECT g, repeat('n', 60) FROM generate_series(100001, 120000) g;
RESET leanstore.bulk_load_rows;
SELECT f.cold_pages = b.cold_pages AS file_not_grown, f.cold_free_pages < b.cold_free_pages AS free_reused
  FROM leanstore_table_stats('freed') f, freed_before b;
SELECT count(*), count(*) FILTER (WHERE v LIKE 'n%') AS new FROM freed;
SELECT leanstore_verify('freed');
