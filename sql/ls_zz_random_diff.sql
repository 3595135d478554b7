-- ls_zz_random_diff: a random differential test. The same random workload
-- (inserts, updates of indexed and non-indexed columns, key changes,
-- deletes, ON CONFLICT, rolled-back blocks, aborted transactions) runs
-- against a heap table and a leanstore table of the same shape; row counts,
-- errors and full contents (through several scan types) are compared as it
-- goes. The first difference stops the test with the offending statement.
SET max_parallel_workers_per_gather = 0;
CREATE TABLE rd_heap (id int PRIMARY KEY, k int, a int, t text, f float8) USING heap;
CREATE INDEX rd_heap_k ON rd_heap (k);
CREATE INDEX rd_heap_t ON rd_heap (t);
CREATE TABLE rd_ls (id int PRIMARY KEY, k int, a int, t text, f float8) USING leanstore;
CREATE INDEX rd_ls_k ON rd_ls (k);
CREATE INDEX rd_ls_t ON rd_ls (t);

-- one random statement (a format() template, %1$I = table name)
CREATE FUNCTION rd_statement() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r float8 := random();
  id1 int := (random() * 3000)::int;
  id2 int;
  kv text := CASE WHEN random() < 0.1 THEN 'NULL' ELSE ((random() * 100)::int)::text END;
  tv text := CASE WHEN random() < 0.15 THEN 'NULL'
                  WHEN random() < 0.1 THEN quote_literal(repeat(md5(random()::text), 80))
                  ELSE quote_literal('t' || (random() * 500)::int) END;
BEGIN
  id2 := id1 + (random() * 60)::int;
  IF r < 0.22 THEN
    RETURN format('INSERT INTO %%1$I VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING',
                  id1, kv, (random() * 1000)::int, tv, round(random()::numeric, 4));
  ELSIF r < 0.36 THEN
    RETURN format('INSERT INTO %%1$I SELECT g, g %%%% 97, g, ''bulk'' || g, NULL FROM generate_series(%s, %s) g ON CONFLICT (id) DO UPDATE SET a = %%1$I.a + 1, k = excluded.k',
                  id1, id2);
  ELSIF r < 0.48 THEN
    RETURN format('UPDATE %%1$I SET a = a + 1, f = f * 2 WHERE id BETWEEN %s AND %s', id1, id2);
  ELSIF r < 0.58 THEN
    RETURN format('UPDATE %%1$I SET k = %s WHERE id BETWEEN %s AND %s', kv, id1, id2);
  ELSIF r < 0.65 THEN
    RETURN format('UPDATE %%1$I SET t = %s WHERE k = %s', tv, (random() * 100)::int);
  ELSIF r < 0.70 THEN
    -- changes the primary key of one row (a multi-row key shift would fail or
    -- not depending on the physical order); may collide, then both fail alike
    RETURN format('UPDATE %%1$I SET id = %s, a = a + 1 WHERE id = %s', id2, id1);
  ELSIF r < 0.75 THEN
    RETURN format('UPDATE %%1$I SET a = NULL, t = NULL WHERE k IS NULL AND id < %s', id1);
  ELSIF r < 0.83 THEN
    RETURN format('DELETE FROM %%1$I WHERE id BETWEEN %s AND %s', id1, id1 + (random() * 10)::int);
  ELSIF r < 0.85 THEN
    RETURN format('DELETE FROM %%1$I WHERE k = %s', (random() * 100)::int);
  ELSIF r < 0.88 THEN
    RETURN format('DELETE FROM %%1$I WHERE t IS NULL AND a > %s', (random() * 1000)::int);
  ELSIF r < 0.96 THEN
    RETURN format('UPDATE %%1$I SET a = -a, t = t || ''+'' WHERE id %%%% 50 = %s', (random() * 50)::int);
  ELSE
    -- a statement that fails midway: its effects must vanish in both tables
    RETURN format('UPDATE %%1$I SET a = 1 / (a - a) WHERE id BETWEEN %s AND %s', id1, id2);
  END IF;
END $$;

