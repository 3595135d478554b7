-- COPY stores the rows past leanstore.bulk_load_rows a batch at a time
-- (ls_multi_insert: one rowid reservation, the rightmost leaf filled under
-- one latch, one log record per run of images).  Rows keep COPY's order in
-- their TIDs, wide images (several chunks) mix with small ones in a batch,
-- both indexes find every row, and a COPY that fails midway (top level or
-- in a subtransaction) leaves none of its rows, before and after VACUUM.
SET leanstore.bulk_load_rows = 100;
SELECT setting AS datadir FROM pg_settings WHERE name = 'data_directory' \gset
\set f1 :datadir '/ls_copy_batch_1.data'
\set f2 :datadir '/ls_copy_batch_2.data'
\set f3 :datadir '/ls_copy_batch_3.data'
CREATE TABLE cb (id int PRIMARY KEY, k int, v text) USING leanstore;
ALTER TABLE cb ALTER v SET STORAGE PLAIN;
CREATE INDEX cb_k ON cb (k);
-- every 50th row is about 3 kB (a cold image of two chunks)
COPY (SELECT g, g % 97, CASE WHEN g % 50 = 0 THEN repeat(md5(g::text), 100) ELSE md5(g::text) END
      FROM generate_series(1, 5000) g) TO :'f1';
COPY (SELECT a, b, c FROM (SELECT g AS o, g::text AS a, (g % 97)::text AS b, md5(g::text) AS c
                           FROM generate_series(5001, 9000) g
                           UNION ALL SELECT 9001, 'bad', '0', 'x') s ORDER BY o)
  TO :'f2';
COPY cb FROM :'f1';
SELECT count(*), sum(id), sum(length(v)), count(DISTINCT ctid) FROM cb;
-- TIDs ascend in COPY's order
SELECT count(*) AS out_of_order
FROM (SELECT ctid, lag(ctid) OVER (ORDER BY id) AS prev FROM cb) s WHERE prev >= ctid;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id, k, length(v) FROM cb WHERE id IN (1, 100, 101, 150, 2500, 4999, 5000) ORDER BY id;
SELECT count(*), sum(id) FROM cb WHERE k = 5;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- a COPY that fails at its last line: the batches it stored stay invisible
COPY cb FROM :'f2';
SELECT count(*), max(id) FROM cb;
SET enable_seqscan = off;
SELECT count(*) FROM cb WHERE id > 5000;
RESET enable_seqscan;
-- the same keys again (no conflict with the failed COPY's index entries),
-- in a subtransaction: rolled back, then again and kept
COPY (SELECT g, g % 97, md5(g::text) FROM generate_series(5001, 9000) g) TO :'f3';
BEGIN;
SAVEPOINT s;
COPY cb FROM :'f3';
SELECT count(*) FROM cb;
ROLLBACK TO s;
SELECT count(*) FROM cb;
COPY cb FROM :'f3';
COMMIT;
SELECT count(*), sum(id), count(DISTINCT ctid) FROM cb;
VACUUM cb;
SELECT count(*), sum(id), sum(length(v)) FROM cb;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id, k, length(v) FROM cb WHERE id IN (1, 5000, 5001, 8999, 9000, 9001) ORDER BY id;
SELECT count(*), sum(id) FROM cb WHERE k = 5;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- an index built over the loaded rows agrees with the scan
CREATE INDEX cb_v ON cb (md5(v));
SET enable_seqscan = off;
SELECT count(*) FROM cb WHERE md5(v) = md5(md5('7000'));
RESET enable_seqscan;
DROP TABLE cb;
RESET leanstore.bulk_load_rows;
-- one-chunk images are compact (cold.c "Compact layout"): rows of
-- pgbench_accounts' shape take 139 bytes each in the cold tree, leaves,
-- inner nodes and meta page included (builds before it: 158; heap's pages
-- take 134)
SET leanstore.bulk_load_rows = 100;
CREATE TABLE cb_size (aid int, bid int, abalance int, filler char(84)) USING leanstore;
INSERT INTO cb_size SELECT g, g / 1000, 0, '' FROM generate_series(1, 100000) g;
-- (the first 100 rows stay hot until pack moves them: with pack_eager, as
-- in regress-cold, the worker may already have moved some)
SELECT cold_pages * 8192 / 100000 < 148 AS compact, hot_rows + cold_rows AS rows,
       cold_rows >= 99900 AS bulk_loaded
FROM leanstore_table_stats('cb_size');
DROP TABLE cb_size;
RESET leanstore.bulk_load_rows;
