#!/usr/bin/env bash
# test/recovery/restart_lost.sh: after a crash, leanstore tables come back
# from leanstore's log (hot rows) and their trees' undo journals (cold
# pages); a table whose cold pages changed and whose undo journal is gone
# (here: deleted on purpose) cannot be recovered: touching it gives a clear
# error naming the cause, and TRUNCATE or DROP make it usable again. Runs
# psql scripts on a throwaway cluster: a first run, a clean restart, a
# second run, an immediate shutdown (a crash), the journals removed, a
# start; compares the combined output with expected/restart_lost.out. Run
# by test/run (as root; the server runs as postgres). Writes the output to
# $1 (default: a temporary file) and exits non-zero on a difference.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_require_root
trap ls_cleanup EXIT
out=${1:-$(mktemp)}
ls_scratch_dir restart || exit 1
dir=$LS_SCRATCH
cp "$HERE"/restart_lost_1.sql "$HERE"/restart_lost_1b.sql "$HERE"/restart_lost_2.sql "$dir/"
printf "shared_preload_libraries = 'leanstore'\nleanstore.hot_memory = '64MB'\nfsync = off\nautovacuum = off\n" >"$dir/test.conf"
chown -R "$LS_PG_USER": "$dir"
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
psql_run() {
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -a -q -d postgres -v VERBOSITY=default -f "$1" 2>&1)
}
{
	psql_run restart_lost_1.sql
	echo "-- (clean restart)"
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || echo "stop failed"
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -w -t 120 start -l "$dir/server.log" >/dev/null 2>&1 ||
		echo "start failed"
	psql_run restart_lost_1b.sql
	echo "-- (immediate shutdown: a crash; the undo journals removed; then start)"
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 ||
		echo "immediate stop failed"
	[ -n "$(ls "$dir/data/pg_leanstore/undo")" ] || echo "no undo journal was written"
	rm -f "$dir/data/pg_leanstore/undo/"*
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -w -t 120 start -l "$dir/server.log" >/dev/null 2>&1 ||
		echo "start failed"
	psql_run restart_lost_2.sql
} >"$out"
ls_cluster_stop "$dir"
if diff -u "$HERE/expected/restart_lost.out" "$out"; then
	echo "restart_lost: ok"
else
	echo "restart_lost: FAILED (diff above)"
	exit 1
fi
