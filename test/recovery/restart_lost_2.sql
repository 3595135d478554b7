-- after the crash: leanstore data is gone (no log yet); every use of such a
-- table gives a clear error, never wrong rows; heap data is untouched
SELECT count(*) FROM kept_heap;
SELECT count(*) FROM lost_t;
SELECT v FROM lost_t WHERE id = 5;
INSERT INTO lost_t VALUES (5000, 'new');
UPDATE lost_t SET v = 'x' WHERE id = 1;
DELETE FROM lost_t;
SELECT count(*) FROM empty_ls;
-- TRUNCATE gives the table new, empty storage: usable again
TRUNCATE lost_t;
SELECT count(*) FROM lost_t;
INSERT INTO lost_t VALUES (1, 'fresh');
SELECT * FROM lost_t;
-- DROP works on a table whose data was lost
DROP TABLE lost_other;
DROP TABLE lost_t, kept_heap, empty_ls;
