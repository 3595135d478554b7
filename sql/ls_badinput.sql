-- Every SQL function and GUC of leanstore with bad input: NULL, relations
-- that are not leanstore tables, a dropped OID, values at and past bounds.
CREATE TABLE bi_ls (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO bi_ls VALUES (1, 'one');
CREATE TABLE bi_heap (id int) USING heap;
CREATE VIEW bi_view AS SELECT * FROM bi_ls;
CREATE MATERIALIZED VIEW bi_mv USING leanstore AS SELECT * FROM bi_ls;
CREATE MATERIALIZED VIEW bi_mv_heap USING heap AS SELECT * FROM bi_ls;
CREATE TABLE bi_part (id int) PARTITION BY RANGE (id);
CREATE TABLE bi_part_1 PARTITION OF bi_part FOR VALUES FROM (0) TO (10) USING leanstore;
CREATE SEQUENCE bi_seq;
CREATE TYPE bi_comp AS (a int);
CREATE FOREIGN DATA WRAPPER bi_fdw;
CREATE SERVER bi_srv FOREIGN DATA WRAPPER bi_fdw;
CREATE FOREIGN TABLE bi_ft (id int) SERVER bi_srv;
CREATE TEMP TABLE bi_temp (id int) USING leanstore;
INSERT INTO bi_temp VALUES (1), (2);
CREATE TABLE bi_gone (id int) USING leanstore;
SELECT 'bi_gone'::regclass::oid AS gone_oid \gset
DROP TABLE bi_gone;
-- NULL: the functions are strict
SELECT leanstore_table_stats(NULL) IS NULL AS stats_null, leanstore_verify(NULL) IS NULL AS verify_null;
-- what works: leanstore tables, partitions, materialized views, own temp tables
SELECT rowid_limit FROM leanstore_table_stats('bi_ls');
SELECT rowid_limit FROM leanstore_table_stats('bi_mv');
SELECT rowid_limit FROM leanstore_table_stats('bi_part_1');
SELECT rowid_limit FROM leanstore_table_stats('bi_temp');
SELECT leanstore_verify('bi_ls'), leanstore_verify('bi_mv'), leanstore_verify('bi_temp');
SELECT tables > 0 AS has_tables FROM leanstore_stats();
-- everything else: one clear error each
SELECT * FROM leanstore_table_stats('bi_heap');
SELECT leanstore_verify('bi_heap');
SELECT * FROM leanstore_table_stats('bi_mv_heap');
SELECT * FROM leanstore_table_stats('bi_ls_pkey');
SELECT leanstore_verify('bi_ls_pkey');
SELECT * FROM leanstore_table_stats('bi_view');
SELECT leanstore_verify('bi_view');
SELECT * FROM leanstore_table_stats('bi_part');
SELECT leanstore_verify('bi_part');
SELECT * FROM leanstore_table_stats('bi_seq');
SELECT * FROM leanstore_table_stats('bi_comp');
SELECT * FROM leanstore_table_stats('bi_ft');
SELECT * FROM leanstore_table_stats('pg_class');
-- the TOAST table of a leanstore table is a heap table; a dropped OID (the
-- messages name OIDs that differ from run to run: SQLSTATEs only)
\set VERBOSITY sqlstate
SELECT * FROM leanstore_table_stats((SELECT reltoastrelid FROM pg_class WHERE oid = 'bi_ls'::regclass));
SELECT * FROM leanstore_table_stats(:gone_oid);
SELECT leanstore_verify(:gone_oid);
\set VERBOSITY default
-- OID 0 and the largest OID
SELECT * FROM leanstore_table_stats(0);
SELECT leanstore_verify(4294967295);
-- names that do not exist fail in regclass input, before leanstore
SELECT leanstore_verify('no_such_table');
-- leanstore_verify refuses the same kinds, and both functions OID 0 and the
-- largest OID
SELECT leanstore_verify('bi_mv_heap');
SELECT leanstore_verify('bi_seq');
SELECT leanstore_verify('bi_comp');
SELECT leanstore_verify('bi_ft');
SELECT leanstore_verify('pg_class');
SELECT leanstore_verify(0);
SELECT * FROM leanstore_table_stats(4294967295);
\set VERBOSITY sqlstate
SELECT leanstore_verify((SELECT reltoastrelid FROM pg_class WHERE oid = 'bi_ls'::regclass));
\set VERBOSITY default
-- the table AM handler takes no SQL value
SELECT leanstore_tableam_handler(NULL);
-- the functions are for superusers (REVOKE ... FROM PUBLIC), and so are
-- the superuser-only settings
CREATE ROLE regress_ls_badinput;
SET ROLE regress_ls_badinput;
SELECT * FROM leanstore_stats();
SELECT leanstore_checkpoint();
SELECT * FROM leanstore_table_stats('bi_ls');
SELECT leanstore_verify('bi_ls');
SET leanstore.hash_cache_test_bits = 1;
SET leanstore.debug_crash_point = 'pack';
RESET ROLE;
DROP ROLE regress_ls_badinput;
-- GUCs: both are fixed at server start
SHOW leanstore.hot_memory;
SHOW leanstore.max_tables;
SET leanstore.hot_memory = '64MB';
SET leanstore.max_tables = 100;
-- ALTER SYSTEM checks the bounds (32MB .. 1TB, 16 .. 1048576)
ALTER SYSTEM SET leanstore.hot_memory = '31MB';
ALTER SYSTEM SET leanstore.hot_memory = '32MB';
ALTER SYSTEM SET leanstore.hot_memory = '1TB';
ALTER SYSTEM SET leanstore.hot_memory = '1025GB';
ALTER SYSTEM SET leanstore.hot_memory = '-1';
ALTER SYSTEM SET leanstore.hot_memory = 'lots';
ALTER SYSTEM RESET leanstore.hot_memory;
ALTER SYSTEM SET leanstore.max_tables = 15;
ALTER SYSTEM SET leanstore.max_tables = 16;
ALTER SYSTEM SET leanstore.max_tables = 1048576;
ALTER SYSTEM SET leanstore.max_tables = 1048577;
ALTER SYSTEM SET leanstore.max_tables = 1.5;
ALTER SYSTEM RESET leanstore.max_tables;
-- the other GUCs: buffer_pool (2MB .. 1TB, server start), pack_threshold
-- (1 .. 100) and pack_eager (reload), bulk_load_rows (0 .. 2^31-1, any
-- session), the hash cache's switch, memory (0 .. 1TB in MB, server start)
-- and test bits (0 .. 64, superuser)
SET leanstore.buffer_pool = '64MB';
SET leanstore.pack_threshold = 50;
SET leanstore.pack_eager = on;
ALTER SYSTEM SET leanstore.buffer_pool = '1MB';
ALTER SYSTEM SET leanstore.pack_threshold = 0;
ALTER SYSTEM SET leanstore.pack_threshold = 101;
ALTER SYSTEM SET leanstore.pack_eager = 'maybe';
ALTER SYSTEM SET leanstore.hash_cache_memory = -1;
ALTER SYSTEM SET leanstore.hash_cache_memory = 1048577;
SET leanstore.bulk_load_rows = -1;
SET leanstore.bulk_load_rows = 2147483648;
SET leanstore.bulk_load_rows = 2147483647;
SHOW leanstore.bulk_load_rows;
RESET leanstore.bulk_load_rows;
SET leanstore.hash_cache = 'perhaps';
SET leanstore.hash_cache_test_bits = 65;
SET leanstore.hash_cache_test_bits = -1;
-- the same GUCs at their bounds (accepted) and as the wrong kind
ALTER SYSTEM SET leanstore.buffer_pool = '2MB';
ALTER SYSTEM SET leanstore.buffer_pool = '1TB';
ALTER SYSTEM SET leanstore.buffer_pool = '1025GB';
ALTER SYSTEM RESET leanstore.buffer_pool;
ALTER SYSTEM SET leanstore.pack_threshold = 1;
ALTER SYSTEM SET leanstore.pack_threshold = 100;
ALTER SYSTEM SET leanstore.pack_threshold = 'high';
ALTER SYSTEM RESET leanstore.pack_threshold;
SET leanstore.hash_cache_memory = 1;
ALTER SYSTEM SET leanstore.hash_cache_memory = 0;
ALTER SYSTEM SET leanstore.hash_cache_memory = 1048576;
ALTER SYSTEM RESET leanstore.hash_cache_memory;
SET leanstore.bulk_load_rows = 0;
SHOW leanstore.bulk_load_rows;
SET leanstore.bulk_load_rows = 'many';
RESET leanstore.bulk_load_rows;
SET leanstore.hash_cache_test_bits = 0;
SET leanstore.hash_cache_test_bits = 64;
RESET leanstore.hash_cache_test_bits;
-- cold_writes (off | auto | always, any session)
SET leanstore.cold_writes = 'sometimes';
SET leanstore.cold_writes = '';
SET leanstore.cold_writes = off;
SET leanstore.cold_writes = always;
SHOW leanstore.cold_writes;
RESET leanstore.cold_writes;
-- the log: directory (not empty), buffer (256kB .. 64MB) at server start;
-- checkpoint_timeout (0 .. 1 day) and max_log_size (32MB .. 1TB) on reload
SET leanstore.log_directory = 'elsewhere';
ALTER SYSTEM SET leanstore.log_directory = '';
ALTER SYSTEM SET leanstore.log_directory = 'pg_leanstore/log';
ALTER SYSTEM RESET leanstore.log_directory;
SET leanstore.log_buffer = '1MB';
ALTER SYSTEM SET leanstore.log_buffer = '255kB';
ALTER SYSTEM SET leanstore.log_buffer = '256kB';
ALTER SYSTEM SET leanstore.log_buffer = '64MB';
ALTER SYSTEM SET leanstore.log_buffer = '65MB';
ALTER SYSTEM SET leanstore.log_buffer = 'big';
ALTER SYSTEM RESET leanstore.log_buffer;
SET leanstore.checkpoint_timeout = '1min';
ALTER SYSTEM SET leanstore.checkpoint_timeout = -1;
ALTER SYSTEM SET leanstore.checkpoint_timeout = 0;
ALTER SYSTEM SET leanstore.checkpoint_timeout = '1d';
ALTER SYSTEM SET leanstore.checkpoint_timeout = 86401;
ALTER SYSTEM SET leanstore.checkpoint_timeout = 'soon';
ALTER SYSTEM RESET leanstore.checkpoint_timeout;
SET leanstore.max_log_size = '1GB';
ALTER SYSTEM SET leanstore.max_log_size = '31MB';
ALTER SYSTEM SET leanstore.max_log_size = '32MB';
ALTER SYSTEM SET leanstore.max_log_size = '1TB';
ALTER SYSTEM SET leanstore.max_log_size = '1025GB';
ALTER SYSTEM RESET leanstore.max_log_size;
-- the crash tests' switches: a crash point must be one leanstore has (a
-- misspelt one would never crash); the log fault is none, write or sync
SET leanstore.debug_crash_point = 'no-such-point';
BEGIN;
SET LOCAL leanstore.debug_crash_point = 'drop-commit';
SHOW leanstore.debug_crash_point;
ROLLBACK;
SET leanstore.debug_crash_point = '';
RESET leanstore.debug_crash_point;
SET leanstore.debug_log_fault = 'write';
ALTER SYSTEM SET leanstore.debug_log_fault = 'sometimes';
ALTER SYSTEM SET leanstore.debug_log_fault = 'none';
ALTER SYSTEM RESET leanstore.debug_log_fault;
-- names under leanstore. are reserved: a misspelt setting is an error
SET leanstore.hot_mem = '1GB';
ALTER SYSTEM SET leanstore.hot_mem = '1GB';
DROP TABLE bi_ls CASCADE;
DROP TABLE bi_heap, bi_part, bi_temp;
DROP SEQUENCE bi_seq;
DROP TYPE bi_comp;
DROP FOREIGN TABLE bi_ft;
DROP SERVER bi_srv;
DROP FOREIGN DATA WRAPPER bi_fdw;
