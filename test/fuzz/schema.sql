-- test/fuzz/schema.sql: the database sqlsmith fuzzes.  Every table is a
-- leanstore table (default_table_access_method), of many column types, with
-- btree, hash, gist, gin and brin indexes, foreign keys, partitions
-- (range, list, hash, a default partition), TOASTed values, a materialized
-- view and plain views.  Deterministic: setseed() before the random data.
CREATE EXTENSION IF NOT EXISTS leanstore;
SET default_table_access_method = leanstore;
SELECT setseed(0.42);

CREATE TYPE f_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE f_pair AS (x int, y text);
CREATE DOMAIN f_posint AS int CHECK (VALUE > 0);

CREATE TABLE f_types (
	id int PRIMARY KEY,
	i2 smallint,
	i8 bigint,
	num numeric(12, 3),
	f4 real,
	f8 double precision,
	flag boolean,
	t text,
	vc varchar(40),
	ch char(6),
	bin bytea,
	d date,
	ts timestamp,
	tstz timestamptz,
	iv interval,
	tm time,
	u uuid,
	j jsonb,
	js json,
	ia int[],
	ta text[],
	r int4range,
	tsr tsrange,
	pt point,
	bx box,
	ip inet,
	mac macaddr,
	bits varbit(16),
	tsv tsvector,
	mood f_mood,
	pair f_pair,
	pos f_posint,
	m money,
	big text
);
INSERT INTO f_types
SELECT g,
	(g % 30000)::smallint,
	g::bigint * 1000003,
	round((random() * 10000)::numeric, 3),
	random()::real,
	random() * 1e6,
	g % 3 = 0,
	md5(g::text),
	'vc' || (g % 97),
	left(md5((g * 7)::text), 6),
	decode(md5(g::text), 'hex'),
	date '2020-01-01' + (g % 1000),
	timestamp '2020-01-01' + g * interval '37 minutes',
	timestamptz '2020-01-01 00:00+00' + g * interval '1 hour',
	(g % 50) * interval '1 day' + (g % 7) * interval '1 minute',
	time '00:00' + (g % 1440) * interval '1 minute',
	md5(g::text)::uuid,
	jsonb_build_object('k', g, 'tag', 'tag' || (g % 10), 'arr', jsonb_build_array(g, g + 1)),
	json_build_object('a', g % 5),
	ARRAY[g % 10, g % 7, g % 3],
	ARRAY['t' || (g % 5), 'u' || (g % 11)],
	int4range(g, g + (g % 20) + 1),
	tsrange(timestamp '2020-01-01' + g * interval '1 hour', timestamp '2020-01-01' + (g + 5) * interval '1 hour'),
	point(g % 100, g % 37),
	box(point(g % 50, g % 50), point(g % 50 + 3, g % 50 + 4)),
	('10.' || (g % 256) || '.' || (g % 17) || '.1')::inet,
	('08:00:2b:01:02:' || lpad(to_hex(g % 256), 2, '0'))::macaddr,
	(g % 65536)::bit(16)::varbit,
	to_tsvector('simple', 'word' || (g % 13) || ' text' || (g % 29) || ' common'),
	(ARRAY['sad', 'ok', 'happy'])[g % 3 + 1]::f_mood,
	ROW(g, 'p' || g)::f_pair,
	g,
	(g * 1.25)::numeric::money,
	CASE WHEN g % 25 = 0 THEN (SELECT string_agg(md5((g * 1000 + k)::text), '') FROM generate_series(1, 150) k) END
FROM generate_series(1, 1000) g;
UPDATE f_types SET t = NULL, j = NULL, ia = NULL, r = NULL, pt = NULL WHERE id % 17 = 0;
-- the wide values must really be out of line (a schema change that kept
-- them inline would quietly stop fuzzing TOAST)
DO $$
BEGIN
	IF (SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'f_types'::regclass) = 0 THEN
		RAISE EXCEPTION 'f_types has no TOASTed values';
	END IF;
END $$;

CREATE INDEX f_types_i8 ON f_types (i8);
CREATE UNIQUE INDEX f_types_u ON f_types (u);
CREATE INDEX f_types_t ON f_types (t);
CREATE INDEX f_types_lower ON f_types (lower(vc));
CREATE INDEX f_types_partial ON f_types (d) WHERE flag;
CREATE INDEX f_types_multi ON f_types (mood, ts DESC) INCLUDE (num);
CREATE INDEX f_types_hash ON f_types USING hash (vc);
CREATE INDEX f_types_r ON f_types USING gist (r);
CREATE INDEX f_types_pt ON f_types USING gist (pt);
CREATE INDEX f_types_bx ON f_types USING gist (bx);
CREATE INDEX f_types_tsv_gist ON f_types USING gist (tsv);
CREATE INDEX f_types_ip ON f_types USING gist (ip inet_ops);
CREATE INDEX f_types_j ON f_types USING gin (j);
CREATE INDEX f_types_ia ON f_types USING gin (ia);
CREATE INDEX f_types_tsv ON f_types USING gin (tsv);
CREATE INDEX f_types_ts_brin ON f_types USING brin (ts);
CREATE INDEX f_types_id_brin ON f_types USING brin (id) WITH (pages_per_range = 2);

