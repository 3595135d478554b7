-- ls_types: NULLs and the common types stored in leanstore tables.
SET max_parallel_workers_per_gather = 0;
CREATE TYPE ls_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE ls_pair AS (a int, b text);
CREATE TABLE types_t (
  id int,
  c_int2 int2, c_int4 int4, c_int8 int8,
  c_num numeric(20, 5), c_float4 float4, c_float8 float8,
  c_text text, c_varchar varchar(20), c_char char(5), c_bytea bytea, c_bool bool,
  c_date date, c_ts timestamp, c_tstz timestamptz, c_interval interval,
  c_uuid uuid, c_json json, c_jsonb jsonb,
  c_intarr int[], c_textarr text[],
  c_pair ls_pair, c_mood ls_mood, c_range int4range, c_tsrange tstzrange
) USING leanstore;
INSERT INTO types_t VALUES
 (1, 1, 2, 3, 1.5, 1.25, 2.5, 'text', 'varchar', 'ch', '\xdeadbeef', true,
  '2024-02-29', '2024-02-29 12:34:56.789', '2024-02-29 12:34:56.789+02', '1 year 2 mons 3 days 04:05:06',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": 1, "b": [1, 2]}', '{"b": [1, 2], "a": 1}',
  '{1,2,3}', '{"x","y z",NULL}', ROW(7, 'seven'), 'happy', '[1,10)', '[2024-01-01 00:00+00,2024-12-31 00:00+00)'),
 (2, -32768, -2147483648, -9223372036854775808, -99999999999999.99999, '-Infinity', 'NaN',
  '', '', '', '\x', false,
  '4713-01-01 BC', '294276-12-31 23:59:59', '1999-12-31 23:59:59.999999+00', '-178000000 years',
  '00000000-0000-0000-0000-000000000000', '[]', '{}',
  '{}', '{}', ROW(NULL, NULL), 'sad', 'empty', '(,)'),
 (3, 32767, 2147483647, 9223372036854775807, 99999999999999.99999, 'Infinity', 1e308,
  'üñíçødé ✓', 'twenty chars exactly', 'abcde', decode(repeat('ff', 100), 'hex'), NULL,
  'infinity', '-infinity', 'infinity', '178000000 years',
  'ffffffff-ffff-ffff-ffff-ffffffffffff', 'null', '{"nested": {"deep": [true, false, null]}}',
  '{{1,2},{3,4}}', '{NULL}', ROW(0, ''), 'ok', '[-5,5]', '[2000-01-01 00:00+00,)'),
 (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
-- a row of all NULLs except the key, and a row with only the key set
INSERT INTO types_t (id) VALUES (5);

SELECT * FROM types_t ORDER BY id;
SELECT id, c_int2 + 1 AS i2, c_int8 / 2 AS i8, c_num * 2 AS num, c_float8 > 1 AS f8big,
       length(c_text) AS tlen, octet_length(c_char) AS clen, length(c_bytea) AS blen
FROM types_t WHERE id <> 3 ORDER BY id;
-- NULL handling in predicates
SELECT count(*) FILTER (WHERE c_int4 IS NULL) AS null_int4,
       count(*) FILTER (WHERE c_bool IS NULL) AS null_bool,
       count(*) FILTER (WHERE c_bool) AS true_bool,
       count(*) FILTER (WHERE NOT c_bool) AS false_bool,
       count(c_json) AS json_count
FROM types_t;
-- operators on the stored values
SELECT id, c_jsonb -> 'a' AS a, c_jsonb #> '{nested,deep}' AS deep, c_json ->> 'a' AS json_a
FROM types_t WHERE c_jsonb IS NOT NULL ORDER BY id;
SELECT id, c_intarr[1] AS first, array_length(c_intarr, 1) AS len, c_textarr[2] AS second
FROM types_t ORDER BY id;
SELECT id, (c_pair).a, (c_pair).b, c_mood, c_mood > 'sad' AS not_sad FROM types_t ORDER BY c_mood NULLS FIRST, id;
SELECT id, c_range @> 5 AS has5, isempty(c_range) AS empty, c_tsrange @> '2024-06-01'::timestamptz AS in_2024
FROM types_t ORDER BY id;
SELECT id, c_date + 1 AS next_day, c_ts + c_interval AS ts_plus, extract(epoch FROM c_tstz) AS epoch
FROM types_t WHERE id = 1;
-- equality lookups through indexes on several types
CREATE INDEX types_uuid ON types_t (c_uuid);
CREATE INDEX types_text ON types_t (c_text);
CREATE INDEX types_tstz ON types_t (c_tstz);
CREATE INDEX types_jsonb ON types_t USING gin (c_jsonb);
SET enable_seqscan = off;
SELECT id FROM types_t WHERE c_uuid = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
SELECT id FROM types_t WHERE c_text = 'üñíçødé ✓';
SELECT id FROM types_t WHERE c_tstz < '2000-01-01' ORDER BY id;
SELECT id FROM types_t WHERE c_jsonb @> '{"a": 1}';
SELECT id FROM types_t WHERE c_text IS NULL ORDER BY id;
RESET enable_seqscan;
-- updates that change the size of stored values (short <-> long varlena)
UPDATE types_t SET c_text = repeat('x', 200), c_bytea = NULL, c_num = c_num / 3 WHERE id IN (1, 2);
UPDATE types_t SET c_text = 'short', c_int4 = 0 WHERE id = 4;
SELECT id, length(c_text), c_bytea IS NULL AS no_bytea, c_num, c_int4 FROM types_t ORDER BY id;
-- many columns, mostly NULL (null bitmap wider than one byte)
CREATE TABLE many_cols (id int, c1 int, c2 int, c3 int, c4 int, c5 int, c6 int, c7 int, c8 int,
  c9 int, c10 int, c11 int, c12 int, c13 int, c14 int, c15 int, c16 int, c17 text) USING leanstore;
INSERT INTO many_cols (id, c1, c9, c16, c17) VALUES (1, 1, 9, 16, 'seventeen');
INSERT INTO many_cols (id, c8, c17) VALUES (2, 8, NULL);
INSERT INTO many_cols SELECT g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g, g::text FROM generate_series(3, 5) g;
SELECT * FROM many_cols ORDER BY id;
DROP TABLE types_t, many_cols;
DROP TYPE ls_pair, ls_mood;
