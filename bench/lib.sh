# Shell functions of bench/run (sourced after test/lib.sh, not executed).
#
#   bench_install_clients         sysbench, python3-matplotlib, a Go >= 1.21
#   bench_build_gotpc             go-tpc from bench/go.mod into build/go-tpc
#   bench_cluster_start NAME CONF [CAP_BYTES]
#                                 a throwaway cluster (socket in its scratch
#                                 directory, TCP on 127.0.0.1), optionally in a
#                                 memory cgroup of CAP_BYTES; sets BC_DIR, BC_PORT
#   bench_cluster_stop DIR        stop it (and remove its cgroup)
#   bench_psql DIR PORT DB ARGS   psql as postgres over the cluster's socket
#   bench_record WORKLOAD VARIANT ENGINE RUN METRIC VALUE STATUS NOTE
#                                 one line of bench/out/results/WORKLOAD.tsv
#   bench_meta WORKLOAD KEY VALUE one setting of the workload, for the report
#
# and of the heap-vs-leanstore scripts (bench/lookup.sh, bench/scan_fetch.sh):
#   bench_stats FORMAT            "median min max" of the numbers on stdin
#   bench_pair_conf [LINE...]     their cluster's settings, then LINEs
#   bench_callgrind_server DIR DATA [-c SETTING...]
#                                 DIR/input.sql in one backend of a server
#                                 under callgrind, a dump per statement
#   bench_cg_total FILE           the instructions a callgrind dump counted
#
# Every cluster lives in a scratch directory of test/lib.sh, so ls_cleanup
# stops it whatever happens; bench_cleanup also removes our cgroups.

BENCH_PY=${BENCH_PYTHON:-/usr/bin/python3}
BENCH_CGROUPS=()

