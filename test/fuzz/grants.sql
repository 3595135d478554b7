-- test/fuzz/grants.sql: the fuzzer is an ordinary role that may change the data
GRANT ALL ON ALL TABLES IN SCHEMA public TO fuzzer;
GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO fuzzer;
GRANT CREATE ON SCHEMA public TO fuzzer;
ALTER ROLE fuzzer SET statement_timeout = '1s';
ALTER ROLE fuzzer SET default_table_access_method = leanstore;
-- leanstore's own functions get random arguments too
GRANT EXECUTE ON FUNCTION leanstore_stats(), leanstore_table_stats(regclass),
	leanstore_verify(regclass) TO fuzzer;
