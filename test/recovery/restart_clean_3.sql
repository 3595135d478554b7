-- after a second clean restart: the changes made after the first are there
SELECT same('t1', 'h_t1');
SELECT same('wide', 'h_wide');
SELECT same('typed', 'h_typed');
SELECT same('parted', 'h_parted');
SET enable_seqscan = off;
SELECT id, k, w FROM t1 WHERE id = 50001;
RESET enable_seqscan;
SELECT leanstore_verify('t1'), leanstore_verify('wide');
