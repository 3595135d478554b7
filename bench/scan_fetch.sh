#!/usr/bin/env bash
# bench/scan_fetch.sh [all|time|callgrind]: read paths of leanstore vs heap.
#
#   time       one throwaway cluster, one table per engine (same rows, same
#              indexes, VACUUM ANALYZE'd), pgbench custom scripts, 1 client;
#              each pgbench run gets two scripts, the heap query and the
#              leanstore query, and picks one at random per transaction, so
#              both see the same background load; the per-transaction log
#              (-l) gives each one's mean latency in microseconds:
#                count     SELECT count(*) over all rows            (seq scan)
#                filter    SELECT sum(v) WHERE k % 7 = 3             (seq scan, deform + qual)
#                point     SELECT v WHERE id = :id, -M prepared      (index point lookup)
#                range     SELECT sum(v) WHERE id BETWEEN :a AND :a+999 (index range scan)
#                bitmap    SELECT sum(v) WHERE k BETWEEN :a AND :a+999  (bitmap heap scan;
#                          k is a permutation of id, so every row is in another block)
#              Reports per workload and engine the median / min / max of
#              queries per second (1e6 / mean latency in us), the median of
#              the per-run paired ratios leanstore / heap (> 1: leanstore
#              faster) and their min and max.
#   callgrind  instruction counts (deterministic, no noise): one backend of
#              a server running under valgrind --tool=callgrind, a dump
#              after every statement (--dump-after=PortalRun); each measured
#              statement's total instructions divided by the rows it read
#              (seq scans, index range, bitmap) or by the lookups it made
#              (nested loop of index point lookups).
#   all        (default) both
#
# Environment: SF_ROWS rows for `time` (default 1000000), SF_SECS seconds
# per run (5), SF_RUNS runs per engine and workload (5), SF_CG_ROWS rows for
# callgrind (100000), SF_CG_LOOKUPS (20000), SF_CG_BULK the callgrind
# server's leanstore.bulk_load_rows (default: the server's, 10000: a load
# of 100000 rows leaves 90% of them cold; 0: every row hot), SF_BULK the
# same for `time`, SF_NO_BUILD=1 skips make install. Output also in
# bench/out/scan_fetch-*.txt.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
# shellcheck source=test/lib.sh
. "$REPO/test/lib.sh"
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

JOB=${1:-all}
case "$JOB" in
	all | time | callgrind) ;;
	*) echo "usage: bench/scan_fetch.sh [all|time|callgrind]" >&2; exit 2 ;;
esac

ROWS=${SF_ROWS:-1000000}
SECS=${SF_SECS:-5}
RUNS=${SF_RUNS:-5}
CG_ROWS=${SF_CG_ROWS:-100000}
CG_LOOKUPS=${SF_CG_LOOKUPS:-20000}
CG_BULK=${SF_CG_BULK:-}
BULK=${SF_BULK:-}
OUT=$REPO/bench/out
STATUS=0
WORKLOADS="count filter point range bitmap"

ls_bench_setup scan_fetch "${SF_NO_BUILD:-0}"

# "median min max" of the numbers on stdin
stats() { bench_stats '%.4g'; }

# the pgbench script of a workload for table $2
script_for() {
	local w=$1 t=$2
	case "$w" in
		count) echo "SELECT count(*) FROM $t;" ;;
		filter) echo "SELECT sum(v) FROM $t WHERE k % 7 = 3;" ;;
		point) printf '\\set id random(1, %d)\nSELECT v FROM %s WHERE id = :id;\n' "$ROWS" "$t" ;;
		range) printf '\\set a random(1, %d)\nSELECT sum(v) FROM %s WHERE id BETWEEN :a AND :a + 999;\n' "$((ROWS - 1000))" "$t" ;;
		bitmap) printf '\\set a random(0, %d)\nSELECT sum(v) FROM %s WHERE k BETWEEN :a AND :a + 999;\n' "$((ROWS - 1000))" "$t" ;;
	esac
}

# planner settings that force the plan the workload is meant to measure
options_for() {
	case "$1" in
		count | filter) echo "-c max_parallel_workers_per_gather=0" ;;
		point | range) echo "-c enable_bitmapscan=off -c enable_seqscan=off" ;;
		bitmap) echo "-c enable_indexscan=off -c enable_seqscan=off" ;;
	esac
}

# the EXPLAIN form of a workload's query (parameters replaced)
explain_for() {
	script_for "$1" "$2" | grep -v '^\\set' | sed 's/:id/4242/; s/:a/4242/g'
}

