#!/usr/bin/env bash
# bench/cold.sh: the cold tier against heap, interleaved, ratios.
#
#   1. COPY of CB_ROWS rows (pgbench_accounts shape, from a file) into an
#      empty heap table and an empty leanstore table, CB_RUNS times each,
#      heap and leanstore interleaved: median time and leanstore/heap ratio.
#   2. Bytes per row after the load and a VACUUM: leanstore's hot-tier
#      bytes + cold pages (+ its primary key) against heap's pages (+ its
#      primary key).
#   3. pgbench select-only and tpcb-like at scale CB_SCALE with leanstore's
#      hot_memory 256MB and buffer_pool 512MB, and heap's shared_buffers
#      768MB (the same memory), CB_RUNS runs of CB_SECS seconds each,
#      interleaved; synchronous_commit = on for both (PostgreSQL's default:
#      heap waits for its WAL, leanstore for its own log, at every commit).
#
# Environment: CB_ROWS (10000000), CB_RUNS (3), CB_SCALE (100), CB_SECS (20),
# CB_CLIENTS (2), CB_SKIP_PGBENCH=1, CB_NO_BUILD=1, LS_PRIVATE_ROOT.
# Prints RESULT lines: copy_ratio, bytes_per_row_ratio, pgbench_select_ratio_cold,
# pgbench_tpcb_ratio_cold (leanstore / heap; for copy, time: lower is better).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
# shellcheck source=test/lib.sh
. "$REPO/test/lib.sh"

ROWS=${CB_ROWS:-10000000}
RUNS=${CB_RUNS:-3}
SCALE=${CB_SCALE:-100}
SECS=${CB_SECS:-20}
CLIENTS=${CB_CLIENTS:-2}
ls_bench_setup cold "${CB_NO_BUILD:-0}"

ls_scratch_dir cold_bench
CONF=$LS_SCRATCH/extra.conf
cat >"$CONF" <<CONF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '256MB'
leanstore.buffer_pool = '512MB'
shared_buffers = '768MB'
max_wal_size = '8GB'
checkpoint_timeout = '30min'
leanstore.max_log_size = '8GB'
leanstore.checkpoint_timeout = 1800
autovacuum = off
synchronous_commit = on
jit = off
CONF
ls_cluster_start "$LS_SCRATCH" "$CONF" || ls_die "cluster did not start"
psqlq() { ls_as_pg "$LS_PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -d "${DB:-postgres}" "$@"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -g | awk '{ v[NR] = $1 } END { printf "min %.2f max %.2f", v[1], v[NR] }'; }

psqlq -c "CREATE EXTENSION leanstore" || exit 1
file=$LS_SCRATCH/rows.copy
psqlq -c "COPY (SELECT g, (g - 1) / 100000 + 1, 0, repeat(' ', 84) FROM generate_series(1, $ROWS) g) TO '$file'" || exit 1
echo "== COPY $ROWS rows, $RUNS runs each, interleaved ($(git -C "$REPO" rev-parse --short HEAD))"
: >"$OUT/cold-copy.txt"
for r in $(seq "$RUNS"); do
	for am in heap leanstore; do
		psqlq -c "DROP TABLE IF EXISTS acc_$am" -c "CREATE TABLE acc_$am (aid int, bid int, abalance int, filler char(84)) USING $am" >/dev/null
		psqlq -c "CHECKPOINT" >/dev/null
		t0=$(date +%s.%N)
		psqlq -c "COPY acc_$am FROM '$file'" >/dev/null || ls_die "COPY into $am failed"
		t=$(echo "$(date +%s.%N) - $t0" | bc)
		echo "$am $t" | tee -a "$OUT/cold-copy.txt"
	done
done
hm=$(awk '$1 == "heap" { print $2 }' "$OUT/cold-copy.txt" | median)
lm=$(awk '$1 == "leanstore" { print $2 }' "$OUT/cold-copy.txt" | median)
echo "COPY heap median ${hm}s ($(awk '$1 == "heap" { print $2 }' "$OUT/cold-copy.txt" | spread)), leanstore median ${lm}s ($(awk '$1 == "leanstore" { print $2 }' "$OUT/cold-copy.txt" | spread))"
echo "RESULT copy_ratio=$(echo "scale=3; $lm / $hm" | bc)"

# footprint after the last load
psqlq -c "ALTER TABLE acc_heap ADD PRIMARY KEY (aid)" -c "ALTER TABLE acc_leanstore ADD PRIMARY KEY (aid)" \
	-c "VACUUM acc_heap" -c "VACUUM acc_leanstore" >/dev/null || exit 1
hb=$(psqlq -c "SELECT (pg_relation_size('acc_heap') + pg_relation_size('acc_heap_pkey'))::numeric / $ROWS")
lb=$(psqlq -c "SELECT (t.hot_bytes + t.cold_pages * 8192 + pg_relation_size('acc_leanstore_pkey'))::numeric / $ROWS FROM leanstore_table_stats('acc_leanstore') t")
psqlq -c "SELECT format('leanstore: %s hot rows, %s hot bytes, %s MB cold pages, %s MB primary key; heap: %s MB pages, %s MB primary key',
	t.hot_rows, t.hot_bytes, t.cold_pages * 8192 / 1048576, pg_relation_size('acc_leanstore_pkey') / 1048576,
	pg_relation_size('acc_heap') / 1048576, pg_relation_size('acc_heap_pkey') / 1048576) FROM leanstore_table_stats('acc_leanstore') t"
