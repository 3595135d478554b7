-- ls_constraints: indexes, constraints, triggers, foreign keys, ON CONFLICT,
-- cursors, prepared statements and row locks in one session.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE c_t (id int PRIMARY KEY, email text NOT NULL, qty int CHECK (qty >= 0), active bool DEFAULT true) USING leanstore;
INSERT INTO c_t SELECT g, 'User' || g || '@Example.com', g % 5, g % 4 <> 0 FROM generate_series(1, 1000) g;

-- unique btree, expression and partial indexes
CREATE UNIQUE INDEX c_t_email ON c_t (email);
CREATE INDEX c_t_lower ON c_t (lower(email));
CREATE INDEX c_t_inactive ON c_t (qty) WHERE NOT active;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM c_t WHERE lower(email) = 'user42@example.com';
SELECT id FROM c_t WHERE lower(email) = 'user42@example.com';
EXPLAIN (COSTS OFF) SELECT count(*) FROM c_t WHERE NOT active AND qty = 4;
SELECT count(*) FROM c_t WHERE NOT active AND qty = 4;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- constraint violations
INSERT INTO c_t VALUES (1, 'x@y', 1);
INSERT INTO c_t VALUES (1001, 'User1@Example.com', 1);
INSERT INTO c_t VALUES (1001, NULL, 1);
INSERT INTO c_t VALUES (1001, 'ok@x', -1);
UPDATE c_t SET qty = -5 WHERE id = 10;
UPDATE c_t SET email = 'User11@Example.com' WHERE id = 10;
SELECT count(*) FROM c_t;
-- a unique index cannot be built over duplicates; CONCURRENTLY works on leanstore
CREATE UNIQUE INDEX c_t_qty_unique ON c_t (qty);
CREATE INDEX CONCURRENTLY c_t_qty_conc ON c_t (qty, id);
SELECT indisvalid, indisready FROM pg_index WHERE indexrelid = 'c_t_qty_conc'::regclass;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id FROM c_t WHERE qty = 3 AND id < 30 ORDER BY qty, id;
RESET enable_seqscan;
RESET enable_bitmapscan;
CREATE UNIQUE INDEX CONCURRENTLY c_t_qty_conc_bad ON c_t (qty);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'c_t_qty_conc_bad'::regclass;
DROP INDEX c_t_qty_conc_bad;
REINDEX TABLE c_t;
REINDEX INDEX CONCURRENTLY c_t_email;
SELECT id FROM c_t WHERE email = 'User77@Example.com';
-- a deferred unique constraint
CREATE TABLE c_def (id int, pos int UNIQUE DEFERRABLE INITIALLY DEFERRED) USING leanstore;
INSERT INTO c_def VALUES (1, 1), (2, 2), (3, 3);
UPDATE c_def SET pos = pos + 1;
SELECT * FROM c_def ORDER BY id;
-- checked at commit only
BEGIN;
UPDATE c_def SET pos = 3 WHERE id = 1;
SELECT count(*) FROM c_def WHERE pos = 3;
COMMIT;
SELECT * FROM c_def ORDER BY id;
-- exclusion constraint
CREATE TABLE c_excl (room int, during int4range, EXCLUDE USING gist (during WITH &&)) USING leanstore;
INSERT INTO c_excl VALUES (1, '[1,5)'), (1, '[5,9)');
INSERT INTO c_excl VALUES (2, '[4,6)');

-- triggers: BEFORE row (modifies the row), AFTER row (audit), statement with transition tables
CREATE TABLE c_audit (op text, id int, old_qty int, new_qty int) USING leanstore;
CREATE FUNCTION c_before() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.email := lower(NEW.email);
  RETURN NEW;
END $$;
CREATE FUNCTION c_after() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO c_audit VALUES (TG_OP, OLD.id, OLD.qty, NULL);
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO c_audit VALUES (TG_OP, NEW.id, OLD.qty, NEW.qty);
  ELSE
    INSERT INTO c_audit VALUES (TG_OP, NEW.id, NULL, NEW.qty);
  END IF;
  RETURN NULL;
END $$;
CREATE FUNCTION c_stmt() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE n int; s int;
BEGIN
  SELECT count(*), sum(qty) INTO n, s FROM new_rows;
  RAISE NOTICE 'statement trigger: % new rows, qty sum %', n, s;
  RETURN NULL;
