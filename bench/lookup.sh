#!/usr/bin/env bash
# bench/lookup.sh [all|inserver|pgbench]: primary-key point lookups, heap vs
# leanstore (the hash lookup, issue 10), on one throwaway cluster.
#
#   inserver  1M rows of pgbench_accounts' shape in a heap and a leanstore
#             table (same rows, VACUUM ANALYZE'd, every key looked up once
#             to warm shared_buffers and the hash cache); a PL/pgSQL
#             function per table looks up LK_LOOKUPS random keys
#             (SELECT abalance INTO x ... WHERE aid = k) and returns the
#             microseconds per lookup.  LK_RUNS rounds; each round runs
#             heap, leanstore and leanstore with leanstore.hash_cache = off,
#             in an order that rotates per round.  Per round the paired
#             ratio heap us / leanstore us (> 1: leanstore faster); the
#             median of the rounds' ratios and their min / max are printed:
#               RESULT inserver_pk_lookup_ratio=...
#               RESULT inserver_pk_lookup_ratio_nocache=...
#   pgbench   pgbench scale LK_SCALE loaded once into heap tables and once
#             into leanstore tables; select-only (-S) with -M prepared,
#             LK_RUNS interleaved runs of LK_SECS seconds, LK_CLIENTS
#             clients; median TPS ratio leanstore / heap:
#               RESULT pgbench_select_prepared_ratio=...
#   sysbench  sysbench oltp_point_select (pgsql driver, prepared statements):
#             LK_SB_ROWS (1000000) rows in one table per engine (databases
#             whose default_table_access_method is heap / leanstore),
#             LK_RUNS interleaved runs of LK_SECS seconds, LK_CLIENTS
#             threads; median of the paired ratios leanstore / heap:
#               RESULT sysbench_point_select_ratio=...
#   callgrind instruction counts per lookup (deterministic, no noise): one
#             backend of a server running under valgrind --tool=callgrind,
#             LK_CG_ROWS rows per table, warmed, then the same PL/pgSQL loop
#             (LK_CG_LOOKUPS keys, a fixed permutation) on heap, leanstore
#             and leanstore with hash_cache = off, one dump per statement;
#             profiles kept in bench/out/lookup-cg-<engine>.out
#   all       (default) inserver, pgbench and sysbench (when installed)
#
# Environment: LK_ROWS (1000000), LK_LOOKUPS per measurement (200000),
# LK_RUNS (7), LK_SCALE (10), LK_SECS (10), LK_CLIENTS (2),
# LK_NO_BUILD=1 skips make install.  Output also in bench/out/lookup-*.txt.
# Both engines run with autovacuum = off and synchronous_commit = on (the
# default; the measured queries are read-only, so it does not matter here).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
# shellcheck source=test/lib.sh
. "$REPO/test/lib.sh"
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

JOB=${1:-all}
case "$JOB" in
	all | inserver | pgbench | sysbench | callgrind) ;;
	*) echo "usage: bench/lookup.sh [all|inserver|pgbench|sysbench|callgrind]" >&2; exit 2 ;;
esac

ROWS=${LK_ROWS:-1000000}
LOOKUPS=${LK_LOOKUPS:-200000}
RUNS=${LK_RUNS:-7}
SCALE=${LK_SCALE:-10}
SECS=${LK_SECS:-10}
CLIENTS=${LK_CLIENTS:-2}
SB_ROWS=${LK_SB_ROWS:-1000000}
CG_ROWS=${LK_CG_ROWS:-100000}
CG_LOOKUPS=${LK_CG_LOOKUPS:-20000}
STATUS=0

ls_bench_setup lookup "${LK_NO_BUILD:-0}"

# "median min max" of the numbers on stdin
stats() { bench_stats '%.3f'; }

PSQL="$LS_PG_BIN/psql -X -q -v ON_ERROR_STOP=1"

