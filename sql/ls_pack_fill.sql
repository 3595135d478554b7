-- ls_pack_fill: rows pack moves into the cold tree behind younger ones
-- fill their leaves.  A batch INSERT keeps its first
-- leanstore.bulk_load_rows rows hot and writes the rest into the tree at
-- once (appended: full leaves); pack later inserts the hot ones, ascending,
-- into the gap below.  Split evenly, every leaf of such a run stayed half
-- full (about 1.45 times the pages of an ascending load); the B+-tree now
-- splits right after the run (src/btree/README.md "Split").
-- It needs rows to go cold at once (regress-cold: leanstore.pack_eager).
SELECT NOT current_setting('leanstore.pack_eager')::bool AS hot \gset
\if :hot
\echo 'skipped: rows stay hot in this configuration'
\quit
\endif
SET max_parallel_workers_per_gather = 0;
-- the reference: every row but the first appended to the tree in order
CREATE TABLE pf_ref (k bigint, n bigint, f text) USING leanstore;
SET leanstore.bulk_load_rows = 1;
INSERT INTO pf_ref SELECT i, 0, repeat(md5(i::text), 6) FROM generate_series(0, 59999) i;
SELECT wait_packed('pf_ref');
-- six batches of 10000 rows: 5000 hot (packed into a gap), 5000 appended
CREATE TABLE pf (k bigint, n bigint, f text) USING leanstore;
SET leanstore.bulk_load_rows = 5000;
DO $$
BEGIN
  FOR b IN 0..5 LOOP
    INSERT INTO pf SELECT i, 0, repeat(md5(i::text), 6)
      FROM generate_series(b * 10000, b * 10000 + 9999) i;
    COMMIT;
    PERFORM wait_packed('pf');
  END LOOP;
END $$;
SELECT count(*), sum(k) FROM pf;
SELECT cold_rows FROM leanstore_table_stats('pf');
-- within 10% of the ascending load's pages (even splits: about 45% more)
SELECT p.cold_pages <= r.cold_pages * 1.1 AS leaves_full,
       r.cold_pages > 300 AS reference_sane
  FROM leanstore_table_stats('pf') p, leanstore_table_stats('pf_ref') r;
SELECT leanstore_verify('pf');
DROP TABLE pf, pf_ref;
