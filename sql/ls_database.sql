-- CREATE DATABASE from a template that holds leanstore tables would copy
-- their definitions but not their rows (they live in leanstore's shared
-- memory): it is refused before anything is done, for both strategies.
-- ALTER DATABASE ... SET TABLESPACE would move their files behind
-- leanstore's back: refused the same way.
CREATE DATABASE ls_tpl;
\c ls_tpl
CREATE EXTENSION leanstore;
CREATE TABLE tpl_t (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO tpl_t SELECT g, 'v' || g FROM generate_series(1, 100) g;
\c contrib_regression
CREATE DATABASE ls_cp TEMPLATE ls_tpl;
CREATE DATABASE ls_cp TEMPLATE ls_tpl STRATEGY WAL_LOG;
CREATE DATABASE ls_cp TEMPLATE = ls_tpl STRATEGY FILE_COPY;
SELECT count(*) FROM pg_database WHERE datname = 'ls_cp';
-- a template whose leanstore tables are all gone can be copied
\c ls_tpl
DROP TABLE tpl_t;
CREATE TABLE tpl_heap (id int) USING heap;
INSERT INTO tpl_heap VALUES (1);
\c contrib_regression
CREATE DATABASE ls_cp TEMPLATE ls_tpl STRATEGY FILE_COPY;
\c ls_cp
SELECT * FROM tpl_heap;
CREATE TABLE cp_t (id int) USING leanstore;
INSERT INTO cp_t VALUES (1), (2);
SELECT count(*) FROM cp_t;
\c contrib_regression
DROP DATABASE ls_cp;
-- ALTER DATABASE ... SET TABLESPACE moves the files of the default
-- tablespace; leanstore's buffer pool and log name the old place: refused
-- while leanstore tables are there (test/recovery/template_copy.sh checks
-- it after restarts too, and that a moved table was lost before)
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE ls_db_space LOCATION '';
CREATE TABLESPACE ls_db_space2 LOCATION '';
RESET allow_in_place_tablespaces;
\c ls_tpl
CREATE TABLE tpl_t (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO tpl_t SELECT g, 'v' || g FROM generate_series(1, 100) g;
\c contrib_regression
ALTER DATABASE ls_tpl SET TABLESPACE ls_db_space;
SELECT spcname FROM pg_database d JOIN pg_tablespace s ON s.oid = d.dattablespace
 WHERE datname = 'ls_tpl';
-- a move to where the database already is: PostgreSQL's no-op
ALTER DATABASE ls_tpl SET TABLESPACE pg_default;
-- a leanstore table in another tablespace does not move with the database
\c ls_tpl
SELECT count(*), sum(id) FROM tpl_t;
ALTER TABLE tpl_t SET TABLESPACE ls_db_space2;
\c contrib_regression
ALTER DATABASE ls_tpl SET TABLESPACE ls_db_space;
\c ls_tpl
SELECT count(*), sum(id) FROM tpl_t;
SET enable_seqscan = off;
SELECT v FROM tpl_t WHERE id = 42;
RESET enable_seqscan;
INSERT INTO tpl_t VALUES (101, 'new');
SELECT leanstore_verify('tpl_t');
\c contrib_regression
ALTER DATABASE ls_tpl SET TABLESPACE pg_default;
\c ls_tpl
SELECT count(*) FROM tpl_t;
\c contrib_regression
DROP DATABASE ls_tpl;
DROP TABLESPACE ls_db_space;
DROP TABLESPACE ls_db_space2;
