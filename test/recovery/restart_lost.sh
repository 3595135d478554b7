#!/usr/bin/env bash
# test/recovery/restart_lost.sh: after a crash, leanstore tables come back
# from leanstore's log, except one whose rows were moving into its cold
# pages (bulk load, pack: not logged yet), which gives a clear error when
# touched and can be truncated or dropped. Runs two psql scripts on a
# throwaway cluster with an immediate shutdown (a crash: no shutdown
# checkpoint, no clean leanstore shutdown) in between and compares
# their combined output with expected/restart_lost.out. Run by test/run (as
# root; the server runs as postgres). Writes the output to $1 (default: a
# temporary file) and exits non-zero on a difference.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_require_root
trap ls_cleanup EXIT
out=${1:-$(mktemp)}
ls_scratch_dir restart || exit 1
dir=$LS_SCRATCH
cp "$HERE"/restart_lost_[12].sql "$dir/"
printf "shared_preload_libraries = 'leanstore'\nleanstore.hot_memory = '64MB'\nfsync = off\nautovacuum = off\n" >"$dir/test.conf"
chown -R "$LS_PG_USER": "$dir"
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
psql_run() {
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -a -q -d postgres -v VERBOSITY=default -f "$1" 2>&1)
}
{
	psql_run restart_lost_1.sql
	echo "-- (immediate shutdown: a crash, then start)"
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 ||
		echo "immediate stop failed"
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
