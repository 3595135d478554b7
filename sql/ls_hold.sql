-- Epochs and row latches are held like LWLocks (src/pg/hold.c): interrupts
-- are held while an epoch is held, and one still held at commit fails the
-- transaction in the asserting build that test/run uses.
CREATE FUNCTION ls_test_hold(text) RETURNS void
    AS 'leanstore', 'leanstore_test_hold' LANGUAGE C STRICT;
SELECT ls_test_hold('hold');
-- a leaked epoch is reported at commit, not released silently
SELECT ls_test_hold('leak-epoch');
-- the failed commit released it: the backend goes on normally
CREATE TABLE ls_hold_t (id int PRIMARY KEY, v text) USING leanstore;
INSERT INTO ls_hold_t SELECT g, 'v' || g FROM generate_series(1, 10) g;
BEGIN;
SELECT ls_test_hold('leak-epoch');
SELECT count(*) FROM ls_hold_t;
COMMIT;
UPDATE ls_hold_t SET v = 'x' WHERE id = 1;
SELECT count(*), count(*) FILTER (WHERE v = 'x') FROM ls_hold_t;
SELECT ls_test_hold('nonsense');
DROP TABLE ls_hold_t;
DROP FUNCTION ls_test_hold(text);
