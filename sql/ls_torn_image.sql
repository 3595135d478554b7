-- ls_torn_image: a scan that meets a cold image pack is writing.  An image
-- longer than a tree value is written a chunk at a time, so a scan reading
-- the tree leaf by leaf can find its first chunk without the rest.  Pack
-- writes images only of rows that are still hot, which the scan takes
-- from the hot tier: the half-written image must not fail the scan ("could
-- not access the cold tree ... corrupt", seen in regress-cold's ls_blocks).
-- leanstore.debug_image_pause holds the writer after the first chunk.
-- It needs rows to go cold at once (regress-cold: leanstore.pack_eager).
SELECT NOT current_setting('leanstore.pack_eager')::bool AS hot \gset
\if :hot
\echo 'skipped: rows stay hot in this configuration'
\quit
\endif
SET max_parallel_workers_per_gather = 0;
CREATE TABLE ti (id int, t text) USING leanstore;
ALTER TABLE ti ALTER COLUMN t SET STORAGE PLAIN;
ALTER SYSTEM SET leanstore.debug_image_pause = '5s';
SELECT pg_reload_conf();
SELECT pg_sleep(1);		-- the leanstore worker reloads too
SET leanstore.bulk_load_rows = 100;	-- the rows stay hot until pack takes them
INSERT INTO ti VALUES (1, repeat('a', 5000)), (2, repeat('b', 100));
-- pack has written row 1's first chunk and waits; the row is still hot
SELECT wait_table_stat('ti', 'cold_rows', 1, 1);
SELECT hot_rows FROM leanstore_table_stats('ti');
SELECT id, length(t), left(t, 1) FROM ti ORDER BY id;
SELECT count(*) FROM ti WHERE t LIKE 'a%';
ALTER SYSTEM RESET leanstore.debug_image_pause;
SELECT pg_reload_conf();
-- once pack is done, the rows come from the tree, whole
SELECT wait_packed('ti');
SELECT id, length(t), left(t, 1) FROM ti ORDER BY id;
SELECT leanstore_verify('ti');
DROP TABLE ti;
