-- test/fuzz/grants.sql: the fuzzer is an ordinary role that may change the data
GRANT ALL ON ALL TABLES IN SCHEMA public TO fuzzer;
GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO fuzzer;
GRANT CREATE ON SCHEMA public TO fuzzer;
ALTER ROLE fuzzer SET statement_timeout = '1s';
ALTER ROLE fuzzer SET default_table_access_method = leanstore;