run_time() {
	local dir conf psql pgbench w eng i t qps ratio
	psql="$LS_PG_BIN/psql -X -q -v ON_ERROR_STOP=1"
	pgbench=$LS_PG_BIN/pgbench
	dir=$SF_DIR
	conf=$dir/bench.conf
	bench_pair_conf "jit = off" "max_parallel_workers_per_gather = 0" \
		${BULK:+"leanstore.bulk_load_rows = $BULK"} >"$conf"
	ls_cluster_start "$dir" "$conf" || return 1
	ls_log "loading $ROWS rows into t_heap and t_leanstore"
	ls_as_pg $psql -d postgres <<-EOF || return 1
		CREATE EXTENSION leanstore;
		CREATE TABLE t_heap (id int PRIMARY KEY, k int NOT NULL, v int NOT NULL, pad text) USING heap;
		CREATE TABLE t_leanstore (id int PRIMARY KEY, k int NOT NULL, v int NOT NULL, pad text) USING leanstore;
		INSERT INTO t_heap SELECT g, (g::bigint * 7919) % $ROWS, g % 1000, repeat('x', 60) FROM generate_series(1, $ROWS) g;
		INSERT INTO t_leanstore SELECT * FROM t_heap;
		CREATE INDEX t_heap_k ON t_heap (k);
		CREATE INDEX t_leanstore_k ON t_leanstore (k);
		VACUUM ANALYZE t_heap;
		VACUUM ANALYZE t_leanstore;
		CHECKPOINT;
	EOF
	echo "plans:"
	for w in $WORKLOADS; do
		for eng in heap leanstore; do
			printf '  %-7s %-10s %s\n' "$w" "$eng" "$(ls_as_pg env PGOPTIONS="$(options_for "$w")" \
				$psql -At -d postgres -c "EXPLAIN (COSTS OFF) $(explain_for "$w" "t_$eng")" | tr '\n' ' ' | tr -s ' ')"
		done
	done
	# One pgbench run per workload and round with two scripts, the heap
	# query and the leanstore query; pgbench picks one at random for each
	# transaction, so both see the same background load, and its
	# per-transaction log (-l: latency in microseconds, script number) gives
	# each engine's mean latency.
	: >"$dir/runs.txt"
	for i in $(seq 1 "$RUNS"); do
		for w in $WORKLOADS; do
			for eng in heap leanstore; do
				script_for "$w" "t_$eng" >"$dir/$w-$eng.sql"
			done
			rm -f "$dir"/txlog*
			chown "$LS_PG_USER": "$dir"/*.sql
			if ! (cd "$dir" && ls_as_pg env PGOPTIONS="$(options_for "$w")" "$pgbench" -n -M prepared -c 1 -j 1 \
				-T "$SECS" -l --log-prefix="$dir/txlog" -f "$dir/$w-heap.sql" -f "$dir/$w-leanstore.sql" \
				postgres >"$dir/pgbench.log" 2>&1); then
				tail -n 20 "$dir/pgbench.log" >&2
				return 1
			fi
			for eng in heap leanstore; do
				local sno=0
				[ "$eng" = leanstore ] && sno=1
				read -r n lat < <(cat "$dir"/txlog* | awk -v s="$sno" '$4 == s { n++; t += $3 }
					END { printf "%d %.1f\n", n, n ? t / n : 0 }')
				qps=$(awk -v l="$lat" 'BEGIN { printf "%.2f", (l > 0 ? 1e6 / l : 0) }')
				printf '  run %d  %-7s %-10s %8d queries %12.1f us %10.2f q/s\n' "$i" "$w" "$eng" "$n" "$lat" "$qps"
				echo "$w $eng $i $qps" >>"$dir/runs.txt"
			done
		done
	done
	echo
	echo "$ROWS rows (bulk_load_rows ${BULK:-default}), 1 client, ${SECS}s per run (heap and leanstore queries randomly mixed in one run), $RUNS runs per workload"
	printf '%-7s %-26s %-26s %s\n' workload "heap q/s (med min max)" "leanstore q/s (med min max)" "ratio l/h (med min max)"
	for w in $WORKLOADS; do
		local h l r
		h=$(awk -v w="$w" '$1 == w && $2 == "heap" { print $4 }' "$dir/runs.txt" | stats)
		l=$(awk -v w="$w" '$1 == w && $2 == "leanstore" { print $4 }' "$dir/runs.txt" | stats)
		r=$(awk -v w="$w" '$1 == w { q[$2 " " $3] = $4; n[$3] = 1 }
			END { for (i in n) if (q["heap " i] > 0) print q["leanstore " i] / q["heap " i] }' "$dir/runs.txt" | stats)
		printf '%-7s %-26s %-26s %s\n' "$w" "$h" "$l" "$r"
		echo "RESULT scan_fetch_${w}_ratio=${r%% *}"
	done
	echo "(ratio: per run, leanstore q/s / heap q/s of the same pgbench run; > 1 = leanstore faster;"
	echo " q/s = 1e6 / mean latency of one query in us, client round trip included)"
	ls_cluster_stop "$dir"
}

run_callgrind() {
	local dir data n stmts=() labels=() i f tot file pid
	dir=$SF_CG_DIR
	ls_as_pg "$LS_PG_BIN/initdb" -D "$dir/data" --no-locale -E UTF8 -A trust >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log"; return 1; }
	data=$dir/rows.tsv
	seq 1 "$CG_ROWS" | awk -v n="$CG_ROWS" '{ printf "%d\t%d\t%d\t%s\n", $1, ($1 * 7919) % n, $1 % 1000,
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" }' >"$data"
	chown "$LS_PG_USER": "$data"
	# statements, one per line, each with a label; only
	# labelled ones are reported: "label:divisor"
	add() { labels+=("$1"); stmts+=("$2"); }
	add - "CREATE EXTENSION leanstore"
	add - "SET max_parallel_workers_per_gather = 0"
	for t in heap leanstore; do
		add - "CREATE TABLE t_$t (id int PRIMARY KEY, k int NOT NULL, v int NOT NULL, pad text) USING $t"
		add - "COPY t_$t FROM '$data'"
		add - "CREATE INDEX t_${t}_k ON t_$t (k)"
		add - "VACUUM ANALYZE t_$t"
	done
	for t in heap leanstore; do
		add - "SELECT count(*) FROM t_$t"
		add "count-$t:$CG_ROWS" "SELECT count(*) FROM t_$t"
		add "filter-$t:$CG_ROWS" "SELECT sum(v) FROM t_$t WHERE k % 7 = 3"
		add - "SET enable_seqscan = off"
		add - "SET enable_bitmapscan = off"
		add - "SET enable_hashjoin = off"
		add - "SET enable_mergejoin = off"
		add "point-$t:$CG_LOOKUPS" "SELECT count(v) FROM generate_series(1, $CG_LOOKUPS) g, LATERAL (SELECT v FROM t_$t WHERE id = (g * 7919) % $CG_ROWS + 1) s"
		add "range-$t:$((CG_ROWS / 2))" "SELECT sum(v) FROM t_$t WHERE id BETWEEN 1 AND $((CG_ROWS / 2))"
		add - "SET enable_bitmapscan = on"
		add - "SET enable_indexscan = off"
		add "bitmap-$t:$((CG_ROWS / 10))" "SELECT sum(v) FROM t_$t WHERE k BETWEEN 0 AND $((CG_ROWS / 10 - 1))"
		add - "RESET ALL"
		add - "SET max_parallel_workers_per_gather = 0"
	done
	printf '%s\n' "${stmts[@]}" >"$dir/input.sql"
	chown -R "$LS_PG_USER": "$dir"
	ls_log "callgrind: one backend of a server under callgrind, $CG_ROWS rows, $CG_LOOKUPS lookups (takes a few minutes)"
	bench_callgrind_server "$dir" "$dir/data" -c leanstore.hot_memory=256MB \
		-c shared_buffers=128MB ${CG_BULK:+-c leanstore.bulk_load_rows=$CG_BULK} || return 1
	n=$(ls "$dir"/cg.out.* 2>/dev/null | wc -l)
	if [ "$n" -ne "${#stmts[@]}" ]; then
		echo "expected ${#stmts[@]} callgrind dumps (one per statement), got $n" >&2
		return 1
	fi
	echo
	echo "callgrind instructions per row / per lookup ($CG_ROWS rows, bulk_load_rows ${CG_BULK:-default}; whole statement, incl. executor overhead)"
	printf '%-8s %14s %14s %10s\n' workload heap leanstore "l/h"
	declare -A per
	for i in "${!stmts[@]}"; do
		[ "${labels[$i]}" = - ] && continue
		file=$dir/cg.out.$((i + 1))
		tot=$(bench_cg_total "$file")
		per[${labels[$i]%%:*}]=$(awk -v t="$tot" -v d="${labels[$i]##*:}" 'BEGIN { printf "%.0f", t / d }')
		cp "$file" "$OUT/scan_fetch-cg-${labels[$i]%%:*}.out"
	done
	for w in count filter point range bitmap; do
		printf '%-8s %14s %14s %10s\n' "$w" "${per[$w-heap]}" "${per[$w-leanstore]}" \
			"$(awk -v a="${per[$w-leanstore]}" -v b="${per[$w-heap]}" 'BEGIN { printf "%.3f", a / b }')"
		echo "RESULT scan_fetch_cg_${w}_ratio=$(awk -v a="${per[$w-leanstore]}" -v b="${per[$w-heap]}" 'BEGIN { printf "%.3f", a / b }')"
	done
	echo "(l/h: leanstore instructions / heap instructions; < 1 = leanstore cheaper."
	echo " profiles: bench/out/scan_fetch-cg-<workload>-<engine>.out, e.g."
	echo " callgrind_annotate --inclusive=yes bench/out/scan_fetch-cg-count-leanstore.out)"
}

# scratch directories are made here, in the main shell, so that the exit
# trap knows them (the jobs run in pipelines)
ls_scratch_dir sf || ls_die "no scratch directory"
SF_DIR=$LS_SCRATCH
ls_scratch_dir sfcg || ls_die "no scratch directory"
SF_CG_DIR=$LS_SCRATCH

case "$JOB" in
	time) run_time 2>&1 | tee "$OUT/scan_fetch-time.txt"; [ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1 ;;
	callgrind) run_callgrind 2>&1 | tee "$OUT/scan_fetch-callgrind.txt"; [ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1 ;;
	all)
		run_callgrind 2>&1 | tee "$OUT/scan_fetch-callgrind.txt"; [ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
		run_time 2>&1 | tee "$OUT/scan_fetch-time.txt"; [ "${PIPESTATUS[0]}" -eq 0 ] || STATUS=1
		;;
esac
exit $STATUS
