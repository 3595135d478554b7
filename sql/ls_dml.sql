-- ls_dml: every DML form on leanstore tables.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE dml_t (id int PRIMARY KEY, v text, n numeric) USING leanstore;

-- multi-row VALUES, with NULLs
INSERT INTO dml_t VALUES (1, 'a', 1.5), (2, 'b', NULL), (3, NULL, 3);
-- INSERT ... SELECT
INSERT INTO dml_t SELECT g, 'v' || g, g * 0.5 FROM generate_series(4, 100) g;
SELECT count(*), sum(id), count(v), count(n), sum(n) FROM dml_t;
-- RETURNING
INSERT INTO dml_t VALUES (101, 'r', 0) RETURNING *;
INSERT INTO dml_t VALUES (102, 's', 7) RETURNING id * 2 AS twice, v || 'x' AS vx;
-- an INSERT ... SELECT from the table itself must not see its own rows
INSERT INTO dml_t SELECT id + 1000, v, n FROM dml_t WHERE id <= 10;
SELECT count(*) FROM dml_t WHERE id > 1000;

-- COPY FROM STDIN (text and csv), then read back
COPY dml_t FROM STDIN;
201	c1	1
202	\N	2
203	c3	\N
\.
COPY dml_t (id, v) FROM STDIN WITH (FORMAT csv);
204,"x,y"
205,
\.
SELECT * FROM dml_t WHERE id BETWEEN 200 AND 300 ORDER BY id;
-- COPY TO STDOUT (a query, and a whole one-row table)
COPY (SELECT * FROM dml_t WHERE id <= 5 ORDER BY id) TO STDOUT;
COPY (SELECT * FROM dml_t WHERE id BETWEEN 201 AND 205 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER);
CREATE TABLE dml_one (a int, b text) USING leanstore;
INSERT INTO dml_one VALUES (42, 'only row');
COPY dml_one TO STDOUT;
-- a larger table read back through an aggregate
CREATE TABLE dml_big (id int, payload text) USING leanstore;
INSERT INTO dml_big SELECT g, repeat(chr(65 + g % 26), g % 50) FROM generate_series(1, 5000) g;
SELECT count(*), sum(id), sum(length(payload)), md5(string_agg(payload, ',' ORDER BY id)) FROM dml_big;

-- UPDATE (non-indexed column: the row keeps its identity)
UPDATE dml_t SET v = v || '!' WHERE id % 10 = 0;
SELECT id, v FROM dml_t WHERE id % 10 = 0 AND id < 100 ORDER BY id;
-- UPDATE ... RETURNING (through a CTE so the output is ordered)
WITH u AS (UPDATE dml_t SET n = n + 1 WHERE id < 5 RETURNING id, v, n)
SELECT * FROM u ORDER BY id;
-- each row is updated once per statement
UPDATE dml_t SET n = coalesce(n, 0) + 100;
SELECT count(*), sum(n) FROM dml_t;
-- UPDATE of the indexed key (the row gets a new identity; the index must follow)
UPDATE dml_t SET id = id + 2000 WHERE id BETWEEN 50 AND 59;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id, v FROM dml_t WHERE id BETWEEN 2045 AND 2060 ORDER BY id;
SELECT id FROM dml_t WHERE id BETWEEN 48 AND 61 ORDER BY id;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- UPDATE the same row several times in one transaction
BEGIN;
UPDATE dml_t SET v = 'one' WHERE id = 1;
UPDATE dml_t SET v = v || '-two' WHERE id = 1;
UPDATE dml_t SET v = v || '-three' WHERE id = 1;
SELECT id, v FROM dml_t WHERE id = 1;
COMMIT;
SELECT id, v FROM dml_t WHERE id = 1;

-- UPDATE ... FROM
CREATE TABLE dml_src (id int, delta numeric) USING leanstore;
INSERT INTO dml_src VALUES (1, 10), (2, -20), (3, 30), (4, -40), (999, 1);
UPDATE dml_t t SET n = t.n + s.delta FROM dml_src s WHERE s.id = t.id;
SELECT id, n FROM dml_t WHERE id <= 4 ORDER BY id;
-- DELETE ... USING
DELETE FROM dml_t t USING dml_src s WHERE t.id = s.id AND s.delta < 0;
SELECT id FROM dml_t WHERE id <= 4 ORDER BY id;
-- DELETE ... RETURNING
WITH d AS (DELETE FROM dml_t WHERE id BETWEEN 90 AND 95 RETURNING id, v)
SELECT * FROM d ORDER BY id;
-- delete and re-insert the same key in one transaction
BEGIN;
DELETE FROM dml_t WHERE id = 3;
INSERT INTO dml_t VALUES (3, 'again', 33);
COMMIT;
SELECT * FROM dml_t WHERE id = 3;
-- data-modifying CTEs across two leanstore tables
WITH moved AS (DELETE FROM dml_t WHERE id BETWEEN 80 AND 84 RETURNING id, n)
INSERT INTO dml_src SELECT id, n FROM moved;
SELECT * FROM dml_src ORDER BY id, delta;

-- MERGE
MERGE INTO dml_t t
USING (VALUES (1, 'm1'), (500, 'm500'), (6, NULL), (7, 'm7')) AS s(id, v)
ON t.id = s.id
WHEN MATCHED AND s.v IS NULL THEN DELETE
WHEN MATCHED THEN UPDATE SET v = s.v, n = -1
WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, 0);
SELECT * FROM dml_t WHERE id IN (1, 6, 7, 500) ORDER BY id;
MERGE INTO dml_t t
USING dml_src s ON t.id = s.id
WHEN NOT MATCHED AND s.id < 900 THEN INSERT VALUES (s.id + 3000, 'from src', s.delta)
WHEN MATCHED THEN DO NOTHING;
SELECT * FROM dml_t WHERE id > 3000 ORDER BY id;

-- INSERT ... DEFAULT VALUES
CREATE TABLE dml_def (id serial, created text DEFAULT 'd', x int) USING leanstore;
INSERT INTO dml_def DEFAULT VALUES;
INSERT INTO dml_def DEFAULT VALUES;
INSERT INTO dml_def (x) VALUES (5);
SELECT * FROM dml_def ORDER BY id;

-- final state
SELECT count(*), sum(id), sum(n), count(v), md5(string_agg(id || ':' || coalesce(v, '-') || ':' || coalesce(n::text, '-'), ',' ORDER BY id)) FROM dml_t;
DROP TABLE dml_t, dml_src, dml_one, dml_big, dml_def;
