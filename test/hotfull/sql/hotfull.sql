-- hotfull: this server has the smallest hot tier (test/hotfull/regress.conf).
-- Filling it makes an insert fail with an error naming leanstore.hot_memory;
-- the table stays intact and usable, and TRUNCATE gives the memory back.
CREATE EXTENSION leanstore;
SHOW leanstore.hot_memory;
CREATE TABLE hf_t (id int, pad text) USING leanstore;
-- insert in batches of 1000 rows (each in its own subtransaction) until an
-- insert fails; remember the rows that made it and the error
CREATE TABLE hf_result (batches int, rows_kept bigint, sqlstate text, message text, hint text);
DO $$
DECLARE
  b int := 0;
  st text; msg text; hnt text;
BEGIN
  LOOP
    BEGIN
      INSERT INTO hf_t SELECT b * 1000 + g, repeat('x', 200) FROM generate_series(1, 1000) g;
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hnt = PG_EXCEPTION_HINT;
      INSERT INTO hf_result VALUES (b, b * 1000::bigint, st, msg, hnt);
      RETURN;
    END;
    b := b + 1;
    IF b > 100000 THEN
      RAISE EXCEPTION 'the hot tier never filled up (% rows)', b * 1000;
    END IF;
  END LOOP;
END $$;
SELECT batches > 10 AS filled_some, sqlstate,
       message LIKE 'leanstore hot tier is full%' AS full_message,
       hint LIKE '%leanstore.hot_memory%' AS hint_names_guc
FROM hf_result;
-- the rows inserted before the error are all there, the failed batch is not
SELECT count(*) = (SELECT rows_kept FROM hf_result) AS intact,
       min(id) = 1 AS first_row, max(id) = (SELECT rows_kept FROM hf_result) AS last_row
FROM hf_t;
-- the error as the user sees it
SELECT message, hint FROM hf_result;
-- TRUNCATE releases the memory: the table takes rows again
TRUNCATE hf_t;
INSERT INTO hf_t SELECT g, repeat('z', 200) FROM generate_series(1, 5000) g;
SELECT count(*), sum(id) FROM hf_t;
-- DROP releases it as well
DROP TABLE hf_t;
CREATE TABLE hf_t2 (id int, pad text) USING leanstore;
INSERT INTO hf_t2 SELECT g, repeat('w', 200) FROM generate_series(1, 5000) g;
SELECT count(*) FROM hf_t2;
DROP TABLE hf_t2, hf_result;
