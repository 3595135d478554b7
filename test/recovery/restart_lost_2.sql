-- after the crash: what the log covers is back; lost_t, whose cold pages
-- cannot go back to their clean image, gives a clear error, never wrong rows
SELECT count(*) FROM kept_heap;
SELECT count(*), sum(length(v)) FROM kept_t;
SELECT v FROM kept_t WHERE id IN (5, 20, 50, 995, 5000) ORDER BY id;
SET enable_seqscan = off;
SELECT count(*) FROM kept_t WHERE id > 900;
RESET enable_seqscan;
SELECT leanstore_verify('kept_t');
INSERT INTO kept_t VALUES (1001, 'after');
SELECT count(*) FROM empty_ls;
SELECT count(*) FROM lost_t;
SELECT v FROM lost_t WHERE id = 5;
INSERT INTO lost_t VALUES (5000, 'new');
UPDATE lost_t SET v = 'x' WHERE id = 1;
DELETE FROM lost_t;
-- TRUNCATE gives the table new, empty storage: usable again
TRUNCATE lost_t;
SELECT count(*) FROM lost_t;
INSERT INTO lost_t VALUES (1, 'fresh');
SELECT * FROM lost_t;
-- DROP works on a table whose data was lost
DROP TABLE lost_t, kept_t, kept_heap, empty_ls;
