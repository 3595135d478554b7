-- before the first clean restart: leanstore tables of many shapes, each with
-- a heap copy made at the end to compare against after the restart
CREATE EXTENSION leanstore;
CREATE TABLE t1 (id int PRIMARY KEY, k int, v text, w int) USING leanstore;
CREATE INDEX t1_k ON t1 (k);
INSERT INTO t1 SELECT g, g % 1000, repeat('v', g % 40), g FROM generate_series(1, 30000) g;
DELETE FROM t1 WHERE id % 10 = 0;
UPDATE t1 SET w = -w WHERE id % 7 = 0;          -- in place
UPDATE t1 SET k = k + 5000 WHERE id % 11 = 0;   -- an indexed column: moves
BEGIN;
INSERT INTO t1 SELECT g, 0, 'aborted', 0 FROM generate_series(40001, 41000) g;
ROLLBACK;
-- rows wider than a cold-tree value (stored in chunks), never TOASTed
CREATE TABLE wide (id int, a text, b text) USING leanstore;
ALTER TABLE wide ALTER COLUMN a SET STORAGE plain, ALTER COLUMN b SET STORAGE plain;
INSERT INTO wide SELECT g, repeat(md5(g::text), 60 + g % 50), repeat('b', g * 7 % 3000)
FROM generate_series(1, 300) g;
-- TOASTed values (the TOAST table is a heap table)
CREATE TABLE toasty (id int PRIMARY KEY, doc text) USING leanstore;
INSERT INTO toasty SELECT g, repeat(md5(g::text), 2000) FROM generate_series(1, 20) g;
-- types and NULLs
CREATE TABLE typed (i int8, n numeric, ts timestamptz, j jsonb, arr int[], b bool, t text) USING leanstore;
INSERT INTO typed SELECT g, g / 7.0, '2026-01-01'::timestamptz + g * interval '1 hour',
  jsonb_build_object('g', g), ARRAY[g, g + 1], g % 2 = 0, CASE WHEN g % 3 = 0 THEN NULL ELSE 't' || g END
FROM generate_series(1, 500) g;
CREATE UNLOGGED TABLE unl (a int) USING leanstore;
INSERT INTO unl SELECT generate_series(1, 100);
CREATE TABLE empty_ls (a int) USING leanstore;
CREATE TABLE parted (id int, v text) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (1000) USING leanstore;
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (1000) TO (2000) USING leanstore;
INSERT INTO parted SELECT g, 'p' || g FROM generate_series(0, 1999) g;
-- a table rewritten, and a table truncated, before the restart
CREATE TABLE rewritten (id int, v text) USING leanstore;
INSERT INTO rewritten SELECT g, 'r' || g FROM generate_series(1, 1000) g;
ALTER TABLE rewritten ALTER COLUMN id TYPE bigint;
VACUUM FULL rewritten;
CREATE TABLE truncated (a int) USING leanstore;
INSERT INTO truncated SELECT generate_series(1, 100);
TRUNCATE truncated;
INSERT INTO truncated VALUES (7);
-- VACUUM sets visibility map bits, which must stay truthful afterwards
VACUUM t1;
-- heap copies
CREATE TABLE h_t1 AS SELECT * FROM t1;
CREATE TABLE h_wide AS SELECT * FROM wide;
CREATE TABLE h_toasty AS SELECT * FROM toasty;
CREATE TABLE h_typed AS SELECT * FROM typed;
CREATE TABLE h_parted AS SELECT * FROM parted;
CREATE TABLE h_rewritten AS SELECT * FROM rewritten;
CREATE TABLE limits AS SELECT rowid_limit FROM leanstore_table_stats('t1');
SELECT count(*), sum(w), sum(k) FROM t1;
-- pages freed by merges are reused, also after a restart: a cold table
-- loses most rows (deleted in the cold tier), VACUUM empties its leaves
SET leanstore.bulk_load_rows = 10;
SET leanstore.cold_writes = always;
CREATE TABLE freed (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO freed SELECT g, repeat('f', 60) FROM generate_series(1, 40000) g;
DELETE FROM freed WHERE id > 4000;
RESET leanstore.cold_writes;
RESET leanstore.bulk_load_rows;
VACUUM freed;
CREATE TABLE freed_before AS SELECT cold_pages, cold_free_pages FROM leanstore_table_stats('freed');
SELECT cold_free_pages > cold_pages / 2 AS most_pages_free FROM freed_before;
