-- ls_fk_inplace: a table whose only AFTER row triggers are those of the
-- referenced side of foreign keys and of deferrable unique constraints
-- updates columns no index covers in place (the rowid stays, like heap's
-- HOT update), and those constraints still hold.  Until session 29 any
-- AFTER row trigger made every update move the row (a new rowid and an
-- entry in every index).  The referencing side (a table with a foreign key
-- of its own) and a user's AFTER row trigger still move it: OLD is
-- fetched by TID after the update, and the referencing side's check
-- compares it with NEW (an in-place chain would answer with NEW: a change
-- of the key went unchecked in a first version of this change).
CREATE TABLE fkp (id int PRIMARY KEY, name text) USING leanstore;
CREATE TABLE fkc (id int PRIMARY KEY, pid int REFERENCES fkp, note text) USING leanstore;
INSERT INTO fkp VALUES (1, 'a'), (2, 'b');
INSERT INTO fkc VALUES (10, 1, 'x'), (11, 2, 'y');
SELECT ctid AS c10 FROM fkc WHERE id = 10 \gset
SELECT ctid AS p1 FROM fkp WHERE id = 1 \gset
-- a non-key update of the referenced row stays in place, the referencing
-- row's moves
UPDATE fkc SET note = 'x2' WHERE id = 10;
UPDATE fkp SET name = 'a2' WHERE id = 1;
SELECT (SELECT ctid FROM fkc WHERE id = 10) = :'c10' AS child_in_place,
       (SELECT ctid FROM fkp WHERE id = 1) = :'p1' AS parent_in_place;
-- the referencing column (no index on it) is checked when it changes
UPDATE fkc SET pid = 3 WHERE id = 10;
UPDATE fkc SET pid = 2 WHERE id = 10;
SELECT pid, note FROM fkc WHERE id = 10;
-- the referenced row, updated in place, then deleted: still referenced
UPDATE fkp SET name = 'b2' WHERE id = 2;
DELETE FROM fkp WHERE id = 2;
-- twice in one transaction, the last value counts
BEGIN;
UPDATE fkc SET pid = 1 WHERE id = 10;
UPDATE fkc SET pid = 4 WHERE id = 10;
ROLLBACK;
SELECT pid FROM fkc WHERE id = 10;
-- the referenced side: deletes and key updates are still refused
DELETE FROM fkp WHERE id = 2;
UPDATE fkp SET id = 5 WHERE id = 2;
-- deferred checks see the row's newest version at commit
CREATE TABLE fkd (id int PRIMARY KEY, pid int REFERENCES fkp DEFERRABLE INITIALLY DEFERRED,
                  note text) USING leanstore;
BEGIN;
INSERT INTO fkd VALUES (1, 1, 'a');
UPDATE fkd SET pid = 99 WHERE id = 1;
UPDATE fkd SET note = 'b' WHERE id = 1;
COMMIT;
SELECT count(*) FROM fkd;
BEGIN;
INSERT INTO fkd VALUES (1, 99, 'a');
UPDATE fkd SET pid = 2 WHERE id = 1;
UPDATE fkd SET note = 'c' WHERE id = 1;
COMMIT;
SELECT * FROM fkd;
-- cascades reach children updated in place
CREATE TABLE fkcc (id int PRIMARY KEY, pid int REFERENCES fkp ON UPDATE CASCADE ON DELETE CASCADE,
                   note text) USING leanstore;
INSERT INTO fkcc VALUES (1, 1, 'a'), (2, 2, 'b');
UPDATE fkcc SET note = 'a2' WHERE id = 1;
UPDATE fkp SET id = 7 WHERE id = 1;
SELECT * FROM fkcc ORDER BY id;
DELETE FROM fkc WHERE pid = 7;
DELETE FROM fkd WHERE pid = 7;
DELETE FROM fkp WHERE id = 7;
SELECT * FROM fkcc ORDER BY id;
-- a deferrable unique key: swaps, an in-place update, a duplicate at commit
CREATE TABLE du (id int UNIQUE DEFERRABLE INITIALLY DEFERRED, v int) USING leanstore;
INSERT INTO du VALUES (1, 0), (2, 0);
BEGIN;
UPDATE du SET id = 3 - id;
UPDATE du SET v = v + 1;
COMMIT;
SELECT ctid AS d1 FROM du WHERE id = 1 \gset
UPDATE du SET v = v + 1 WHERE id = 1;
SELECT id, v, ctid = :'d1' AS in_place FROM du ORDER BY id;
BEGIN;
INSERT INTO du VALUES (1, 5);
UPDATE du SET v = 9 WHERE v = 5;
COMMIT;
SELECT * FROM du ORDER BY id;
-- a user's AFTER row trigger: the row moves, OLD and NEW are right
CREATE TABLE trg (id int PRIMARY KEY, v int) USING leanstore;
CREATE FUNCTION trg_show() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'old % new %', OLD.v, NEW.v;
  RETURN NULL;
END $$;
CREATE TRIGGER trg_after AFTER UPDATE ON trg FOR EACH ROW EXECUTE FUNCTION trg_show();
INSERT INTO trg VALUES (1, 1);
SELECT ctid AS t1 FROM trg WHERE id = 1 \gset
BEGIN;
UPDATE trg SET v = 2;
UPDATE trg SET v = 3;
COMMIT;
SELECT v, ctid = :'t1' AS in_place FROM trg;
DROP TABLE fkcc, fkd, fkc, fkp, du, trg;
DROP FUNCTION trg_show();