echo "bytes per row (table + primary key): heap $(printf %.1f "$hb"), leanstore $(printf %.1f "$lb") (hot tier + cold pages)"
echo "RESULT bytes_per_row_ratio=$(echo "scale=3; $lb / $hb" | bc)"
psqlq -c "DROP TABLE acc_heap, acc_leanstore" >/dev/null

[ "${CB_SKIP_PGBENCH:-0}" = 1 ] && exit 0
for am in heap leanstore; do
	ls_as_pg "$LS_PG_BIN/createdb" "pb_$am" || exit 1
	# the access method exists once the extension does
	[ "$am" = leanstore ] && DB=pb_$am psqlq -c "CREATE EXTENSION leanstore" >/dev/null
	DB=pb_$am psqlq -c "ALTER DATABASE pb_$am SET default_table_access_method = $am" >/dev/null
	DB=pb_$am psqlq -c "SHOW default_table_access_method" | grep -qx "$am" ||
		ls_die "database pb_$am does not default to $am"
	ls_as_pg "$LS_PG_BIN/pgbench" -q -i -s "$SCALE" "pb_$am" >"$OUT/cold-init-$am.log" 2>&1 || { cat "$OUT/cold-init-$am.log"; exit 1; }
done
for mode in select tpcb; do
	: >"$OUT/cold-pgbench-$mode.txt"
	for r in $(seq "$RUNS"); do
		for am in heap leanstore; do
			opt=""; [ "$mode" = select ] && opt=-S
			tps=$(ls_as_pg "$LS_PG_BIN/pgbench" -n $opt -c "$CLIENTS" -j "$CLIENTS" -T "$SECS" "pb_$am" 2>/dev/null |
				awk '/^tps/ { print $3; exit }')
			echo "$am ${tps:-0}" | tee -a "$OUT/cold-pgbench-$mode.txt"
		done
	done
	hm=$(awk '$1 == "heap" { print $2 }' "$OUT/cold-pgbench-$mode.txt" | median)
	lm=$(awk '$1 == "leanstore" { print $2 }' "$OUT/cold-pgbench-$mode.txt" | median)
	echo "pgbench $mode scale $SCALE: heap median $hm TPS, leanstore median $lm TPS"
	echo "RESULT pgbench_${mode}_ratio_cold=$(echo "scale=3; $lm / $hm" | bc)"
done
DB=pb_leanstore psqlq -c "SELECT format('leanstore after the runs: hot %s MB used, %s rows packed, %s migrated, %s cold reads, pool %s hits / %s misses, %s evictions',
	used_bytes / 1048576, rows_packed, rows_migrated, cold_reads, pool_hits, pool_misses, pool_evictions) FROM leanstore_stats()"
