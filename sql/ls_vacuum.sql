-- ls_vacuum: VACUUM and ANALYZE on leanstore tables, seen through the
-- statistics views and pg_class.
SET max_parallel_workers_per_gather = 0;
-- fillfactor leaves room on heap pages so that heap's HOT updates are predictable;
-- every update goes through the hot tier (one made in the cold tier, past
-- leanstore.bulk_load_rows cold rows, moves its row: not counted as HOT)
SET leanstore.bulk_load_rows = 0;
CREATE TABLE vac_t (id int PRIMARY KEY, v int, pad text) USING leanstore WITH (fillfactor = 50);
INSERT INTO vac_t SELECT g, g, 'p' FROM generate_series(1, 1000) g;
-- updates of a non-indexed column (HOT), of the indexed key, and deletes
UPDATE vac_t SET v = v + 1 WHERE id <= 100;
UPDATE vac_t SET id = id + 10000 WHERE id BETWEEN 501 AND 550;
DELETE FROM vac_t WHERE id BETWEEN 801 AND 1000;
SELECT pg_stat_force_next_flush();
-- a rolled-back insert counts as inserted (and dead), as on heap
BEGIN;
INSERT INTO vac_t SELECT g, g, 'x' FROM generate_series(20001, 20010) g;
ROLLBACK;
SELECT pg_stat_force_next_flush();
SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, seq_scan > 0 AS seq_scanned
FROM pg_stat_user_tables WHERE relname = 'vac_t';

SELECT relfrozenxid AS frozen_before FROM pg_class WHERE relname = 'vac_t' \gset
SELECT txid_current() IS NOT NULL AS burn_xid;
SELECT txid_current() IS NOT NULL AS burn_xid;
SELECT txid_current() IS NOT NULL AS burn_xid;
-- the log still names those xids (replay decides such records by clog):
-- two checkpoints move it past them, and then relfrozenxid may pass them
SELECT leanstore_checkpoint() AND leanstore_checkpoint() AS log_moved;
VACUUM (FREEZE) vac_t;
SELECT pg_stat_force_next_flush();
SELECT n_live_tup, n_dead_tup, vacuum_count, last_vacuum IS NOT NULL AS vacuumed
FROM pg_stat_user_tables WHERE relname = 'vac_t';
-- VACUUM removed the index entries of dead rows: the index holds one entry per live row
SELECT c.reltuples AS index_entries FROM pg_class c WHERE c.relname = 'vac_t_pkey';
SELECT reltuples AS table_rows FROM pg_class WHERE relname = 'vac_t';
-- relfrozenxid advanced and is recent
SELECT age(relfrozenxid) < age(:'frozen_before'::xid) AS frozenxid_advanced,
       age(relfrozenxid) < 100 AS frozenxid_recent
FROM pg_class WHERE relname = 'vac_t';
SET enable_seqscan = off;
SELECT count(*), sum(id) FROM vac_t WHERE id > 0;
RESET enable_seqscan;
SELECT count(*), sum(id), sum(v) FROM vac_t;

-- ANALYZE
CREATE TABLE ana_t (id int, cat int, t text) USING leanstore;
INSERT INTO ana_t SELECT g, g % 10, CASE WHEN g % 4 = 0 THEN NULL ELSE 't' || (g % 50) END
FROM generate_series(1, 5000) g;
-- flush this backend's counters first, so that ANALYZE's report comes last
SELECT pg_stat_force_next_flush();
SELECT reltuples FROM pg_class WHERE relname = 'ana_t';
ANALYZE ana_t;
SELECT reltuples FROM pg_class WHERE relname = 'ana_t';
SELECT attname, null_frac, n_distinct FROM pg_stats WHERE tablename = 'ana_t' ORDER BY attname;
SELECT pg_stat_force_next_flush();
SELECT analyze_count, last_analyze IS NOT NULL AS analyzed, n_live_tup, n_mod_since_analyze
FROM pg_stat_user_tables WHERE relname = 'ana_t';
-- the planner uses the statistics: estimated rows of an equality filter
EXPLAIN (COSTS OFF) SELECT * FROM ana_t WHERE cat = 3;
CREATE FUNCTION ls_estimated_rows(q text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN ' || q LOOP
    RETURN (regexp_match(line, 'rows=(\d+)'))[1]::int;
  END LOOP;
END $$;
SELECT ls_estimated_rows('SELECT * FROM ana_t WHERE cat = 3') AS cat3_rows,
       ls_estimated_rows('SELECT * FROM ana_t WHERE t IS NULL') AS null_rows;
-- VACUUM ANALYZE after deleting most rows
DELETE FROM ana_t WHERE id > 1000;
SELECT pg_stat_force_next_flush();
VACUUM ANALYZE ana_t;
SELECT reltuples FROM pg_class WHERE relname = 'ana_t';
SELECT pg_stat_force_next_flush();
SELECT n_live_tup, n_dead_tup, vacuum_count, analyze_count FROM pg_stat_user_tables WHERE relname = 'ana_t';
-- VACUUM of an empty table
CREATE TABLE vac_empty (a int) USING leanstore;
VACUUM vac_empty;
VACUUM (ANALYZE, VERBOSE false) vac_empty;
SELECT reltuples <= 0 AS empty_reltuples FROM pg_class WHERE relname = 'vac_empty';
DROP TABLE vac_t, ana_t, vac_empty;
DROP FUNCTION ls_estimated_rows(text);

-- VACUUM (PARALLEL n) of a temporary table warns as on heap; of a regular
-- table it runs (index cleanup in this process)
CREATE TEMP TABLE vac_tmp (a int PRIMARY KEY) USING leanstore;
CREATE INDEX vac_tmp_a ON vac_tmp (a);
INSERT INTO vac_tmp SELECT generate_series(1, 100);
DELETE FROM vac_tmp WHERE a % 2 = 0;
VACUUM (PARALLEL 1) vac_tmp;
VACUUM (PARALLEL 0) vac_tmp;
SELECT count(*) FROM vac_tmp;
DROP TABLE vac_tmp;
CREATE TABLE vac_par (a int PRIMARY KEY, b int) USING leanstore;
CREATE INDEX vac_par_b ON vac_par (b);
INSERT INTO vac_par SELECT g, g FROM generate_series(1, 1000) g;
DELETE FROM vac_par WHERE a <= 500;
VACUUM (PARALLEL 2) vac_par;
SELECT count(*), min(a) FROM vac_par;
DROP TABLE vac_par;
