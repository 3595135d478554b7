-- ls_00_setup: runs first (pg_regress order); creates the extension that
-- every later test uses.
CREATE EXTENSION leanstore;
SELECT amname, amtype FROM pg_am WHERE amname = 'leanstore';
-- The test cluster preloads the library (test/regress.conf).
SELECT current_setting('shared_preload_libraries') LIKE '%leanstore%' AS preloaded;