END $$;
CREATE TRIGGER c_t_before BEFORE INSERT OR UPDATE ON c_t FOR EACH ROW EXECUTE FUNCTION c_before();
CREATE TRIGGER c_t_after AFTER INSERT OR UPDATE OR DELETE ON c_t FOR EACH ROW EXECUTE FUNCTION c_after();
CREATE TRIGGER c_t_stmt AFTER UPDATE ON c_t REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION c_stmt();
INSERT INTO c_t VALUES (2000, 'MiXeD@CaSe', 3);
UPDATE c_t SET qty = qty + 1 WHERE id IN (1, 2, 2000);
DELETE FROM c_t WHERE id = 3;
SELECT id, email, qty FROM c_t WHERE id IN (1, 2, 2000) ORDER BY id;
SELECT * FROM c_audit ORDER BY op, id;
-- a trigger that suppresses the row
CREATE FUNCTION c_skip() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER c_t_skip BEFORE DELETE ON c_t FOR EACH ROW WHEN (OLD.id > 1500) EXECUTE FUNCTION c_skip();
DELETE FROM c_t WHERE id >= 999;
SELECT id FROM c_t WHERE id >= 999 ORDER BY id;
DROP TRIGGER c_t_before ON c_t;
DROP TRIGGER c_t_after ON c_t;
DROP TRIGGER c_t_stmt ON c_t;
DROP TRIGGER c_t_skip ON c_t;

-- foreign keys: leanstore -> leanstore, heap -> leanstore, leanstore -> heap
CREATE TABLE fk_parent (id int PRIMARY KEY, name text) USING leanstore;
CREATE TABLE fk_child (id int PRIMARY KEY, parent int REFERENCES fk_parent ON DELETE CASCADE ON UPDATE CASCADE) USING leanstore;
CREATE TABLE fk_heap_child (id int, parent int REFERENCES fk_parent ON DELETE RESTRICT) USING heap;
CREATE TABLE fk_heap_parent (id int PRIMARY KEY) USING heap;
CREATE TABLE fk_ls_child (id int, parent int REFERENCES fk_heap_parent ON DELETE SET NULL) USING leanstore;
INSERT INTO fk_parent SELECT g, 'p' || g FROM generate_series(1, 10) g;
INSERT INTO fk_child SELECT g, g % 10 + 1 FROM generate_series(1, 50) g;
INSERT INTO fk_heap_child VALUES (1, 1), (2, 2);
INSERT INTO fk_heap_parent VALUES (1), (2);
INSERT INTO fk_ls_child VALUES (1, 1), (2, 2), (3, NULL);
INSERT INTO fk_child VALUES (100, 42);
INSERT INTO fk_heap_child VALUES (3, 42);
INSERT INTO fk_ls_child VALUES (4, 42);
DELETE FROM fk_parent WHERE id = 1;
DELETE FROM fk_parent WHERE id = 5;
SELECT count(*) FROM fk_child WHERE parent = 5;
UPDATE fk_parent SET id = 60 WHERE id = 6;
SELECT count(*) FROM fk_child WHERE parent = 60;
UPDATE fk_parent SET name = 'renamed' WHERE id = 7;
DELETE FROM fk_heap_parent WHERE id = 2;
SELECT * FROM fk_ls_child ORDER BY id;
SELECT parent, count(*) FROM fk_child GROUP BY parent ORDER BY parent;
-- a foreign key added to a filled table is validated against it
CREATE TABLE fk_late (id int, parent int) USING leanstore;
INSERT INTO fk_late VALUES (1, 2), (2, 99);
ALTER TABLE fk_late ADD FOREIGN KEY (parent) REFERENCES fk_parent;
DELETE FROM fk_late WHERE parent = 99;
ALTER TABLE fk_late ADD FOREIGN KEY (parent) REFERENCES fk_parent;

-- ON CONFLICT
CREATE TABLE oc_t (k int PRIMARY KEY, v text, hits int DEFAULT 1) USING leanstore;
INSERT INTO oc_t VALUES (1, 'one'), (2, 'two');
INSERT INTO oc_t VALUES (1, 'uno') ON CONFLICT DO NOTHING;
INSERT INTO oc_t VALUES (1, 'uno'), (3, 'three') ON CONFLICT (k) DO NOTHING RETURNING k, v;
INSERT INTO oc_t VALUES (1, 'uno') ON CONFLICT (k) DO UPDATE SET v = excluded.v, hits = oc_t.hits + 1 RETURNING *;
INSERT INTO oc_t VALUES (2, 'dos') ON CONFLICT (k) DO UPDATE SET v = excluded.v WHERE oc_t.v = 'nomatch' RETURNING *;
INSERT INTO oc_t SELECT g % 5, 'bulk' || g FROM generate_series(1, 4) g
  ON CONFLICT (k) DO UPDATE SET hits = oc_t.hits + 10;
INSERT INTO oc_t VALUES (4, 'a'), (4, 'b') ON CONFLICT (k) DO UPDATE SET v = excluded.v;
SELECT * FROM oc_t ORDER BY k;
-- ON CONFLICT on a key freed in the same transaction
BEGIN;
DELETE FROM oc_t WHERE k = 3;
INSERT INTO oc_t VALUES (3, 'reinserted') ON CONFLICT (k) DO UPDATE SET v = 'conflict';
COMMIT;
SELECT * FROM oc_t WHERE k = 3;

