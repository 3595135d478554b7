-- System columns of the rows an INSERT or UPDATE just wrote, as RETURNING
-- and later reads see them (xmin is this transaction, xmax unset, cmin the
-- command that wrote the row).
CREATE TABLE sys_t (a int, b text) USING leanstore;
CREATE INDEX sys_t_b ON sys_t (b);

BEGIN;
INSERT INTO sys_t VALUES (1, 'one')
  RETURNING xmin = pg_current_xact_id()::xid AS xmin_is_mine, xmax, cmin;
INSERT INTO sys_t VALUES (2, 'two'), (3, 'three')
  RETURNING a, xmin = pg_current_xact_id()::xid AS xmin_is_mine, xmax, cmin;
-- an update that keeps the row id (no indexed column changes)
UPDATE sys_t SET a = a + 10 WHERE a = 1
  RETURNING a, xmin = pg_current_xact_id()::xid AS xmin_is_mine, xmax, cmin;
-- an update that changes an indexed column (new row id)
UPDATE sys_t SET b = 'TWO' WHERE a = 2
  RETURNING a, b, xmin = pg_current_xact_id()::xid AS xmin_is_mine, xmax, cmin;
SELECT a, b, xmin = pg_current_xact_id()::xid AS xmin_is_mine, xmax, cmin
  FROM sys_t ORDER BY a;
COMMIT;

-- in a new transaction: RETURNING shows the new xmin, reads show the old one
BEGIN;
UPDATE sys_t SET a = a + 100 WHERE a = 3
  RETURNING a, xmin = pg_current_xact_id()::xid AS xmin_is_mine, xmax, cmin;
SELECT a, xmin = pg_current_xact_id()::xid AS xmin_is_mine, xmax
  FROM sys_t ORDER BY a;
ROLLBACK;
SELECT a, b FROM sys_t ORDER BY a;
DROP TABLE sys_t;
