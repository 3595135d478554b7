--
-- Index entries of rows that are dead to every snapshot are killed by the
-- index scans that meet them (all_dead) and removed by btree's simple and
-- bottom-up deletion (index_delete_tuples), so churn does not bloat indexes.
-- Every check prints whether an index grew.  The expected output is
-- leanstore's (test/leanstore-only): heap gives the same for 1 and 2, but
-- in 3 its bottom-up deletion gives up (old versions stay on unpruned heap
-- pages) and the index grows with every round; here the old rowids' rows
-- are dead to everyone once their updates committed, so it stays bounded.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_indexonlyscan = off;

-- 1. rows inserted by aborted subtransactions of the running transaction
BEGIN;
CREATE TABLE kill_aborted (k int, payload text) USING leanstore;
CREATE INDEX kill_aborted_k ON kill_aborted (k);
INSERT INTO kill_aborted VALUES (-1, 'first row: allocates the metapage');
SELECT pg_relation_size('kill_aborted_k') AS kill_aborted_before \gset
DO $$
BEGIN
	FOR round IN 1..100 LOOP
		BEGIN
			-- the index scan meets the dead entries of the previous round
			IF EXISTS (SELECT FROM kill_aborted WHERE k BETWEEN 1 AND 99) THEN
				RAISE EXCEPTION 'rows of an aborted subtransaction are visible';
			END IF;
			INSERT INTO kill_aborted
				SELECT g, 'undone below' FROM generate_series(1, 100) g;
			RAISE division_by_zero;
		EXCEPTION WHEN division_by_zero THEN
			NULL;
		END;
	END LOOP;
END $$;
SELECT pg_relation_size('kill_aborted_k') = :kill_aborted_before AS same_size;
SELECT count(*) FROM kill_aborted;
ROLLBACK;

-- 2. committed deletes: a later index scan kills the entries, and inserts
--    of the same keys reuse their space instead of splitting pages
CREATE TABLE kill_deleted (k int, payload text) USING leanstore;
CREATE INDEX kill_deleted_k ON kill_deleted (k);
INSERT INTO kill_deleted SELECT g % 50, repeat('x', 20) FROM generate_series(1, 5000) g;
SELECT pg_relation_size('kill_deleted_k') AS kill_deleted_before \gset
CREATE PROCEDURE kill_deleted_churn() LANGUAGE plpgsql AS $$
BEGIN
	FOR round IN 1..20 LOOP
		DELETE FROM kill_deleted WHERE k >= 0;
		COMMIT;
		-- the scan finds nothing visible and kills what it met
		PERFORM count(*) FROM kill_deleted WHERE k >= 0;
		INSERT INTO kill_deleted SELECT g % 50, repeat('y', 20) FROM generate_series(1, 5000) g;
		COMMIT;
	END LOOP;
END $$;
CALL kill_deleted_churn();
DROP PROCEDURE kill_deleted_churn();
SELECT pg_relation_size('kill_deleted_k') <= 2 * :kill_deleted_before AS bounded_size;
SELECT count(*), count(DISTINCT k) FROM kill_deleted;
DROP TABLE kill_deleted;

-- 3. bottom-up deletion: updates that change one indexed column give the
--    row a new rowid, so the other index gets a duplicate entry each time;
--    index_delete_tuples must call the old rowids' entries deletable
CREATE TABLE kill_bottomup (id int, v int, pad text) USING leanstore;
CREATE INDEX kill_bottomup_id ON kill_bottomup (id);
CREATE INDEX kill_bottomup_v ON kill_bottomup (v);
INSERT INTO kill_bottomup SELECT g, 0, repeat('p', 30) FROM generate_series(1, 2000) g;
SELECT pg_relation_size('kill_bottomup_id') AS kill_bottomup_before \gset
CREATE PROCEDURE kill_bottomup_churn() LANGUAGE plpgsql AS $$
BEGIN
	FOR round IN 1..30 LOOP
		UPDATE kill_bottomup SET v = v + 1;
		COMMIT;
	END LOOP;
END $$;
CALL kill_bottomup_churn();
DROP PROCEDURE kill_bottomup_churn();
SELECT pg_relation_size('kill_bottomup_id') <= 2 * :kill_bottomup_before AS bounded_size;
SELECT count(*), min(v), max(v) FROM kill_bottomup;
SELECT id, v FROM kill_bottomup WHERE id IN (1, 1000, 2000) ORDER BY id;
DROP TABLE kill_bottomup;

RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexonlyscan;
