/* leanstore--0.1.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION leanstore" to load this file. \quit

-- Loading the library outside shared_preload_libraries fails right here with
-- "leanstore must be loaded via shared_preload_libraries".
CREATE FUNCTION leanstore_tableam_handler(internal)
RETURNS table_am_handler
AS 'MODULE_PATHNAME', 'leanstore_tableam_handler'
LANGUAGE C STRICT;

CREATE ACCESS METHOD leanstore TYPE TABLE HANDLER leanstore_tableam_handler;
COMMENT ON ACCESS METHOD leanstore IS 'LeanStore-style table access method';

-- Whole hot tier
CREATE FUNCTION leanstore_stats(
    OUT region_bytes bigint,
    OUT heap_bytes bigint,
    OUT used_bytes bigint,
    OUT free_bytes bigint,
    OUT slack_bytes bigint,
    OUT retired_bytes bigint,
    OUT retired_objects bigint,
    OUT tables bigint,
    OUT hot_rows bigint,
    OUT hot_versions bigint,
    OUT epoch bigint,
    -- the cold tier's buffer pool (leanstore.buffer_pool) and its files
    OUT pool_pages bigint,
    OUT pool_free_pages bigint,
    OUT pool_hits bigint,
    OUT pool_misses bigint,
    OUT pool_reads bigint,
    OUT pool_writes bigint,
    OUT pool_evictions bigint,
    OUT provider_rounds bigint,
    OUT rows_packed bigint,
    OUT rows_migrated bigint,
    OUT cold_reads bigint,
    OUT tables_written bigint,
    OUT tables_opened bigint,
    OUT cold_pages bigint,
    OUT crash_epoch bigint,
    -- hash cache of unique-index point lookups
    OUT hash_cache_bytes bigint,
    OUT hash_cache_entries bigint,
    OUT hash_cache_hits bigint,
    OUT hash_cache_misses bigint,
    OUT hash_cache_stale bigint,
    OUT hash_cache_fills bigint,
    OUT hash_cache_evictions bigint,
    OUT hash_cache_removed bigint,
    -- leanstore's log (leanstore.log_directory) and the last recovery
    OUT log_bytes bigint,
    OUT log_records bigint,
    OUT log_commits bigint,
    OUT log_commit_wait_us bigint,
    OUT log_rounds bigint,
    OUT log_round_us bigint,
    OUT log_records_per_round double precision,
    OUT log_end bigint,
    OUT recovery_us bigint,
    OUT recovery_records bigint,
    OUT recovery_rows bigint,
    OUT recovery_tables bigint,
    OUT checkpoints bigint,
    OUT checkpoint_us bigint,
    -- writes sent to the cold tree because the hot tier was full; freed
    -- cold pages the buffer pool could not keep for reuse (until a restart)
    OUT writes_spilled bigint,
    OUT cold_pages_leaked bigint,
    -- row images in the cold trees of the tables opened since the start
    OUT cold_rows bigint,
    -- of log_commits, those whose outcome leanstore's log alone decides
    -- (leanstore-only transactions: no second flush of PostgreSQL's WAL)
    OUT log_only_commits bigint,
    OUT wal_copy_commits bigint,
    OUT recovery_wal_records bigint,
    OUT async_commits bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'leanstore_stats'
LANGUAGE C STRICT VOLATILE;

-- (a function, not a view: the extension lives in pg_catalog, where views cannot be created)

-- One table
CREATE FUNCTION leanstore_table_stats(
    rel regclass,
    OUT hot_rows bigint,
    OUT hot_versions bigint,
    OUT hot_bytes bigint,
    OUT dead_rowids bigint,
    OUT rowid_limit bigint,
    OUT cold_pages bigint,
    OUT cold_free_pages bigint,
    OUT cold_rows bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'leanstore_table_stats'
LANGUAGE C STRICT VOLATILE;

-- Checks the invariants of a table (hot rows, RID-map, cold tree); true, or an error listing problems.
CREATE FUNCTION leanstore_verify(rel regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'leanstore_verify'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION leanstore_stats() FROM PUBLIC;
REVOKE ALL ON FUNCTION leanstore_table_stats(regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION leanstore_verify(regclass) FROM PUBLIC;

-- Run a leanstore checkpoint now (changed cold trees become clean images,
-- hot rows are logged again, older log segments can be recycled); false
-- when another one is running or this one could not finish
CREATE FUNCTION leanstore_checkpoint()
RETURNS boolean
AS 'MODULE_PATHNAME', 'leanstore_checkpoint'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION leanstore_checkpoint() FROM PUBLIC;