start_cluster() {
	local dir=$1
	# every row hot (bulk_load_rows = 0): loads do not go straight to the cold tier
	bench_pair_conf "leanstore.hash_cache_memory = '64MB'" "leanstore.bulk_load_rows = 0" \
		"max_connections = 20" "max_wal_size = '4GB'" "checkpoint_timeout = '30min'" \
		>"$dir/bench.conf"
	ls_cluster_start "$dir" "$dir/bench.conf"
}

run_inserver() {
	local dir=$1 r order eng us h l n ratio ratio_nc
	ls_log "inserver: $ROWS rows per table, $LOOKUPS random lookups per measurement, $RUNS rounds"
	ls_as_pg $PSQL -d postgres -c "CREATE DATABASE lookup" || return 1
	ls_as_pg $PSQL -d lookup <<-EOF || return 1
		CREATE EXTENSION leanstore;
		CREATE TABLE acc_heap (aid int PRIMARY KEY, bid int, abalance int, filler char(84)) USING heap;
		CREATE TABLE acc_ls (aid int PRIMARY KEY, bid int, abalance int, filler char(84)) USING leanstore;
		INSERT INTO acc_heap SELECT g, g / 100000, 0, '' FROM generate_series(1, $ROWS) g;
		INSERT INTO acc_ls SELECT * FROM acc_heap;
		VACUUM ANALYZE acc_heap;
		VACUUM ANALYZE acc_ls;
		CREATE FUNCTION lk_heap(n int, nrows int) RETURNS float8 LANGUAGE plpgsql AS \$\$
		DECLARE s bigint := 0; x int; k int; t0 timestamptz := clock_timestamp();
		BEGIN
		  FOR i IN 1..n LOOP
		    k := 1 + floor(random() * nrows)::int;
		    SELECT abalance INTO x FROM acc_heap WHERE aid = k;
		    s := s + x;
		  END LOOP;
		  RETURN extract(epoch FROM clock_timestamp() - t0) * 1e6 / n;
		END \$\$;
		CREATE FUNCTION lk_ls(n int, nrows int) RETURNS float8 LANGUAGE plpgsql AS \$\$
		DECLARE s bigint := 0; x int; k int; t0 timestamptz := clock_timestamp();
		BEGIN
		  FOR i IN 1..n LOOP
		    k := 1 + floor(random() * nrows)::int;
		    SELECT abalance INTO x FROM acc_ls WHERE aid = k;
		    s := s + x;
		  END LOOP;
		  RETURN extract(epoch FROM clock_timestamp() - t0) * 1e6 / n;
		END \$\$;
		-- warm: every key once (shared_buffers; hash cache entries)
		DO \$\$ BEGIN
		  FOR i IN 1..$ROWS LOOP
		    PERFORM abalance FROM acc_heap WHERE aid = i;
		    PERFORM abalance FROM acc_ls WHERE aid = i;
		  END LOOP;
		END \$\$;
	EOF
	ls_as_pg $PSQL -d lookup -c "EXPLAIN (COSTS OFF) SELECT abalance FROM acc_ls WHERE aid = 1"
	: >"$OUT/lookup-inserver-runs.txt"
	for r in $(seq 1 "$RUNS"); do
		case $((r % 3)) in
			1) order="heap ls lsoff" ;;
			2) order="ls lsoff heap" ;;
			0) order="lsoff heap ls" ;;
		esac
		for eng in $order; do
			case $eng in
				heap) us=$(ls_as_pg $PSQL -At -d lookup -c "SELECT lk_heap($LOOKUPS, $ROWS)") ;;
				ls) us=$(ls_as_pg $PSQL -At -d lookup -c "SELECT lk_ls($LOOKUPS, $ROWS)") ;;
				lsoff) us=$(ls_as_pg $PSQL -At -d lookup -c "SET leanstore.hash_cache = off" \
					-c "SELECT lk_ls($LOOKUPS, $ROWS)") ;;
			esac
			[ -n "$us" ] || return 1
			echo "$r $eng $us" >>"$OUT/lookup-inserver-runs.txt"
		done
		h=$(awk -v r="$r" '$1 == r && $2 == "heap" { print $3 }' "$OUT/lookup-inserver-runs.txt")
		l=$(awk -v r="$r" '$1 == r && $2 == "ls" { print $3 }' "$OUT/lookup-inserver-runs.txt")
		n=$(awk -v r="$r" '$1 == r && $2 == "lsoff" { print $3 }' "$OUT/lookup-inserver-runs.txt")
		printf '  round %d: us/lookup heap %.3f  leanstore %.3f  leanstore (hash_cache off) %.3f  ratio %.3f  (off %.3f)\n' \
			"$r" "$h" "$l" "$n" "$(echo "$h $l" | awk '{ print $1 / $2 }')" "$(echo "$h $n" | awk '{ print $1 / $2 }')"
		echo "$r $(echo "$h $l $n" | awk '{ printf "%.4f %.4f", $1 / $2, $1 / $3 }')" >>"$OUT/lookup-inserver-ratios.txt.tmp"
	done
	mv "$OUT/lookup-inserver-ratios.txt.tmp" "$OUT/lookup-inserver-ratios.txt"
	ls_as_pg $PSQL -d lookup -c "SELECT hash_cache_entries, hash_cache_hits, hash_cache_misses, hash_cache_stale, hash_cache_evictions FROM leanstore_stats()"
	for eng in heap ls lsoff; do
		set -- $(awk -v e="$eng" '$2 == e { print $3 }' "$OUT/lookup-inserver-runs.txt" | stats)
		printf '  %-6s us/lookup median %s  min %s  max %s\n' "$eng" "$1" "$2" "$3"
	done
	set -- $(awk '{ print $2 }' "$OUT/lookup-inserver-ratios.txt" | stats)
	ratio=$1
	echo "  paired ratio heap/leanstore: median $1  min $2  max $3  ($RUNS rounds)"
	set -- $(awk '{ print $3 }' "$OUT/lookup-inserver-ratios.txt" | stats)
	ratio_nc=$1
	echo "  paired ratio heap/leanstore (hash_cache off): median $1  min $2  max $3"
	echo "RESULT inserver_pk_lookup_ratio=$ratio"
	echo "RESULT inserver_pk_lookup_ratio_nocache=$ratio_nc"
}

