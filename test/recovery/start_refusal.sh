#!/usr/bin/env bash
# test/recovery/start_refusal.sh: the server refuses to start with a
# start-time leanstore setting that its bounds refuse, and says why in the
# server log (PostgreSQL alone would only warn and start with the default).
# One cluster; each case adds its settings through an included file, tries
# pg_ctl start, wants it to fail and the message in that attempt's log.
# A last start without the bad settings must work. Run by test/run as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin start_refusal
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '64MB'
leanstore.buffer_pool = '16MB'
leanstore.max_tables = 64
autovacuum = off
include_if_exists = 'bad.conf'
EOF
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
ls_cluster_stop "$dir"
n=0

# refuse NAME EXPECTED SETTING...: start with the settings, want a refusal
# whose log holds EXPECTED (a fixed string) as a FATAL (PostgreSQL's WARNING
# when it defines the variable comes first and is not enough).
refuse() {
	local name=$1 want=$2 log
	shift 2
	n=$((n + 1))
	log=$dir/start-$n.log
	printf '%s\n' "$@" >"$dir/data/bad.conf"
	chown "$LS_PG_USER": "$dir/data/bad.conf"
	if ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -l "$log" -w -t 60 start >/dev/null 2>&1; then
		echo "start_refusal: $name: the server started"
		ls_cluster_stop "$dir"
		fail=1
	elif ! grep -F -- "$want" "$log" | grep -q 'FATAL:'; then
		echo "start_refusal: $name: no FATAL \"$want\" in the server log:"
		tail -n 20 "$log"
		fail=1
	else
		echo "start_refusal: $name: ok ($(grep -F -- "$want" "$log" | grep 'FATAL:' | head -n 1))"
	fi
}

range='is outside the valid range for parameter'
refuse "hot_memory below its minimum" "$range \"leanstore.hot_memory\"" \
	"leanstore.hot_memory = '16MB'"
refuse "hot_memory not a size" 'invalid value for parameter "leanstore.hot_memory": "lots"' \
	"leanstore.hot_memory = 'lots'"
refuse "hot_memory too small for max_tables" "leanstore.hot_memory is too small: 32 MB" \
	"leanstore.hot_memory = '32MB'" "leanstore.max_tables = 1048576"
refuse "buffer_pool below its minimum" "$range \"leanstore.buffer_pool\"" \
	"leanstore.buffer_pool = '1MB'"
refuse "max_tables below its minimum" "$range \"leanstore.max_tables\"" \
	"leanstore.max_tables = 8"
refuse "log_buffer below its minimum" "$range \"leanstore.log_buffer\"" \
	"leanstore.log_buffer = '128kB'"
refuse "hash_cache_memory above its maximum" "$range \"leanstore.hash_cache_memory\"" \
	"leanstore.hash_cache_memory = '2TB'"
refuse "pack_threshold above its maximum" "$range \"leanstore.pack_threshold\"" \
	"leanstore.pack_threshold = 101"

# without them the same cluster starts and leanstore works
rm -f "$dir/data/bad.conf"
if ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null 2>&1; then
	got=$(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -At -d postgres \
		-c "CREATE EXTENSION leanstore" \
		-c "CREATE TABLE t (id int) USING leanstore" \
		-c "INSERT INTO t SELECT generate_series(1, 10)" \
		-c "SELECT count(*) FROM t" \
		-c "SHOW leanstore.hot_memory" 2>&1)
	if [ "$got" != "$(printf '10\n64MB')" ]; then
		echo "start_refusal: the good start: want [10 64MB] got [$got]"
		fail=1
	fi
	ls_cluster_stop "$dir"
else
	echo "start_refusal: the cluster does not start with good settings:"
	tail -n 20 "$dir/server.log"
	fail=1
fi
if [ "$fail" != 0 ]; then
	echo "start_refusal: FAILED"
	exit 1
fi
echo "start_refusal: ok"
