-- ls_subxact: savepoints, ROLLBACK TO, PL/pgSQL exception blocks, aborted transactions.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE sx_t (id int PRIMARY KEY, v text, n int) USING leanstore;
INSERT INTO sx_t SELECT g, 'v' || g, 0 FROM generate_series(1, 10) g;

-- an aborted transaction leaves nothing
BEGIN;
INSERT INTO sx_t VALUES (100, 'aborted', 0);
UPDATE sx_t SET n = 99 WHERE id <= 5;
DELETE FROM sx_t WHERE id > 8;
ROLLBACK;
SELECT count(*), sum(n), max(id) FROM sx_t;

-- savepoints: insert, update, delete undone at ROLLBACK TO, kept after RELEASE
BEGIN;
INSERT INTO sx_t VALUES (11, 'top', 0);
SAVEPOINT a;
INSERT INTO sx_t VALUES (12, 'in a', 0);
UPDATE sx_t SET n = 1 WHERE id = 1;
DELETE FROM sx_t WHERE id = 2;
SELECT id, v, n FROM sx_t WHERE id IN (1, 2, 11, 12) ORDER BY id;
ROLLBACK TO a;
SELECT id, v, n FROM sx_t WHERE id IN (1, 2, 11, 12) ORDER BY id;
SAVEPOINT b;
UPDATE sx_t SET n = 2 WHERE id = 1;
RELEASE b;
SAVEPOINT c;
DELETE FROM sx_t WHERE id = 3;
ROLLBACK TO c;
DELETE FROM sx_t WHERE id = 4;
COMMIT;
SELECT id, v, n FROM sx_t ORDER BY id;

-- nested savepoints updating the same row at every level
BEGIN;
UPDATE sx_t SET n = 10 WHERE id = 5;
SAVEPOINT l1;
UPDATE sx_t SET n = 11 WHERE id = 5;
SAVEPOINT l2;
UPDATE sx_t SET n = 12 WHERE id = 5;
SAVEPOINT l3;
UPDATE sx_t SET n = 13, id = 50 WHERE id = 5;
SELECT id, n FROM sx_t WHERE id IN (5, 50);
ROLLBACK TO l2;
SELECT id, n FROM sx_t WHERE id IN (5, 50);
UPDATE sx_t SET n = n + 100 WHERE id = 5;
RELEASE l1;
SELECT id, n FROM sx_t WHERE id IN (5, 50);
COMMIT;
SELECT id, n FROM sx_t WHERE id IN (5, 50);
-- the index agrees with the table after the rolled-back key update
SET enable_seqscan = off;
SELECT id, n FROM sx_t WHERE id = 5;
SELECT count(*) FROM sx_t WHERE id = 50;
RESET enable_seqscan;

-- a row inserted in a subtransaction that is rolled back, then the key reused
BEGIN;
SAVEPOINT s;
INSERT INTO sx_t VALUES (20, 'first', 0);
ROLLBACK TO s;
INSERT INTO sx_t VALUES (20, 'second', 0);
COMMIT;
SELECT * FROM sx_t WHERE id = 20;

-- an error inside a transaction, recovered with ROLLBACK TO
BEGIN;
SAVEPOINT before_error;
INSERT INTO sx_t VALUES (1, 'duplicate', 0);
ROLLBACK TO before_error;
INSERT INTO sx_t VALUES (21, 'after error', 0);
COMMIT;
SELECT id, v FROM sx_t WHERE id IN (1, 21) ORDER BY id;

-- PL/pgSQL exception blocks (each block is a subtransaction)
CREATE FUNCTION sx_work(iterations int, base int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  ok int := 0;
BEGIN
  FOR i IN 1..iterations LOOP
    BEGIN
      INSERT INTO sx_t VALUES (base + i, 'loop', i);
      UPDATE sx_t SET n = n + 1 WHERE id = 1;
      IF i % 3 = 0 THEN
        RAISE EXCEPTION 'undo %', i;
      END IF;
      ok := ok + 1;
    EXCEPTION WHEN raise_exception THEN
      NULL;
    END;
  END LOOP;
  RETURN ok;
END $$;
SELECT sx_work(30, 1000);
SELECT count(*), sum(n) FROM sx_t WHERE id > 1000;
SELECT n FROM sx_t WHERE id = 1;
-- more subtransactions than a snapshot can list (subxid overflow)
SELECT sx_work(200, 2000) AS kept;
SELECT count(*), sum(n) FROM sx_t WHERE id > 2000;
SELECT n FROM sx_t WHERE id = 1;
-- a unique violation caught in PL/pgSQL leaves the table as before the block
DO $$
BEGIN
  BEGIN
    UPDATE sx_t SET v = 'changed in block' WHERE id = 6;
    INSERT INTO sx_t VALUES (7, 'dup', 0);
  EXCEPTION WHEN unique_violation THEN
    RAISE NOTICE 'caught: %', SQLERRM;
  END;
END $$;
SELECT id, v FROM sx_t WHERE id IN (6, 7) ORDER BY id;
-- nested exception blocks
DO $$
BEGIN
  UPDATE sx_t SET v = 'outer' WHERE id = 8;
  BEGIN
    UPDATE sx_t SET v = 'middle' WHERE id = 8;
    BEGIN
      UPDATE sx_t SET v = 'inner' WHERE id = 8;
      PERFORM 1 / 0;
    EXCEPTION WHEN division_by_zero THEN
      NULL;
    END;
  END;
END $$;
SELECT id, v FROM sx_t WHERE id = 8;
-- a whole transaction aborted by an error
BEGIN;
UPDATE sx_t SET v = 'lost' WHERE id = 9;
SELECT 1 / 0;
COMMIT;
SELECT id, v FROM sx_t WHERE id = 9;
-- a cursor opened in a subtransaction that is rolled back
BEGIN;
SAVEPOINT cs;
DECLARE sx_cur CURSOR FOR SELECT id FROM sx_t WHERE id < 10 ORDER BY id;
FETCH 2 FROM sx_cur;
ROLLBACK TO cs;
SELECT count(*) FROM sx_t WHERE id < 10;
COMMIT;
-- final state
SELECT count(*), sum(id), sum(n), md5(string_agg(id || v || n, ',' ORDER BY id)) FROM sx_t;
DROP TABLE sx_t;
DROP FUNCTION sx_work(int, int);
