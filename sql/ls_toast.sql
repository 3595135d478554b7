-- ls_toast: wide rows and TOASTed values (compressed, external, > 1 MB).
SET max_parallel_workers_per_gather = 0;
CREATE TABLE toast_t (id int PRIMARY KEY, note text, big text, raw bytea) USING leanstore;
SELECT reltoastrelid <> 0 AS has_toast_table FROM pg_class WHERE relname = 'toast_t';
-- an incompressible value of a few kB (forced out of line)
CREATE FUNCTION ls_noise(n int, seed int) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT string_agg(md5((seed * 100003 + g)::text), '') FROM generate_series(1, (n + 31) / 32) g $$;
INSERT INTO toast_t VALUES (1, 'noise 3 kB', ls_noise(3000, 1), NULL);
-- a compressible value just above 2 kB and one of 1 MB
INSERT INTO toast_t VALUES (2, 'repeat 2.5 kB', repeat('abcd', 640), NULL);
INSERT INTO toast_t VALUES (3, 'repeat 1 MB', repeat('leanstore ', 104858), NULL);
-- an incompressible value above 1 MB
INSERT INTO toast_t VALUES (4, 'noise 1.2 MB', ls_noise(1200000, 4), NULL);
-- binary, out of line without compression
ALTER TABLE toast_t ALTER COLUMN raw SET STORAGE EXTERNAL;
INSERT INTO toast_t VALUES (5, 'bytea 300 kB external', NULL, decode(repeat('0123456789abcdef', 37500), 'hex'));
-- several medium columns in one row: the row is over the limit only together
INSERT INTO toast_t VALUES (6, repeat('n', 1900), repeat('b', 1900), decode(repeat('aa', 1900), 'hex'));

SELECT id, left(note, 24) AS note, octet_length(note) AS note_len, octet_length(big) AS big_len, md5(big) AS big_md5,
       octet_length(raw) AS raw_len, md5(raw) AS raw_md5
FROM toast_t ORDER BY id;
-- compressed vs. stored as is
SELECT id, pg_column_compression(big) AS big_compression,
       pg_column_size(big) < octet_length(big) AS big_smaller,
       pg_column_compression(raw) AS raw_compression
FROM toast_t ORDER BY id;
-- slices of external values
SELECT id, substr(big, 500001, 20) AS mid, substr(big, octet_length(big) - 9) AS tail
FROM toast_t WHERE id IN (3, 4) ORDER BY id;
SELECT substring(raw FROM 150001 FOR 8) AS raw_slice FROM toast_t WHERE id = 5;
-- an update of another column keeps the toasted value
UPDATE toast_t SET note = note || ' (updated)' WHERE id IN (1, 4);
SELECT id, note, octet_length(big), md5(big) FROM toast_t WHERE id IN (1, 4) ORDER BY id;
-- an update of the toasted value itself
UPDATE toast_t SET big = big || 'tail' WHERE id = 3;
SELECT id, octet_length(big), right(big, 14) FROM toast_t WHERE id = 3;
-- a toasted value in a rolled-back transaction leaves the old one intact
BEGIN;
UPDATE toast_t SET big = ls_noise(50000, 99) WHERE id = 1;
SELECT octet_length(big) FROM toast_t WHERE id = 1;
ROLLBACK;
SELECT id, octet_length(big), md5(big) FROM toast_t WHERE id = 1;
-- copy toasted values between leanstore tables
CREATE TABLE toast_copy (LIKE toast_t) USING leanstore;
INSERT INTO toast_copy SELECT * FROM toast_t;
SELECT count(*) AS differing FROM (
  (SELECT id, md5(big), md5(raw), note FROM toast_t EXCEPT ALL SELECT id, md5(big), md5(raw), note FROM toast_copy)
  UNION ALL
  (SELECT id, md5(big), md5(raw), note FROM toast_copy EXCEPT ALL SELECT id, md5(big), md5(raw), note FROM toast_t)) d;
-- index on a toasted expression, and delete
CREATE INDEX toast_md5 ON toast_t (md5(big));
SET enable_seqscan = off;
SELECT id FROM toast_t WHERE md5(big) = md5(repeat('abcd', 640));
RESET enable_seqscan;
DELETE FROM toast_t WHERE id IN (3, 4);
SELECT id, octet_length(big) FROM toast_t ORDER BY id;
-- a wide row of many columns
CREATE TABLE wide_t (id int) USING leanstore;
DO $$ BEGIN
  FOR i IN 1..200 LOOP
    EXECUTE format('ALTER TABLE wide_t ADD COLUMN c%s int8', i);
  END LOOP;
END $$;
INSERT INTO wide_t (id, c1, c100, c200) VALUES (1, 1, 100, 200);
DO $$ BEGIN
  EXECUTE format('INSERT INTO wide_t VALUES (2, %s)', (SELECT string_agg((i * 1000)::text, ', ') FROM generate_series(1, 200) i));
END $$;
UPDATE wide_t SET c150 = 150, c1 = NULL WHERE id = 1;
SELECT id, c1, c99, c100, c150, c200 FROM wide_t ORDER BY id;
SELECT md5(w::text) FROM wide_t w WHERE id = 2;
DROP TABLE toast_t, toast_copy, wide_t;
DROP FUNCTION ls_noise(int, int);