run_pgbench() {
	local dir=$1 i eng tps h l ratio pgbench=$LS_PG_BIN/pgbench
	ls_log "pgbench -S -M prepared: scale $SCALE, $CLIENTS clients, ${SECS}s per run, $RUNS runs per engine"
	ls_as_pg $PSQL -d postgres -c "CREATE DATABASE pgb_heap" -c "CREATE DATABASE pgb_leanstore" || return 1
	ls_as_pg $PSQL -d pgb_leanstore -c "CREATE EXTENSION leanstore" || return 1
	ls_as_pg "$pgbench" -i -q -s "$SCALE" pgb_heap >"$OUT/lookup-pgbench-init-heap.log" 2>&1 || return 1
	ls_as_pg env PGOPTIONS='-c default_table_access_method=leanstore' \
		"$pgbench" -i -q -s "$SCALE" pgb_leanstore >"$OUT/lookup-pgbench-init-leanstore.log" 2>&1 || return 1
	: >"$OUT/lookup-pgbench-runs.txt"
	for i in $(seq 1 "$RUNS"); do
		for eng in heap leanstore; do
			ls_as_pg "$pgbench" -n -S -M prepared -c "$CLIENTS" -j "$CLIENTS" -T "$SECS" "pgb_$eng" \
				>"$OUT/lookup-pgbench-$eng-$i.log" 2>&1 || { tail "$OUT/lookup-pgbench-$eng-$i.log"; return 1; }
			tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$OUT/lookup-pgbench-$eng-$i.log")
			[ -n "$tps" ] || return 1
			printf '  run %d  %-10s %10.1f tps\n' "$i" "$eng" "$tps"
			echo "$i $eng $tps" >>"$OUT/lookup-pgbench-runs.txt"
		done
	done
	for eng in heap leanstore; do
		set -- $(awk -v e="$eng" '$2 == e { print $3 }' "$OUT/lookup-pgbench-runs.txt" | stats)
		printf '  %-10s tps median %s  min %s  max %s\n' "$eng" "$1" "$2" "$3"
	done
	set -- $(awk '{ t[$1 " " $2] = $3 } END { for (k in t) { split(k, a, " "); if (a[2] == "leanstore") print t[k] / t[a[1] " heap"] } }' \
		"$OUT/lookup-pgbench-runs.txt" | stats)
	ratio=$1
	echo "  paired ratio leanstore/heap: median $1  min $2  max $3"
	echo "RESULT pgbench_select_prepared_ratio=$ratio"
}

