-- ls_log: what leanstore's log records at commit, as leanstore_stats()
-- counts it (one after-image per row per transaction; nothing for rolled
-- back transactions, unlogged or temporary tables), and checkpoints.
-- (Not run with regress-cold: pack logs its moves while this runs.)
CREATE TABLE lg (id int PRIMARY KEY, v text) USING leanstore;
CREATE TEMP TABLE s0 AS SELECT log_records AS r, log_commits AS c, log_only_commits AS o,
  wal_copy_commits AS w FROM leanstore_stats();
INSERT INTO lg SELECT g, 'x' || g FROM generate_series(1, 100) g;
-- 100 rows (and a rowid reservation), one commit; the primary key's
-- entries are in PostgreSQL's WAL, so its commit record decides (not
-- log-only), and the rows go into the WAL too: PostgreSQL's flush alone
-- makes them durable (no wait for leanstore's log: commits 0)
SELECT log_records - r BETWEEN 100 AND 103 AS inserts, log_commits - c AS commits,
       log_only_commits - o AS log_only, wal_copy_commits - w AS via_wal
  FROM leanstore_stats(), s0;
-- bytes counted too (each record: its header, the storage, the row image)
SELECT log_bytes > 100 * 40 AS bytes_counted FROM leanstore_stats();
-- a row changed twice in one transaction is logged once; no index entry
-- changed and no heap row: the transaction wrote no WAL of PostgreSQL's,
-- and its rows go into the WAL as well (one flush, the backend's own)
UPDATE s0 SET r = log_records, c = log_commits, o = log_only_commits, w = wal_copy_commits
  FROM leanstore_stats();
BEGIN;
UPDATE lg SET v = 'y' WHERE id <= 10;
UPDATE lg SET v = 'z' WHERE id <= 10;
DELETE FROM lg WHERE id = 11;
COMMIT;
SELECT log_records - r AS records, log_commits - c AS commits,
       log_only_commits - o AS log_only, wal_copy_commits - w AS via_wal
  FROM leanstore_stats(), s0;
-- with leanstore.commit_via_wal off it commits through leanstore's log
-- alone (a commit record of its own, no WAL of PostgreSQL's to flush)
SET leanstore.commit_via_wal = off;
UPDATE s0 SET r = log_records, c = log_commits, o = log_only_commits, w = wal_copy_commits
  FROM leanstore_stats();
BEGIN;
UPDATE lg SET v = 'y2' WHERE id BETWEEN 31 AND 40;
UPDATE lg SET v = 'y3' WHERE id = 41;
COMMIT;
SELECT log_records - r AS records, log_commits - c AS commits,
       log_only_commits - o AS log_only, wal_copy_commits - w AS via_wal
  FROM leanstore_stats(), s0;
RESET leanstore.commit_via_wal;
-- and so it does under synchronous_commit = off (without a wait)
SET synchronous_commit = off;
UPDATE s0 SET c = log_commits, o = log_only_commits, w = wal_copy_commits
  FROM leanstore_stats();
UPDATE lg SET v = 'y4' WHERE id = 42;
SELECT log_commits - c AS commits, log_only_commits - o AS log_only,
       wal_copy_commits - w AS via_wal FROM leanstore_stats(), s0;
RESET synchronous_commit;
-- the same under SERIALIZABLE commits through PostgreSQL's commit record
-- (its commit may still fail on a serialization conflict after leanstore's
-- log): logged, not log-only, its rows in PostgreSQL's WAL
UPDATE s0 SET r = log_records, c = log_commits, o = log_only_commits, w = wal_copy_commits
  FROM leanstore_stats();
BEGIN ISOLATION LEVEL SERIALIZABLE;
UPDATE lg SET v = 's' WHERE id <= 3;
COMMIT;
SELECT log_records - r AS records, log_commits - c AS commits,
       log_only_commits - o AS log_only, wal_copy_commits - w AS via_wal
  FROM leanstore_stats(), s0;
-- a transaction that creates a table waits for leanstore's log (replay
-- needs the CREATE record before the rows), and so does one whose rows
-- pass 512kB (one WAL record would be too large)
UPDATE s0 SET c = log_commits, w = wal_copy_commits FROM leanstore_stats();
BEGIN;
CREATE TABLE lg_new (a int) USING leanstore;
INSERT INTO lg_new VALUES (1);
INSERT INTO lg VALUES (1000, 'with a new table');
COMMIT;
SELECT log_commits - c AS commits, wal_copy_commits - w AS via_wal FROM leanstore_stats(), s0;
CREATE TABLE lg_big (id int PRIMARY KEY, v text) USING leanstore;
UPDATE s0 SET c = log_commits, w = wal_copy_commits FROM leanstore_stats();
INSERT INTO lg_big SELECT g, 'x' || g FROM generate_series(1, 8000) g;
SELECT log_commits - c AS commits, wal_copy_commits - w AS via_wal FROM leanstore_stats(), s0;
-- rows of a table without an index past 512kB: a log-only commit instead
CREATE TABLE lg_big2 (id int, v text) USING leanstore;
INSERT INTO lg_big2 SELECT g, 'x' FROM generate_series(1, 8000) g;
UPDATE s0 SET c = log_commits, o = log_only_commits, w = wal_copy_commits
  FROM leanstore_stats();
UPDATE lg_big2 SET v = repeat('u', 100);
SELECT log_commits - c AS commits, log_only_commits - o AS log_only,
       wal_copy_commits - w AS via_wal FROM leanstore_stats(), s0;
DROP TABLE lg_new, lg_big, lg_big2;
DELETE FROM lg WHERE id = 1000;
-- a rolled back transaction logs nothing; neither does a read-only one
UPDATE s0 SET r = log_records, c = log_commits FROM leanstore_stats();
BEGIN;
UPDATE lg SET v = 'gone' WHERE id <= 50;
ROLLBACK;
SELECT count(*) FROM lg;
SELECT log_records - r AS records, log_commits - c AS commits FROM leanstore_stats(), s0;
-- a subtransaction rolled back: only what the transaction kept
UPDATE s0 SET r = log_records, c = log_commits FROM leanstore_stats();
BEGIN;
UPDATE lg SET v = 'kept' WHERE id = 20;
SAVEPOINT a;
UPDATE lg SET v = 'undone' WHERE id BETWEEN 21 AND 30;
ROLLBACK TO a;
COMMIT;
SELECT log_records - r AS records FROM leanstore_stats(), s0;
-- unlogged and temporary tables are not logged
UPDATE s0 SET r = log_records, c = log_commits FROM leanstore_stats();
CREATE UNLOGGED TABLE lu (a int) USING leanstore;
INSERT INTO lu SELECT generate_series(1, 50);
CREATE TEMP TABLE lt (a int) USING leanstore;
INSERT INTO lt SELECT generate_series(1, 50);
SELECT log_records - r AS records FROM leanstore_stats(), s0;
-- a checkpoint
CREATE TEMP TABLE k0 AS SELECT checkpoints AS k FROM leanstore_stats();
SELECT leanstore_checkpoint();
SELECT checkpoints - k AS checkpoints FROM leanstore_stats(), k0;
-- PostgreSQL's CHECKPOINT makes one of leanstore's too
UPDATE k0 SET k = checkpoints FROM leanstore_stats();
CHECKPOINT;
SELECT checkpoints - k AS checkpoints FROM leanstore_stats(), k0;
BEGIN;
INSERT INTO lg VALUES (1000, 'in a transaction');
SELECT leanstore_checkpoint();
ROLLBACK;
-- in a transaction that wrote rows, CHECKPOINT does not wait for them
BEGIN;
INSERT INTO lg VALUES (1001, 'in a transaction');
CHECKPOINT;
SELECT checkpoints - k AS checkpoints FROM leanstore_stats(), k0;
ROLLBACK;
SELECT v FROM lg WHERE id IN (5, 11, 20, 25) ORDER BY id;
-- A log-only commit leaves PostgreSQL's WAL flushed up to its last
-- completed page (ls_log_commit_done); otherwise each such commit signals
-- the WAL writer until its next flush, up to wal_writer_delay later.
-- Checked after each of 3000 commits (a8fad52: 2252 of them found it
-- behind); another process's WAL (a standby snapshot) may complete a page
-- in between now and then.
CREATE PROCEDURE lg_commits(n int, INOUT flushed_to_page bool) LANGUAGE plpgsql AS $$
DECLARE
  ins pg_lsn;
  behind int := 0;
BEGIN
  FOR i IN 1 .. n LOOP
    UPDATE lg SET v = repeat('w', 100) || i WHERE id = i % 100 + 1;
    COMMIT;
    ins := pg_current_wal_insert_lsn();
    IF pg_current_wal_flush_lsn() < ins - ((ins - '0/0'::pg_lsn) % 8192) THEN
      behind := behind + 1;
    END IF;
  END LOOP;
  flushed_to_page := behind < n / 10;
END $$;
SET leanstore.commit_via_wal = off;
UPDATE s0 SET o = log_only_commits FROM leanstore_stats();
CALL lg_commits(3000, NULL);
-- (an update that needs a new rowid adds an index entry: not log-only)
SELECT log_only_commits - o BETWEEN 2900 AND 3000 AS log_only FROM leanstore_stats(), s0;
RESET leanstore.commit_via_wal;
DROP PROCEDURE lg_commits(int, bool);
DROP TABLE lg, lu, lt;
