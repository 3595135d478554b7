-- ls_publication: leanstore tables stay out of logical replication. Their
-- rows are in leanstore's own log, not in PostgreSQL's WAL, so a publication
-- that publishes their inserts, updates or deletes would send subscribers
-- the initial copy and then nothing. Such publications are refused, and a
-- table that comes under one later cannot be written. The expected output is
-- written by hand (test/leanstore-only): heap has no such errors.
SET client_min_messages = error;	-- wal_level is not logical here
CREATE TABLE pub_ls (id int PRIMARY KEY, v text) USING leanstore;
CREATE TABLE pub_heap (id int PRIMARY KEY, v text) USING heap;
INSERT INTO pub_ls VALUES (1, 'a');
INSERT INTO pub_heap VALUES (1, 'a');
-- naming the table, all tables, its schema: refused, nothing created
CREATE PUBLICATION pub_t FOR TABLE pub_ls;
CREATE PUBLICATION pub_t FOR TABLE pub_heap, pub_ls;
CREATE PUBLICATION pub_all FOR ALL TABLES;
CREATE SCHEMA pub_s;
CREATE TABLE pub_s.ls (id int PRIMARY KEY) USING leanstore;
CREATE PUBLICATION pub_sch FOR TABLES IN SCHEMA pub_s;
SELECT count(*) AS publications FROM pg_publication;
-- publishing only truncate is allowed (PostgreSQL logs TRUNCATE itself)
CREATE PUBLICATION pub_trunc FOR TABLE pub_ls WITH (publish = 'truncate');
INSERT INTO pub_ls VALUES (2, 'b');
UPDATE pub_ls SET v = 'c' WHERE id = 2;
DELETE FROM pub_ls WHERE id = 2;
-- and asking it to publish more is refused, the publication unchanged
ALTER PUBLICATION pub_trunc SET (publish = 'insert, truncate');
SELECT pubinsert, pubupdate, pubdelete, pubtruncate FROM pg_publication WHERE pubname = 'pub_trunc';
DROP PUBLICATION pub_trunc;
-- heap tables publish as usual; adding a leanstore table is refused
CREATE PUBLICATION pub_h FOR TABLE pub_heap;
ALTER PUBLICATION pub_h ADD TABLE pub_ls;
ALTER PUBLICATION pub_h SET TABLE pub_heap, pub_ls;
ALTER PUBLICATION pub_h ADD TABLES IN SCHEMA pub_s;
SELECT tablename FROM pg_publication_tables WHERE pubname = 'pub_h';
INSERT INTO pub_heap VALUES (2, 'b');
-- a partitioned table whose partitions are leanstore tables
CREATE TABLE pub_parent (id int, v text) PARTITION BY RANGE (id);
CREATE TABLE pub_p1 PARTITION OF pub_parent FOR VALUES FROM (0) TO (100) USING leanstore;
CREATE PUBLICATION pub_part FOR TABLE pub_parent;
CREATE PUBLICATION pub_part FOR TABLE pub_parent WITH (publish_via_partition_root = true);
-- a table that comes under a publication later cannot be written: moved
-- into a published schema, attached to a published partitioned table
DROP TABLE pub_s.ls;
CREATE PUBLICATION pub_sch FOR TABLES IN SCHEMA pub_s WITH (publish = 'update');
CREATE TABLE pub_late (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO pub_late VALUES (1, 'a'), (2, 'b');
ALTER TABLE pub_late SET SCHEMA pub_s;
INSERT INTO pub_s.pub_late VALUES (3, 'inserts are not published');
UPDATE pub_s.pub_late SET v = 'x' WHERE id = 1;
DELETE FROM pub_s.pub_late WHERE id = 2;
ALTER PUBLICATION pub_sch SET (publish = 'insert, update, delete');
DROP PUBLICATION pub_sch;
CREATE SCHEMA pub_s2;
CREATE PUBLICATION pub_sch2 FOR TABLES IN SCHEMA pub_s2;
ALTER TABLE pub_s.pub_late SET SCHEMA pub_s2;
INSERT INTO pub_s2.pub_late VALUES (4, 'x');
INSERT INTO pub_s2.pub_late VALUES (4, 'x') ON CONFLICT (id) DO NOTHING;
COPY pub_s2.pub_late FROM stdin;
5	copied
\.
UPDATE pub_s2.pub_late SET v = 'y' WHERE id = 1;
DELETE FROM pub_s2.pub_late WHERE id = 1;
-- its rows can still be read, the table truncated and moved out
SELECT * FROM pub_s2.pub_late ORDER BY id;
TRUNCATE pub_s2.pub_late;
ALTER TABLE pub_s2.pub_late SET SCHEMA public;
INSERT INTO pub_late VALUES (6, 'moved out');
SELECT * FROM pub_late ORDER BY id;
DROP PUBLICATION pub_sch2;
CREATE TABLE pub_parent2 (id int, v text) PARTITION BY RANGE (id);
CREATE TABLE pub_q1 PARTITION OF pub_parent2 FOR VALUES FROM (0) TO (100) USING heap;
CREATE PUBLICATION pub_root FOR TABLE pub_parent2 WITH (publish = 'insert');
CREATE TABLE pub_q2 (id int, v text) USING leanstore;
INSERT INTO pub_q2 VALUES (150, 'before');
ALTER TABLE pub_parent2 ATTACH PARTITION pub_q2 FOR VALUES FROM (100) TO (200);
INSERT INTO pub_parent2 VALUES (50, 'heap partition');
INSERT INTO pub_parent2 VALUES (150, 'leanstore partition');
UPDATE pub_parent2 SET v = 'updates are not published' WHERE id = 150;
SELECT * FROM pub_parent2 ORDER BY id;
-- once it is detached, it can be written again
ALTER TABLE pub_parent2 DETACH PARTITION pub_q2;
INSERT INTO pub_q2 VALUES (151, 'detached');
SELECT count(*) FROM pub_q2;
DROP PUBLICATION pub_root;
-- temporary and unlogged leanstore tables are never published
CREATE UNLOGGED TABLE pub_unlogged (id int) USING leanstore;
CREATE TEMP TABLE pub_temp (id int) USING leanstore;
INSERT INTO pub_unlogged VALUES (1);
INSERT INTO pub_temp VALUES (1);
SELECT (SELECT count(*) FROM pub_unlogged) + (SELECT count(*) FROM pub_temp) AS rows;
DROP PUBLICATION pub_h;
DROP TABLE pub_late, pub_unlogged, pub_temp, pub_parent, pub_parent2, pub_q2, pub_ls, pub_heap;
DROP SCHEMA pub_s, pub_s2;
RESET client_min_messages;
