-- test/fuzz/verify.sql: leanstore_verify() of every leanstore relation; a
-- failure is reported as a WARNING starting with VERIFY FAILED
DO $$
DECLARE
	r record;
	bad int := 0;
	n int := 0;
BEGIN
	FOR r IN SELECT c.oid::regclass AS rel
	         FROM pg_class c JOIN pg_am a ON a.oid = c.relam
	         WHERE a.amname = 'leanstore' AND c.relkind IN ('r', 'm')
	         ORDER BY 1
	LOOP
		BEGIN
			PERFORM leanstore_verify(r.rel);
			n := n + 1;
		EXCEPTION WHEN OTHERS THEN
			bad := bad + 1;
			RAISE WARNING 'VERIFY FAILED %: % (%)', r.rel, SQLERRM, SQLSTATE;
		END;
	END LOOP;
	RAISE WARNING 'verified % leanstore relations, % failed', n, bad;
END $$;