run_sysbench() {
	local dir=$1 i eng tps ratio sb
	command -v sysbench >/dev/null || { echo "sysbench is not installed (apt-get install sysbench)" >&2; return 1; }
	sb=(sysbench oltp_point_select --db-driver=pgsql --pgsql-host="$PGHOST" --pgsql-port="$PGPORT"
		--pgsql-user="$LS_PG_USER" --tables=1 --table-size="$SB_ROWS")
	ls_log "sysbench oltp_point_select: $SB_ROWS rows, $CLIENTS threads, ${SECS}s per run, $RUNS runs per engine"
	ls_as_pg $PSQL -d postgres -c "CREATE DATABASE sb_heap" -c "CREATE DATABASE sb_leanstore" || return 1
	ls_as_pg $PSQL -d sb_leanstore -c "CREATE EXTENSION leanstore" \
		-c "ALTER DATABASE sb_leanstore SET default_table_access_method = leanstore" || return 1
	for eng in heap leanstore; do
		ls_as_pg "${sb[@]}" --pgsql-db="sb_$eng" prepare >"$OUT/lookup-sysbench-prepare-$eng.log" 2>&1 ||
			{ tail "$OUT/lookup-sysbench-prepare-$eng.log"; return 1; }
		ls_as_pg $PSQL -d "sb_$eng" -c "VACUUM ANALYZE sbtest1" || return 1
	done
	[ "$(ls_as_pg $PSQL -At -d sb_leanstore -c "SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname = 'sbtest1'")" = leanstore ] ||
		{ echo "sbtest1 in sb_leanstore is not a leanstore table" >&2; return 1; }
	: >"$OUT/lookup-sysbench-runs.txt"
	for i in $(seq 1 "$RUNS"); do
		for eng in heap leanstore; do
			ls_as_pg "${sb[@]}" --pgsql-db="sb_$eng" --threads="$CLIENTS" --time="$SECS" run \
				>"$OUT/lookup-sysbench-$eng-$i.log" 2>&1 || { tail "$OUT/lookup-sysbench-$eng-$i.log"; return 1; }
			tps=$(sed -n 's/^ *transactions: *[0-9]* *(\([0-9.]*\) per sec.)$/\1/p' "$OUT/lookup-sysbench-$eng-$i.log")
			[ -n "$tps" ] || { tail "$OUT/lookup-sysbench-$eng-$i.log"; return 1; }
			printf '  run %d  %-10s %10.1f tps\n' "$i" "$eng" "$tps"
			echo "$i $eng $tps" >>"$OUT/lookup-sysbench-runs.txt"
		done
	done
	for eng in heap leanstore; do
		set -- $(awk -v e="$eng" '$2 == e { print $3 }' "$OUT/lookup-sysbench-runs.txt" | stats)
		printf '  %-10s tps median %s  min %s  max %s\n' "$eng" "$1" "$2" "$3"
	done
	set -- $(awk '{ t[$1 " " $2] = $3 } END { for (k in t) { split(k, a, " "); if (a[2] == "leanstore") print t[k] / t[a[1] " heap"] } }' \
		"$OUT/lookup-sysbench-runs.txt" | stats)
	ratio=$1
	echo "  paired ratio leanstore/heap: median $1  min $2  max $3"
	echo "RESULT sysbench_point_select_ratio=$ratio"
}