-- executes a template on one table; returns "rows N" or "error SQLSTATE"
CREATE FUNCTION rd_exec(tmpl text, tab text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format(tmpl, tab);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN 'rows ' || n;
EXCEPTION WHEN OTHERS THEN
  -- an internal error names itself: a difference then shows what it was
  RETURN 'error ' || SQLSTATE || CASE WHEN SQLSTATE = 'XX000' THEN ': ' || SQLERRM ELSE '' END;
END $$;

-- runs several templates on one table inside a block that is then rolled back
CREATE FUNCTION rd_exec_undone(tmpls text[], tab text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE res text := ''; s text;
BEGIN
  BEGIN
    FOREACH s IN ARRAY tmpls LOOP
      res := res || rd_exec(s, tab) || ';';
    END LOOP;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'undo';
  EXCEPTION WHEN assert_failure THEN
    NULL;
  END;
  RETURN res;
END $$;

-- the two tables hold exactly the same rows; checked through the given scan settings
CREATE FUNCTION rd_compare(label text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE d1 bigint; d2 bigint; q text;
BEGIN
  SELECT count(*) INTO d1 FROM (SELECT * FROM rd_heap EXCEPT ALL SELECT * FROM rd_ls) x;
  SELECT count(*) INTO d2 FROM (SELECT * FROM rd_ls EXCEPT ALL SELECT * FROM rd_heap) x;
  IF d1 <> 0 OR d2 <> 0 THEN
    RAISE EXCEPTION 'differential test: contents differ after %: % rows only in heap, % only in leanstore', label, d1, d2
      USING DETAIL = format('heap only: %s; leanstore only: %s',
        (SELECT string_agg(x::text, ' ') FROM (SELECT * FROM rd_heap EXCEPT ALL SELECT * FROM rd_ls) x),
        (SELECT string_agg(x::text, ' ') FROM (SELECT * FROM rd_ls EXCEPT ALL SELECT * FROM rd_heap) x));
  END IF;
  -- lookups through each index of the leanstore table
  FOR q IN SELECT unnest(ARRAY[
      'SELECT count(*), sum(a), sum(hashtext(t)) FROM %I WHERE id BETWEEN 1000 AND 2000',
      'SELECT count(*), sum(a), sum(id) FROM %I WHERE k BETWEEN 10 AND 30',
      'SELECT count(*), sum(id) FROM %I WHERE k IS NULL',
      'SELECT count(*), sum(id) FROM %I WHERE t > ''t3''',
      'SELECT count(*), sum(id) FROM %I WHERE t IS NULL']) LOOP
    PERFORM rd_same_query(q, label);
  END LOOP;
END $$;

CREATE FUNCTION rd_same_query(q text, label text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE h text; l text; mode text;
BEGIN
  EXECUTE format(q, 'rd_heap') INTO h;
  FOREACH mode IN ARRAY ARRAY['seq', 'index', 'bitmap'] LOOP
    PERFORM set_config('enable_seqscan', (mode = 'seq')::text, true);
    PERFORM set_config('enable_indexscan', (mode = 'index')::text, true);
    PERFORM set_config('enable_indexonlyscan', (mode = 'index')::text, true);
    PERFORM set_config('enable_bitmapscan', (mode = 'bitmap')::text, true);
    EXECUTE format(q, 'rd_ls') INTO l;
    IF h IS DISTINCT FROM l THEN
      RAISE EXCEPTION 'differential test: after % query [%] (% scan) gives % on heap, % on leanstore',
        label, format(q, 'rd_ls'), mode, h, l;
    END IF;
  END LOOP;
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'on', true);
  PERFORM set_config('enable_indexonlyscan', 'on', true);
  PERFORM set_config('enable_bitmapscan', 'on', true);
END $$;

-- the driver: a procedure, so that it can commit and roll back as it goes
CREATE PROCEDURE rd_run(nstmts int, seed float8) LANGUAGE plpgsql AS $$
DECLARE
  stmt text; rh text; rl text; block text[]; label text;
  r float8;
  n_stmt int := 0; n_cmp int := 0; n_err int := 0; n_rollback int := 0; n_undone int := 0;
BEGIN
  PERFORM setseed(seed);
  FOR i IN 1..nstmts LOOP
    r := random();
    IF r < 0.05 THEN
      -- a block of statements run and rolled back within the transaction
      block := ARRAY[rd_statement(), rd_statement(), rd_statement()];
      rh := rd_exec_undone(block, 'rd_heap');
      rl := rd_exec_undone(block, 'rd_ls');
      stmt := 'undone block ' || array_to_string(block, ' ; ');
      n_undone := n_undone + 1;
    ELSE
      stmt := rd_statement();
      rh := rd_exec(stmt, 'rd_heap');
      rl := rd_exec(stmt, 'rd_ls');
    END IF;
    n_stmt := n_stmt + 1;
    label := format('statement %s [%s]', i, stmt);
    IF rh IS DISTINCT FROM rl THEN
      RAISE EXCEPTION 'differential test: % gives "%" on heap, "%" on leanstore', label, rh, rl;
    END IF;
    IF rh LIKE '%error%' THEN
      n_err := n_err + 1;
    END IF;
    IF i % 10 = 0 THEN
      PERFORM rd_compare(label);
      n_cmp := n_cmp + 1;
    END IF;
    -- transaction boundaries: mostly commit, sometimes roll back
    r := random();
    IF r < 0.15 THEN
      COMMIT;
    ELSIF r < 0.18 THEN
      ROLLBACK;
      n_rollback := n_rollback + 1;
      PERFORM rd_compare(label || ' and rollback');
    END IF;
  END LOOP;
  COMMIT;
  PERFORM rd_compare('the last statement');
  RAISE NOTICE 'differential test: % statements, % comparisons, % failing alike, % rolled-back transactions, % undone blocks',
    n_stmt, n_cmp, n_err, n_rollback, n_undone;
END $$;

CALL rd_run(6000, 0.42);
SELECT count(*), sum(id), sum(k), sum(a), count(t) FROM rd_ls;
-- after VACUUM both tables still agree, through every index
VACUUM rd_heap;
VACUUM rd_ls;
SELECT rd_compare('vacuum');
CALL rd_run(2000, 0.17);
SELECT count(*), sum(id), sum(k), sum(a), count(t) FROM rd_ls;
DROP TABLE rd_heap, rd_ls;
DROP PROCEDURE rd_run(int, float8);
DROP FUNCTION rd_statement(), rd_exec(text, text), rd_exec_undone(text[], text), rd_compare(text), rd_same_query(text, text);
