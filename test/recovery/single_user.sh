#!/usr/bin/env bash
# test/recovery/single_user.sh: in single-user mode (postgres --single, no
# background workers, so no leanstore log writer) using a leanstore table is
# a clear error, never a hang (bench/lookup.sh's callgrind job hung there);
# heap tables keep working, and the normal server afterwards has every row.
# Run by test/run (suite restart) as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin single_user
printf "shared_preload_libraries = 'leanstore'\nleanstore.hot_memory = '32MB'\nautovacuum = off\n" | ls_test_conf
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql postgres "$@"; }
q -c "CREATE EXTENSION leanstore" -c "CREATE TABLE t (id int) USING leanstore" \
	-c "CREATE TABLE h (id int)" -c "INSERT INTO t SELECT generate_series(1, 100)" \
	-c "INSERT INTO h SELECT generate_series(1, 100)" >/dev/null
ls_cluster_stop "$dir"
out=$(cd "$dir" && printf 'SELECT count(*) FROM h;\nSELECT count(*) FROM t;\n' |
	timeout 60 runuser -u "$LS_PG_USER" -- "$LS_PG_BIN/postgres" --single -D "$dir/data" postgres 2>&1)
rc=$?
ls_expect "single-user mode ends (no hang)" yes "$([ "$rc" != 124 ] && echo yes || echo no)"
ls_expect "a heap table reads" 1 "$(grep -c 'count = "100"' <<<"$out")"
ls_expect "a leanstore table is refused" 1 "$(grep -c 'leanstore tables cannot be used in single-user mode' <<<"$out")"
ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -w -t 120 start -l "$dir/server.log" >/dev/null 2>&1 || echo "start failed"
ls_expect "the normal server has every row" 100 "$(q -c "SELECT count(*) FROM t")"
ls_cluster_stop "$dir"
if [ "$fail" = 0 ]; then echo "$LS_TEST: ok"; else echo "$LS_TEST: FAILED"; echo "$out" | tail -20; fi
exit "$fail"
