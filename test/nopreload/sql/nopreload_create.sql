-- nopreload_create: this server does NOT have leanstore in
-- shared_preload_libraries. Creating the extension must fail with an error
-- that says so, and must leave nothing behind.
SELECT current_setting('shared_preload_libraries') = '' AS not_preloaded;
CREATE EXTENSION leanstore;
SELECT count(*) AS leftover_am FROM pg_am WHERE amname = 'leanstore';
SELECT count(*) AS leftover_ext FROM pg_extension WHERE extname = 'leanstore';
-- loading the library by hand fails the same way
LOAD 'leanstore';
-- and nothing can be stored in an access method of that name
CREATE TABLE np_t (a int) USING leanstore;
