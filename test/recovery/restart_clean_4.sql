-- after a crash (immediate shutdown): the tables are lost, with an error
SELECT count(*) FROM h_t1;
SELECT count(*) FROM t1;
TRUNCATE t1;
SELECT count(*) FROM t1;
