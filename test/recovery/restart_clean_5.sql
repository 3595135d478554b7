-- a cluster restored from the base backup taken while the server ran:
-- heap tables are there, leanstore tables are refused with a clear error
-- (their files were copied while they changed; their rows are not in
-- PostgreSQL's WAL)
SELECT count(*) FROM h_t1;
SELECT count(*) FROM t1;
TRUNCATE t1;
SELECT count(*) FROM t1;
