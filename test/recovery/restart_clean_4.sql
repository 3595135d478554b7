-- after a crash (immediate shutdown) that followed changes since the last
-- clean restart: leanstore's log and undo journals bring everything back
SELECT same('t1', 'h_t1');
SELECT same('wide', 'h_wide');
SELECT same('typed', 'h_typed');
SELECT same('parted', 'h_parted');
SELECT leanstore_verify('t1'), leanstore_verify('wide');
-- index-only scans agree with the heap copy (recovery cleared the map)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM t1 WHERE id BETWEEN 100 AND 200;
SELECT count(*) FROM h_t1 WHERE id BETWEEN 100 AND 200;
RESET enable_seqscan;
RESET enable_bitmapscan;
TRUNCATE t1;
SELECT count(*) FROM t1;
