-- first run: leanstore tables whose rows stay hot, one whose rows a bulk
-- load puts into its cold pages, an empty one, a heap table
CREATE EXTENSION leanstore;
CREATE TABLE kept_t (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO kept_t SELECT g, 'v' || g FROM generate_series(1, 1000) g;
UPDATE kept_t SET v = 'updated' WHERE id <= 10;
DELETE FROM kept_t WHERE id > 990;
BEGIN;
INSERT INTO kept_t VALUES (5000, 'rolled back');
ROLLBACK;
CREATE TABLE lost_t (id int PRIMARY KEY, v text) USING leanstore;
SET leanstore.bulk_load_rows = 10;
INSERT INTO lost_t SELECT g, 'v' || g FROM generate_series(1, 1000) g;
RESET leanstore.bulk_load_rows;
CREATE TABLE kept_heap (a int) USING heap;
INSERT INTO kept_heap VALUES (1), (2);
CREATE TABLE empty_ls (a int) USING leanstore;
SELECT count(*), sum(length(v)) FROM kept_t;
SELECT count(*) FROM lost_t;
