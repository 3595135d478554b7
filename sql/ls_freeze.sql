-- The freeze rule for bulk-loaded cold rows (ddl.c ls_vacuum_cold_row): as
-- heap, VACUUM freezes a committed row only once its xmin precedes
-- FreezeLimit; a young one stays unfrozen and relfrozenxid stays at or
-- before its xmin.  VACUUM (FREEZE) freezes them all and advances it.
-- bulk_load_rows is set here, so the rows go cold under either config.
-- The first rows of a load stay hot: they are deleted again, so that only
-- cold rows carry the load's xid (hot rows follow ls_gc_freeze's rule).
CREATE TABLE ls_freeze_t (id int PRIMARY KEY, v text) USING leanstore;
-- one transaction: load ids lo..hi, return its xid
CREATE FUNCTION ls_freeze_load(lo int, hi int) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('leanstore.bulk_load_rows', '5', true);
    INSERT INTO ls_freeze_t SELECT g, 'v' || g FROM generate_series(-4, 0) g;
    INSERT INTO ls_freeze_t SELECT g, 'v' || g FROM generate_series(lo, hi) g;
    DELETE FROM ls_freeze_t WHERE id <= 0;
    RETURN txid_current();
END $$;
SELECT ls_freeze_load(1, 200) AS load_xid \gset
-- the load went into the cold tree
SELECT hot_rows < 200 AS some_rows_cold, cold_pages > 0 AS has_cold_pages
FROM leanstore_table_stats('ls_freeze_t');
-- a few transactions later: the load is older than OldestXmin, younger
-- than FreezeLimit (vacuum_freeze_min_age is 50 million)
SELECT txid_current() > :load_xid AS later;
SELECT txid_current() > :load_xid AS later;
VACUUM ls_freeze_t;
SELECT relfrozenxid::text::bigint <= :load_xid AS relfrozenxid_at_or_before_load,
       age(relfrozenxid) >= age(:'load_xid'::xid) AS age_at_least_loads
FROM pg_class WHERE relname = 'ls_freeze_t';
SELECT count(*), sum(id) FROM ls_freeze_t;
-- FREEZE: FreezeLimit is OldestXmin; every loaded row is frozen now, so
-- relfrozenxid passes the load's xid
-- the log still names those xids (replay decides such records by clog):
-- two checkpoints move it past them, and then relfrozenxid may pass them
SELECT leanstore_checkpoint() AND leanstore_checkpoint() AS log_moved;
VACUUM (FREEZE) ls_freeze_t;
SELECT relfrozenxid::text::bigint > :load_xid AS relfrozenxid_after_load,
       age(relfrozenxid) < age(:'load_xid'::xid) AS younger_than_load
FROM pg_class WHERE relname = 'ls_freeze_t';
SELECT count(*), sum(id) FROM ls_freeze_t;
SELECT leanstore_verify('ls_freeze_t');
-- a second load, then a plain VACUUM with vacuum_freeze_min_age = 0: the
-- rows' xmin precedes FreezeLimit (= OldestXmin), so it freezes them too
SELECT ls_freeze_load(201, 400) AS load2_xid \gset
SELECT txid_current() > :load2_xid AS later;
VACUUM ls_freeze_t;
SELECT relfrozenxid::text::bigint <= :load2_xid AS relfrozenxid_at_or_before_load2
FROM pg_class WHERE relname = 'ls_freeze_t';
-- the log still names those xids (replay decides such records by clog):
-- two checkpoints move it past them, and then relfrozenxid may pass them
SELECT leanstore_checkpoint() AND leanstore_checkpoint() AS log_moved;
SET vacuum_freeze_min_age = 0;
VACUUM ls_freeze_t;
RESET vacuum_freeze_min_age;
SELECT relfrozenxid::text::bigint > :load2_xid AS relfrozenxid_after_load2
FROM pg_class WHERE relname = 'ls_freeze_t';
SELECT count(*), sum(id) FROM ls_freeze_t;
SELECT leanstore_verify('ls_freeze_t');
-- leanstore_table_stats counts the row images: 400 loaded, freezing
-- rewrites them in place, VACUUM removes those of deleted rows
SELECT cold_rows FROM leanstore_table_stats('ls_freeze_t');
DELETE FROM ls_freeze_t WHERE id <= 50;
VACUUM ls_freeze_t;
SELECT cold_rows FROM leanstore_table_stats('ls_freeze_t');
SELECT cold_rows >= 350 AS all_tables_count FROM leanstore_stats();
DROP TABLE ls_freeze_t;
DROP FUNCTION ls_freeze_load(int, int);
