-- ls_errors: leanstore's own refusals and settings. The expected output of
-- this file is written by hand (test/leanstore-only): heap has no such errors.
CREATE TABLE err_t (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO err_t VALUES (1, 'committed');
-- PREPARE TRANSACTION is refused once a transaction wrote to a leanstore
-- table; the transaction is rolled back
BEGIN;
INSERT INTO err_t VALUES (2, 'to prepare');
PREPARE TRANSACTION 'ls_insert';
BEGIN;
UPDATE err_t SET v = 'changed' WHERE id = 1;
PREPARE TRANSACTION 'ls_update';
BEGIN;
DELETE FROM err_t WHERE id = 1;
PREPARE TRANSACTION 'ls_delete';
BEGIN;
SAVEPOINT s;
INSERT INTO err_t VALUES (3, 'in a subtransaction');
RELEASE s;
PREPARE TRANSACTION 'ls_subxact';
-- a row lock counts (it lives in the row, in memory), and so does a
-- leanstore table created in the transaction
BEGIN;
SELECT id FROM err_t WHERE id = 1 FOR UPDATE;
PREPARE TRANSACTION 'ls_for_update';
BEGIN;
SELECT id FROM err_t WHERE id = 1 FOR KEY SHARE;
PREPARE TRANSACTION 'ls_for_key_share';
BEGIN;
CREATE TABLE err_new (a int) USING leanstore;
PREPARE TRANSACTION 'ls_create';
SELECT to_regclass('err_new') IS NULL AS not_created;
SELECT count(*) AS prepared FROM pg_prepared_xacts;
SELECT * FROM err_t ORDER BY id;
-- reading a leanstore table does not prevent PREPARE
BEGIN;
SELECT count(*) FROM err_t;
PREPARE TRANSACTION 'ls_read';
COMMIT PREPARED 'ls_read';
-- a heap-only transaction prepares as usual
CREATE TABLE err_heap (a int) USING heap;
BEGIN;
INSERT INTO err_heap VALUES (1);
PREPARE TRANSACTION 'ls_heap';
COMMIT PREPARED 'ls_heap';
SELECT * FROM err_heap;
-- the table keeps working after the refusals
INSERT INTO err_t VALUES (4, 'after');
SELECT * FROM err_t ORDER BY id;
-- settings: the tier size needs a restart; unknown leanstore.* names are refused
SHOW leanstore.hot_memory;
SET leanstore.hot_memory = '2GB';
SET leanstore.no_such_setting = 1;
DROP TABLE err_t, err_heap;