-- cursors: scroll, backward, absolute, WHERE CURRENT OF
BEGIN;
DECLARE cur SCROLL CURSOR FOR SELECT id, qty FROM c_t WHERE id <= 20 ORDER BY id;
FETCH 3 FROM cur;
FETCH BACKWARD 2 FROM cur;
FETCH ABSOLUTE 10 FROM cur;
FETCH RELATIVE -3 FROM cur;
MOVE LAST IN cur;
FETCH PRIOR FROM cur;
FETCH FIRST FROM cur;
CLOSE cur;
-- a scrollable cursor straight over the table (no sort): backward gives the reverse of forward
CREATE FUNCTION c_scroll_check() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  c refcursor := 'c_plain';
  fwd int[] := '{}';
  bwd int[] := '{}';
  r record;
BEGIN
  OPEN c SCROLL FOR SELECT id FROM c_t WHERE qty = 2;
  LOOP
    FETCH NEXT FROM c INTO r;
    EXIT WHEN NOT FOUND;
    fwd := fwd || r.id;
  END LOOP;
  LOOP
    FETCH PRIOR FROM c INTO r;
    EXIT WHEN NOT FOUND;
    bwd := r.id || bwd;
  END LOOP;
  CLOSE c;
  RETURN format('%s rows, backward = forward: %s, sum %s', cardinality(fwd), fwd = bwd,
                (SELECT sum(x) FROM unnest(fwd) x));
END $$;
SELECT c_scroll_check();
-- UPDATE / DELETE WHERE CURRENT OF
DECLARE upd CURSOR FOR SELECT id, qty FROM c_t WHERE id BETWEEN 30 AND 33 ORDER BY id FOR UPDATE;
FETCH 1 FROM upd;
UPDATE c_t SET qty = 100 WHERE CURRENT OF upd;
FETCH 1 FROM upd;
DELETE FROM c_t WHERE CURRENT OF upd;
COMMIT;
SELECT id, qty FROM c_t WHERE id BETWEEN 30 AND 33 ORDER BY id;
-- a WITH HOLD cursor survives its transaction
BEGIN;
DECLARE hold_cur CURSOR WITH HOLD FOR SELECT id FROM c_t WHERE id > 995 ORDER BY id;
COMMIT;
FETCH ALL FROM hold_cur;
CLOSE hold_cur;

-- prepared statements (more than five executions: generic plans too)
PREPARE c_get(int) AS SELECT id, qty FROM c_t WHERE id = $1;
PREPARE c_bump(int) AS UPDATE c_t SET qty = qty + 1 WHERE id = $1 RETURNING qty;
PREPARE c_ins(int, text) AS INSERT INTO c_t (id, email, qty) VALUES ($1, $2, 0);
EXECUTE c_ins(5001, 'p1'); EXECUTE c_ins(5002, 'p2'); EXECUTE c_ins(5003, 'p3');
EXECUTE c_ins(5004, 'p4'); EXECUTE c_ins(5005, 'p5'); EXECUTE c_ins(5006, 'p6');
EXECUTE c_bump(5001); EXECUTE c_bump(5001); EXECUTE c_bump(5001);
EXECUTE c_bump(5001); EXECUTE c_bump(5001); EXECUTE c_bump(5001);
EXECUTE c_bump(5001);
EXECUTE c_get(5001); EXECUTE c_get(5002); EXECUTE c_get(5003);
EXECUTE c_get(5004); EXECUTE c_get(5005); EXECUTE c_get(5006);
EXECUTE c_get(424242);
DEALLOCATE ALL;

-- row locks in a single session
BEGIN;
SELECT id FROM c_t WHERE id IN (40, 41) ORDER BY id FOR UPDATE;
SELECT id FROM c_t WHERE id = 42 FOR NO KEY UPDATE;
SELECT id FROM c_t WHERE id = 43 FOR SHARE;
SELECT id FROM c_t WHERE id = 44 FOR KEY SHARE;
UPDATE c_t SET qty = 4 WHERE id IN (40, 42, 43, 44);
SELECT id, qty FROM c_t WHERE id BETWEEN 40 AND 44 ORDER BY id;
COMMIT;
SELECT id, qty FROM c_t WHERE id BETWEEN 40 AND 44 ORDER BY id;
SELECT count(*), sum(id), sum(qty) FROM c_t;

DROP TABLE c_t, c_def, c_excl, c_audit, fk_child, fk_heap_child, fk_ls_child, fk_late, fk_parent, fk_heap_parent, oc_t;
DROP FUNCTION c_before(), c_after(), c_stmt(), c_skip(), c_scroll_check();
