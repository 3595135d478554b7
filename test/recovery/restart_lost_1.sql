-- before the restart: leanstore tables with rows, an index, a heap table
CREATE EXTENSION leanstore;
CREATE TABLE lost_t (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO lost_t SELECT g, 'v' || g FROM generate_series(1, 1000) g;
CREATE TABLE lost_other (a int) USING leanstore;
INSERT INTO lost_other VALUES (1);
CREATE TABLE kept_heap (a int) USING heap;
INSERT INTO kept_heap VALUES (1), (2);
CREATE TABLE empty_ls (a int) USING leanstore;
SELECT count(*) FROM lost_t;