# bench_go: prints the path of a Go toolchain >= 1.21 (go-tpc v1.0.12 needs
# it), or nothing.
bench_go() {
	local g v
	for g in "$(command -v go 2>/dev/null)" /usr/local/go/bin/go /usr/lib/go-1.2[1-9]/bin/go /usr/lib/go/bin/go; do
		[ -n "$g" ] && [ -x "$g" ] || continue
		v=$("$g" env GOVERSION 2>/dev/null) || continue
		v=${v#go}
		# major.minor >= 1.21
		if awk -v v="$v" 'BEGIN { split(v, a, "."); exit !(a[1] > 1 || (a[1] == 1 && a[2] + 0 >= 21)) }'; then
			echo "$g"
			return 0
		fi
	done
	return 1
}

bench_install_clients() {
	ls_install_packages sysbench python3-matplotlib || return 1
	bench_go >/dev/null && return 0
	# Debian 12's golang-go is 1.19, too old for go-tpc v1.0.12 (go 1.21):
	# take the Go of bookworm-backports.
	ls_log "packages: no Go >= 1.21; installing golang-1.22-go from bookworm-backports"
	if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		echo 'deb http://deb.debian.org/debian bookworm-backports main' \
			>/etc/apt/sources.list.d/leanstore-bench-backports.list
	fi
	DEBIAN_FRONTEND=noninteractive apt-get update -q || return 1
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-1.22-go || return 1
	bench_go >/dev/null
}

# go-tpc v1.0.12 as bench/go.mod pins it (checksums in bench/go.sum).
BENCH_GOTPC=$REPO/build/go-tpc
bench_build_gotpc() {
	local go
	[ -x "$BENCH_GOTPC" ] && [ "$BENCH_GOTPC" -nt "$REPO/bench/go.sum" ] && return 0
	go=$(bench_go) || { echo "no Go >= 1.21 found" >&2; return 1; }
	ls_log "building go-tpc (bench/go.mod: github.com/pingcap/go-tpc v1.0.12) with $go"
	mkdir -p "$REPO/build"
	(cd "$REPO/bench" && GOFLAGS=-mod=readonly "$go" build -o "$BENCH_GOTPC" github.com/pingcap/go-tpc/cmd/go-tpc)
}

# bench_cgroup_create NAME BYTES: a memory cgroup (v1, else v2) limited to
# BYTES; prints the file to write a pid into, or fails.
bench_cgroup_create() {
	local name=$1 bytes=$2 d
	if [ -d /sys/fs/cgroup/memory ] && [ -w /sys/fs/cgroup/memory ]; then
		d=/sys/fs/cgroup/memory/$name
		mkdir -p "$d" || return 1
		BENCH_CGROUPS+=("$d")
		echo "$bytes" >"$d/memory.limit_in_bytes" || return 1
		echo "$d/cgroup.procs"
		return 0
	fi
	if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
		grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
			echo +memory >/sys/fs/cgroup/cgroup.subtree_control || return 1
		d=/sys/fs/cgroup/$name
		mkdir -p "$d" || return 1
		BENCH_CGROUPS+=("$d")
		echo "$bytes" >"$d/memory.max" || return 1
		echo "$d/cgroup.procs"
		return 0
	fi
	echo "no writable memory cgroup (v1 /sys/fs/cgroup/memory or v2 with the memory controller)" >&2
	return 1
}

# Peak memory of a cgroup in bytes (v1 max_usage_in_bytes, v2 memory.peak).
bench_cgroup_peak() {
	local d=$1
	if [ -f "$d/memory.max_usage_in_bytes" ]; then cat "$d/memory.max_usage_in_bytes"
	elif [ -f "$d/memory.peak" ]; then cat "$d/memory.peak"
	else echo NA; fi
}

# bench_cgroup_oom DIR: " (the memory cgroup OOM-killed N processes)" when
# the kernel killed processes of the cgroup for its limit, else nothing.
bench_cgroup_oom() {
	local n
	n=$(awk '$1 == "oom_kill" { print $2 }' "$1/memory.oom_control" "$1/memory.events" 2>/dev/null | head -n1)
	[ -n "$n" ] && [ "$n" -gt 0 ] && echo " (the memory cgroup OOM-killed $n server processes so far)"
	return 0
}

bench_cleanup() {
	local d
	ls_cleanup
	for d in "${BENCH_CGROUPS[@]}"; do
		[ -d "$d" ] && rmdir "$d" 2>/dev/null
	done
	return 0
}

# bench_cluster_start NAME CONF [CAP_BYTES]: call in the main shell (not in
# $(...)): the scratch directory must be registered for the cleanup trap.
# With CAP_BYTES the postmaster (and so every backend, and the page cache
# they fill) starts inside a memory cgroup of that size: BC_CGROUP.
bench_cluster_start() {
	local name=$1 conf=$2 cap=${3:-} port procs
	ls_scratch_dir "$name" || return 1
	BC_DIR=$LS_SCRATCH
	BC_CGROUP=
	port=$(ls_free_port) || { echo "no free port" >&2; return 1; }
	ls_as_pg "$LS_PG_BIN/initdb" -D "$BC_DIR/data" --no-locale -E UTF8 -A trust >"$BC_DIR/initdb.log" 2>&1 ||
		{ cat "$BC_DIR/initdb.log"; return 1; }
	cat "$conf" >>"$BC_DIR/data/postgresql.conf"
	printf "listen_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nport = %s\n" "$BC_DIR" "$port" \
		>>"$BC_DIR/data/postgresql.conf"
	if [ -n "$cap" ]; then
		procs=$(bench_cgroup_create "leanstore-bench-$$-$name" "$cap") || return 1
		BC_CGROUP=$(dirname "$procs")
		# (bench_cgroup_create ran in a subshell: remember it here)
		BENCH_CGROUPS+=("$BC_CGROUP")
		# the shell joins the cgroup, then becomes pg_ctl: the postmaster
		# it forks is born inside
		sh -c 'echo $$ >"$1" && shift && exec "$@"' sh "$procs" \
			runuser -u "$LS_PG_USER" -- "$LS_PG_BIN/pg_ctl" -D "$BC_DIR/data" -l "$BC_DIR/server.log" -w -t 120 start \
			>/dev/null || { tail -n 40 "$BC_DIR/server.log"; return 1; }
	else
		ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$BC_DIR/data" -l "$BC_DIR/server.log" -w -t 120 start >/dev/null ||
			{ tail -n 40 "$BC_DIR/server.log"; return 1; }
	fi
	BC_PORT=$port
}

bench_cluster_stop() {
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null 2>&1 || true
}

# bench_psql DIR PORT DB ARGS...
bench_psql() {
	local dir=$1 port=$2 db=$3
	shift 3
	ls_as_pg "$LS_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -d "$db" "$@"
}

# bench_two_dbs DIR PORT: databases bench_heap and bench_leanstore; the
# second has the extension and makes leanstore its default access method,
# so every client's CREATE TABLE makes leanstore tables there.
bench_two_dbs() {
	bench_psql "$1" "$2" postgres -c "CREATE DATABASE bench_heap" -c "CREATE DATABASE bench_leanstore" &&
		bench_psql "$1" "$2" bench_leanstore -c "CREATE EXTENSION leanstore" \
			-c "ALTER DATABASE bench_leanstore SET default_table_access_method = leanstore"
}

# bench_check_am DIR PORT PATTERN N: the tables matching PATTERN are heap in
# bench_heap and leanstore in bench_leanstore (N of them).
bench_check_am() {
	local dir=$1 port=$2 pat=$3 n=$4 db am want got
	for db in bench_heap bench_leanstore; do
		am=${db#bench_}
		got=$(bench_psql "$dir" "$port" "$db" -At -c "SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
			WHERE c.relname LIKE '$pat' AND c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace AND a.amname = '$am'")
		want=$n
		if [ "$got" != "$want" ]; then
			echo "expected $want $am tables like '$pat' in $db, found $got" >&2
			return 1
		fi
	done
}

# Results: one TSV per workload, rewritten by each run of the workload.
BENCH_RESULTS=${OUT:-$REPO/bench/out}/results

bench_results_reset() {
	mkdir -p "$BENCH_RESULTS"
	printf 'workload\tvariant\tengine\trun\tmetric\tvalue\tstatus\tnote\n' >"$BENCH_RESULTS/$1.tsv"
	: >"$BENCH_RESULTS/$1.meta"
}

bench_record() {
	local note=${8:-}
	note=${note//$'\t'/ }
	note=${note//$'\n'/ }
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$note" >>"$BENCH_RESULTS/$1.tsv"
}

bench_meta() {
	local v=${3//$'\n'/ }
	printf '%s\t%s\n' "$2" "$v" >>"$BENCH_RESULTS/$1.meta"
}

# bench_parse KIND FILE: the number a client log reports (bench/report.py)
bench_parse() {
	"$BENCH_PY" "$REPO/bench/report.py" parse "$1" "$2"
}

# The first ERROR line of a client or server log, for a failure's note.
bench_first_error() {
	{ grep -m1 -iE 'ERROR|FATAL|failed|panic|server closed' "$1" || head -n1 "$1"; } 2>/dev/null | cut -c1-300
}

# bench_stats FORMAT: "median min max" of the numbers on stdin, each with
# the printf FORMAT ("NA NA NA" when there are none)
bench_stats() {
	sort -g | awk -v f="$1" '{ v[NR] = $1 }
		END {
			if (NR == 0) { print "NA NA NA"; exit }
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf f " " f " " f "\n", m, v[1], v[NR]
		}'
}

# bench_pair_conf [LINE...]: the settings of the throwaway cluster on which
# bench/lookup.sh and bench/scan_fetch.sh compare heap and leanstore
# (leanstore preloaded, 1GB shared_buffers, a 2GB hot tier, synchronous
# commits, no autovacuum), then each LINE
bench_pair_conf() {
	printf '%s\n' "shared_preload_libraries = 'leanstore'" "shared_buffers = '1GB'" \
		"leanstore.hot_memory = '2GB'" "synchronous_commit = on" "autovacuum = off" "$@"
}

# bench_callgrind_server DIR DATA [-c SETTING...]: the statements of
# DIR/input.sql (one a line) in one client backend of a server on the
# cluster DATA (leanstore preloaded, no JIT, no autovacuum, socket in DIR,
# then the SETTINGs) that runs under valgrind --tool=callgrind, with a dump
# after every statement: DIR/cg.out.N for line N.  Not `postgres --single`:
# single-user mode starts no background worker, so no log writer, and
# leanstore tables refuse it.  The server's other processes run under
# callgrind too (idle, their profiles are dropped); fails on a start,
# valgrind or SQL error.
bench_callgrind_server() {
	local dir=$1 data=$2 port pid f n t
	shift 2
	ls_install_packages valgrind >/dev/null || return 1
	port=$(ls_free_port) || { echo "no free port" >&2; return 1; }
	rm -f "$dir"/cg.*
	# the postmaster forks its children without exec: all stay under callgrind
	ls_as_pg valgrind --tool=callgrind --dump-after=PortalRun --callgrind-out-file="$dir/cg.%p" \
		"$LS_PG_BIN/postgres" -D "$data" -c shared_preload_libraries=leanstore \
		-c jit=off -c autovacuum=off -c listen_addresses= -c unix_socket_directories="$dir" \
		-c logging_collector=off -p "$port" "$@" >"$dir/server.log" 2>&1 &
	for t in $(seq 1200); do
		ls_as_pg pg_isready -q -h "$dir" -p "$port" && break
		if [ "$t" = 1200 ] || ! kill -0 $! 2>/dev/null; then
			echo "the server under callgrind did not start" >&2
			tail -n 30 "$dir/server.log" >&2
			return 1
		fi
		sleep 0.25
	done
	{ echo "SELECT pg_backend_pid();"; sed 's/$/;/' "$dir/input.sql"; } >"$dir/input-psql.sql"
	chown "$LS_PG_USER": "$dir/input-psql.sql"
	if ! ls_as_pg psql -X -q -At -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -d postgres \
		-f "$dir/input-psql.sql" >"$dir/psql.log" 2>&1; then
		grep -m3 ERROR "$dir/psql.log" >&2 || tail -n 5 "$dir/psql.log" >&2
		ls_as_pg pg_ctl -D "$data" -m immediate -w stop >/dev/null 2>&1
		return 1
	fi
	pid=$(head -n1 "$dir/psql.log")
	ls_as_pg pg_ctl -D "$data" -m fast -w -t 600 stop >/dev/null ||
		{ tail -n 30 "$dir/server.log" >&2; return 1; }
	# dump 1 is the pid query; dump N + 1 is line N
	for f in "$dir/cg.$pid".*; do
		n=${f##*.}
		[ "$n" -ge 2 ] 2>/dev/null && mv "$f" "$dir/cg.out.$((n - 1))"
	done
	rm -f "$dir"/cg.[0-9]*
	ls "$dir"/cg.out.* >/dev/null 2>&1 || { echo "no callgrind dumps of backend $pid" >&2; return 1; }
}

# bench_cg_total FILE: the instructions the callgrind dump FILE counted
bench_cg_total() {
	sed -n 's/^totals: \([0-9]*\).*/\1/p; s/^summary: \([0-9]*\).*/\1/p' "$1" | head -1
}

# bench_pair_summary TIMES PREFIX NAME...: for lines "run name engine ms"
# (engines heap and leanstore, interleaved runs) print per name the medians
# with min / max and the median of the runs' paired ratios leanstore / heap,
# and RESULT PREFIX<name>_ratio=... (bench/index_build.sh, bench/cold_write.sh).
bench_pair_summary() {
	local times=$1 prefix=$2 name h l q hm hmin hmax lm lmin lmax qm qmin qmax
	shift 2
	for name in "$@"; do
		h=$(awk -v n="$name" '$2 == n && $3 == "heap" { print $4 }' "$times" | bench_stats %.1f)
		l=$(awk -v n="$name" '$2 == n && $3 == "leanstore" { print $4 }' "$times" | bench_stats %.1f)
		q=$(awk -v n="$name" '$2 == n { t[$1, $3] = $4; r[$1] = 1 }
			END { for (i in r) if (t[i, "heap"] > 0) print t[i, "leanstore"] / t[i, "heap"] }' "$times" | bench_stats %.2f)
		read -r hm hmin hmax <<<"$h"
		read -r lm lmin lmax <<<"$l"
		read -r qm qmin qmax <<<"$q"
		echo "$name: heap ${hm} ms ($hmin $hmax), leanstore ${lm} ms ($lmin $lmax), ratio $qm ($qmin $qmax)"
		echo "RESULT ${prefix}${name}_ratio=$qm"
	done
}