# the PL/pgSQL loop of the callgrind job (one line: one statement a line):
# the same statement as inserver's, keys a fixed permutation
cg_func() {
	echo "CREATE FUNCTION $1(n int, nrows int) RETURNS bigint LANGUAGE plpgsql AS \$\$ DECLARE s bigint := 0; x int; k int; BEGIN FOR i IN 1..n LOOP k := (i * 7919) % nrows + 1; SELECT abalance INTO x FROM $2 WHERE aid = k; s := s + x; END LOOP; RETURN s; END \$\$"
}

run_callgrind() {
	local dir=$1 stmts=() labels=() i file tot
	ls_as_pg "$LS_PG_BIN/initdb" -D "$dir/cgdata" --no-locale -E UTF8 -A trust >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log"; return 1; }
	add() { labels+=("$1"); stmts+=("$2"); }
	add - "CREATE EXTENSION leanstore"
	for t in heap leanstore; do
		add - "CREATE TABLE acc_$t (aid int PRIMARY KEY, bid int, abalance int, filler char(84)) USING $t"
		add - "INSERT INTO acc_$t SELECT g, g / 100000, 0, '' FROM generate_series(1, $CG_ROWS) g"
		add - "VACUUM ANALYZE acc_$t"
		add - "$(cg_func "lk_$t" "acc_$t")"
		add - "SELECT lk_$t($CG_ROWS, $CG_ROWS)"
	done
	add "heap" "SELECT lk_heap($CG_LOOKUPS, $CG_ROWS)"
	add "leanstore" "SELECT lk_leanstore($CG_LOOKUPS, $CG_ROWS)"
	# planned with the hash lookup off (a new function: a new plan)
	add - "SET leanstore.hash_cache = off"
	add - "$(cg_func lk_nocache acc_leanstore)"
	add - "SELECT lk_nocache(1000, $CG_ROWS)"
	add "leanstore-nocache" "SELECT lk_nocache($CG_LOOKUPS, $CG_ROWS)"
	printf '%s\n' "${stmts[@]}" >"$dir/input.sql"
	chown -R "$LS_PG_USER": "$dir"
	ls_log "callgrind: one backend of a server under callgrind, $CG_ROWS rows, $CG_LOOKUPS lookups per engine (a few minutes)"
	bench_callgrind_server "$dir" "$dir/cgdata" -c leanstore.hot_memory=512MB \
		-c leanstore.bulk_load_rows=0 -c shared_buffers=256MB || return 1
	echo "callgrind instructions per lookup (PL/pgSQL loop, whole statement: executor, SPI, PL/pgSQL)"
	for i in "${!stmts[@]}"; do
		[ "${labels[$i]}" = - ] && continue
		file=$dir/cg.out.$((i + 1))
		[ -f "$file" ] || { echo "missing callgrind dump $file" >&2; return 1; }
		tot=$(bench_cg_total "$file")
		printf '  %-18s %10.0f\n' "${labels[$i]}" "$(awk -v t="$tot" -v d="$CG_LOOKUPS" 'BEGIN { print t / d }')"
		cp "$file" "$OUT/lookup-cg-${labels[$i]}.out"
	done
	echo "  (profiles: callgrind_annotate --inclusive=yes bench/out/lookup-cg-<engine>.out)"
}

# the cluster directory is made in the main shell (ls_scratch_dir), so the
# exit trap stops the server whatever happens in the pipeline
lookup_job() {
	local what=$1 dir=$2
	if [ "$what" = callgrind ]; then
		run_callgrind "$dir"
		return
	fi
	start_cluster "$dir" || { echo "could not start the cluster" >&2; return 1; }
	"run_$what" "$dir"
	local rc=$?
	ls_cluster_stop "$dir"
	return $rc
}

case "$JOB" in
	inserver | pgbench | sysbench | callgrind) jobs=$JOB ;;
	all)
		jobs="inserver pgbench"
		command -v sysbench >/dev/null && jobs="$jobs sysbench"
		;;
esac
for j in $jobs; do
	ls_scratch_dir lookup || exit 1
	lookup_job "$j" "$LS_SCRATCH" 2>&1 | tee "$OUT/lookup-$j.txt"
	[ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
done
exit $STATUS

