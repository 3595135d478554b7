#!/usr/bin/env bash
# test/stress/random_diff_statements.sh: the statement list that
# sql/ls_zz_random_diff.sql runs for a seed (its rd_statement() and the
# driver's random() calls replayed without executing anything), one line per
# statement: number, statement template, COMMIT / ROLLBACK after it (or
# nothing).  The workload does not depend on the storage, so a failing run's
# statement number names the transaction that lost a row: read the lines
# from the COMMIT or ROLLBACK before it.
#
# Usage (root): test/stress/random_diff_statements.sh [SEED [N]] > list.tsv
# (first run: SEED 0.42, N 6000; second run: 0.17, 2000).
set -uo pipefail
SEED=${1:-0.42}
N=${2:-6000}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/test/lib.sh"
ls_require_root
trap ls_cleanup EXIT
ls_scratch_dir random-diff-statements || exit 1
dir=$LS_SCRATCH
sed -n '/^CREATE FUNCTION rd_statement/,/^END \$\$;/p' "$REPO/sql/ls_zz_random_diff.sql" >"$dir/fn.sql"
cat >"$dir/gen.sql" <<SQL
DO \$\$
DECLARE r float8; stmt text; after text;
BEGIN
  PERFORM setseed($SEED);
  FOR i IN 1..$N LOOP
    r := random();
    IF r < 0.05 THEN
      stmt := 'undone block ' || array_to_string(ARRAY[rd_statement(), rd_statement(), rd_statement()], ' ; ');
    ELSE
      stmt := rd_statement();
    END IF;
    r := random();
    after := CASE WHEN r < 0.15 THEN 'COMMIT' WHEN r < 0.18 THEN 'ROLLBACK' ELSE '' END;
    RAISE NOTICE '%', i || E'\t' || stmt || E'\t' || after;
  END LOOP;
END \$\$;
SQL
chown -R "$LS_PG_USER": "$dir"
ls_cluster_start "$dir" "$REPO/test/regress.conf" >/dev/null || exit 1
(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -d postgres -f fn.sql -f gen.sql 2>&1) |
	sed -n 's/^psql:gen.sql:[0-9]*: NOTICE:  //p'
ls_cluster_stop "$dir"
