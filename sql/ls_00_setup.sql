-- ls_00_setup: runs first (pg_regress order); creates the extension that
-- every later test uses.
CREATE EXTENSION leanstore;
SELECT amname, amtype FROM pg_am WHERE amname = 'leanstore';
-- The test cluster preloads the library (test/regress.conf).
SELECT current_setting('shared_preload_libraries') LIKE '%leanstore%' AS preloaded;
-- Helpers of later tests (the leanstore worker packs rows in the
-- background): wait_table_stat(rel, stat, lo, hi) waits, 120 s at most,
-- until leanstore_table_stats(rel).stat lies in [lo, hi]; wait_packed(rel,
-- keep) until at most keep rows of rel are hot.
CREATE FUNCTION wait_table_stat(rel regclass, stat text, lo bigint, hi bigint) RETURNS bool
LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz := clock_timestamp();
  got bigint;
BEGIN
  LOOP
    EXECUTE format('SELECT %I FROM leanstore_table_stats(%L)', stat, rel) INTO got;
    EXIT WHEN got BETWEEN lo AND hi;
    IF clock_timestamp() - t0 > interval '120 s' THEN
      RAISE EXCEPTION '% of % is % after 120 s, not in [%, %]', stat, rel, got, lo, hi;
    END IF;
    PERFORM pg_sleep(0.02);
  END LOOP;
  RETURN true;
END $$;
CREATE FUNCTION wait_packed(rel regclass, keep bigint DEFAULT 0) RETURNS bool
LANGUAGE sql AS $$ SELECT wait_table_stat(rel, 'hot_rows', 0, keep) $$;
