--
-- BRIN indexes on leanstore tables: builds, summaries, bitmap scans, and
-- updates of BRIN-indexed columns.  When every index of the table is BRIN,
-- such an update keeps the row where it is (its new values are added to
-- the range summary), so no new ranges appear, as with heap, whose row
-- stays on its page.  With a btree index too the row moves, and each index
-- still returns it once.
--
-- (every update goes through the hot tier: one made in the cold tier, past
-- leanstore.bulk_load_rows cold rows, moves its row to a new rowid)
SET leanstore.bulk_load_rows = 0;
CREATE TABLE brin_only (id int, v int, t text) USING leanstore WITH (fillfactor = 50);
INSERT INTO brin_only SELECT g, g * 10, 'r' || g FROM generate_series(1, 5000) g;
CREATE INDEX brin_only_v ON brin_only USING brin (v) WITH (pages_per_range = 2);
CREATE INDEX brin_only_t ON brin_only USING brin (t) WITH (pages_per_range = 2);

SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM brin_only WHERE v BETWEEN 100 AND 200;
SELECT count(*), min(id), max(id) FROM brin_only WHERE v BETWEEN 100 AND 200;

-- the update changes both indexed columns of every row
UPDATE brin_only SET v = v + 1, t = t || 'x';
SELECT brin_summarize_new_values('brin_only_v') AS new_ranges_v;
SELECT brin_summarize_new_values('brin_only_t') AS new_ranges_t;
SELECT count(*), min(id), max(id) FROM brin_only WHERE v BETWEEN 101 AND 201;
SELECT count(*) FROM brin_only WHERE v BETWEEN 100 AND 100;
SELECT count(*) FROM brin_only WHERE t = 'r42x';
SELECT count(*) FROM brin_only WHERE t = 'r42';

-- an old snapshot still finds the old values through the summaries
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM brin_only WHERE v = 501;
SAVEPOINT s;
UPDATE brin_only SET v = -1 WHERE id = 50;
SELECT count(*) FROM brin_only WHERE v = -1;
ROLLBACK TO s;
SELECT count(*) FROM brin_only WHERE v = -1;
COMMIT;
SELECT count(*) FROM brin_only WHERE v = 501;
-- (statistics flushed first: otherwise the answer depends on timing)
SELECT pg_stat_force_next_flush();
SELECT n_tup_upd > 0 AS updated FROM pg_stat_user_tables WHERE relname = 'brin_only';
RESET enable_seqscan;
SELECT count(*), sum(v) FROM brin_only;

-- BRIN and btree: the row moves, both indexes find it once
CREATE TABLE brin_mixed (id int PRIMARY KEY, v int) USING leanstore;
INSERT INTO brin_mixed SELECT g, g FROM generate_series(1, 2000) g;
CREATE INDEX brin_mixed_v ON brin_mixed USING brin (v);
UPDATE brin_mixed SET v = v + 5000 WHERE id % 2 = 0;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*), sum(v) FROM brin_mixed WHERE id > 0;
SET enable_bitmapscan = on;
SET enable_indexscan = off;
SELECT count(*), sum(v) FROM brin_mixed WHERE v > 5000;
SELECT count(*), sum(v) FROM brin_mixed WHERE v <= 2000;
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexscan;

DROP TABLE brin_only, brin_mixed;