-- foreign keys in a small hierarchy, with cascades
CREATE TABLE f_parent (id int PRIMARY KEY, name text UNIQUE NOT NULL, note text);
INSERT INTO f_parent SELECT g, 'parent' || g, repeat('n', g % 40) FROM generate_series(1, 200) g;
CREATE TABLE f_child (
	id serial PRIMARY KEY,
	parent_id int NOT NULL REFERENCES f_parent ON DELETE CASCADE ON UPDATE CASCADE,
	parent_name text REFERENCES f_parent (name) ON UPDATE CASCADE ON DELETE SET NULL,
	amount numeric CHECK (amount >= 0),
	created timestamptz DEFAULT now());
INSERT INTO f_child (parent_id, parent_name, amount)
SELECT g % 200 + 1, 'parent' || (g % 200 + 1), g % 1000 FROM generate_series(1, 3000) g;
CREATE INDEX f_child_parent ON f_child (parent_id);
CREATE TABLE f_grandchild (
	id bigserial PRIMARY KEY,
	child_id int REFERENCES f_child ON DELETE CASCADE,
	types_id int REFERENCES f_types ON DELETE SET NULL,
	payload jsonb);
INSERT INTO f_grandchild (child_id, types_id, payload)
SELECT g % 3000 + 1, g % 1000 + 1, jsonb_build_object('g', g) FROM generate_series(1, 2000) g;

-- partitions: range (with a default partition), list, hash; a partitioned
-- index and a foreign key into a partitioned table
CREATE TABLE f_range (id int, k int NOT NULL, payload text, PRIMARY KEY (k, id)) PARTITION BY RANGE (k);
CREATE TABLE f_range_1 PARTITION OF f_range FOR VALUES FROM (0) TO (100);
CREATE TABLE f_range_2 PARTITION OF f_range FOR VALUES FROM (100) TO (200);
CREATE TABLE f_range_d PARTITION OF f_range DEFAULT;
INSERT INTO f_range SELECT g, g % 300, md5(g::text) FROM generate_series(1, 3000) g;
CREATE INDEX f_range_payload ON f_range (payload);
CREATE TABLE f_list (id int, region text NOT NULL, v int) PARTITION BY LIST (region);
CREATE TABLE f_list_eu PARTITION OF f_list FOR VALUES IN ('eu', 'uk');
CREATE TABLE f_list_us PARTITION OF f_list FOR VALUES IN ('us');
CREATE TABLE f_list_other PARTITION OF f_list DEFAULT;
INSERT INTO f_list SELECT g, (ARRAY['eu', 'uk', 'us', 'apac'])[g % 4 + 1], g FROM generate_series(1, 1000) g;
CREATE TABLE f_hash (id int PRIMARY KEY, v text) PARTITION BY HASH (id);
CREATE TABLE f_hash_0 PARTITION OF f_hash FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE f_hash_1 PARTITION OF f_hash FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE f_hash_2 PARTITION OF f_hash FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO f_hash SELECT g, 'h' || g FROM generate_series(1, 1000) g;
CREATE TABLE f_hash_ref (id int PRIMARY KEY, hash_id int REFERENCES f_hash ON DELETE CASCADE);
INSERT INTO f_hash_ref SELECT g, g FROM generate_series(1, 500) g;

-- a heap table to join with, a materialized view (leanstore) and views
CREATE TABLE f_heap (id int PRIMARY KEY, v text) USING heap;
INSERT INTO f_heap SELECT g, 'heap' || g FROM generate_series(1, 500) g;
CREATE MATERIALIZED VIEW f_mv AS
	SELECT p.id, p.name, count(c.id) AS children, sum(c.amount) AS total
	FROM f_parent p LEFT JOIN f_child c ON c.parent_id = p.id GROUP BY p.id, p.name;
CREATE UNIQUE INDEX f_mv_id ON f_mv (id);
CREATE VIEW f_view AS SELECT t.id, t.t, t.j, c.amount FROM f_types t JOIN f_child c ON c.id = t.id;
CREATE VIEW f_view_upd AS SELECT id, name, note FROM f_parent WHERE id > 10;
-- an unlogged table and a table with dropped columns and a fillfactor
CREATE UNLOGGED TABLE f_unlogged (id int PRIMARY KEY, v text);
INSERT INTO f_unlogged SELECT g, md5(g::text) FROM generate_series(1, 500) g;
CREATE TABLE f_altered (a int, b text, c int, d text) WITH (fillfactor = 50);
INSERT INTO f_altered SELECT g, 'b' || g, g, repeat('d', g % 100) FROM generate_series(1, 800) g;
ALTER TABLE f_altered DROP COLUMN c;
ALTER TABLE f_altered ADD COLUMN e int DEFAULT 7;
CREATE INDEX f_altered_a ON f_altered (a);

-- older versions and dead rowids for the fuzzer to walk over
UPDATE f_types SET num = num + 1 WHERE id % 5 = 0;
DELETE FROM f_child WHERE id % 11 = 0;
UPDATE f_parent SET note = 'updated' WHERE id % 7 = 0;
VACUUM ANALYZE;
