#!/usr/bin/env bash
# bench/blocks_cost.sh: memory and seq-scan cost of leanstore's virtual blocks
# on a pgbench_accounts-shaped table (aid int, bid int, abalance int,
# filler char(84)), next to heap.
#
#   * hot-tier bytes per row: leanstore_table_stats(t).hot_bytes / hot_rows
#     (rows, versions and RID-map nodes of the table), and the tier-wide
#     used_bytes of leanstore_stats();
#   * virtual blocks (pg_relation_size / BLCKSZ) next to heap's pages;
#   * seq scan: SELECT count(*) and SELECT sum(abalance), BC_RUNS runs each
#     (pgbench -t 3 per run, heap and leanstore interleaved, 1 client),
#     median / min / max of the runs' mean latency in milliseconds.
#
# Environment: BC_ROWS (default 1000000), BC_RUNS (default 15),
# BC_NO_BUILD=1 (skip make install), LS_PRIVATE_ROOT (see test/lib.sh).
# Run as root (the cluster runs as the postgres user).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
# shellcheck source=test/lib.sh
. "$REPO/test/lib.sh"

ROWS=${BC_ROWS:-1000000}
RUNS=${BC_RUNS:-15}
OUT=$REPO/bench/out
ls_bench_setup blocks_cost "${BC_NO_BUILD:-0}"

ls_scratch_dir blocks_cost
CONF=$LS_SCRATCH/extra.conf
cat >"$CONF" <<CONF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '2GB'
shared_buffers = '512MB'
autovacuum = off
# only memory and scans are measured, no commit: fsync and
# synchronous_commit off just make the load faster
fsync = off
synchronous_commit = off
max_parallel_workers_per_gather = 0
jit = off
CONF
ls_cluster_start "$LS_SCRATCH" "$CONF" || ls_die "cluster did not start"

psqlq() { ls_as_pg "$LS_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }

psqlq <<SQL || ls_die "load failed"
CREATE EXTENSION leanstore;
CREATE TABLE acc_heap (aid int NOT NULL, bid int, abalance int, filler char(84)) USING heap;
CREATE TABLE acc_ls (aid int NOT NULL, bid int, abalance int, filler char(84)) USING leanstore;
INSERT INTO acc_heap SELECT g, (g - 1) / 100000 + 1, 0, '' FROM generate_series(1, $ROWS) g;
INSERT INTO acc_ls SELECT g, (g - 1) / 100000 + 1, 0, '' FROM generate_series(1, $ROWS) g;
VACUUM ANALYZE acc_heap;
VACUUM ANALYZE acc_ls;
SQL

echo "== $ROWS rows of pgbench_accounts shape ($(git -C "$REPO" rev-parse --short HEAD))"
psqlq -c "SELECT hot_rows, hot_bytes, rowid_limit,
		round(hot_bytes::numeric / hot_rows, 1) AS hot_bytes_per_row
	FROM leanstore_table_stats('acc_ls')" \
	-c "SELECT used_bytes, hot_rows, round(used_bytes::numeric / greatest(hot_rows, 1), 1) AS used_bytes_per_row
	FROM leanstore_stats()" \
	-c "SELECT c.relname, c.relpages,
		(SELECT count(DISTINCT (ctid::text::point)[0]) FROM acc_heap) AS heap_blocks_with_rows,
		(SELECT count(DISTINCT (ctid::text::point)[0]) FROM acc_ls) AS ls_blocks_with_rows
	FROM pg_class c WHERE relname IN ('acc_heap', 'acc_ls') ORDER BY 1"

# medians of per-run latencies
stats() {
	sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
		printf "median %.1f ms  min %.1f  max %.1f  (%d runs)\n", m, v[1], v[NR], NR }'
}
# heap and leanstore runs interleaved, so both see the same background load
for q in "count(*)" "sum(abalance)"; do
	for t in acc_heap acc_ls; do
		echo "SELECT $q FROM $t;" >"$LS_SCRATCH/q_$t.sql"
		chown "$LS_PG_USER" "$LS_SCRATCH/q_$t.sql"
		psqlq -c "SELECT $q FROM $t" >/dev/null	# warm-up
	done
	for _ in $(seq "$RUNS"); do
		for t in acc_heap acc_ls; do
			ls_as_pg "$LS_PG_BIN/pgbench" -n -t 3 -f "$LS_SCRATCH/q_$t.sql" postgres 2>/dev/null |
				awk -v t="$t" '/latency average/ { print t, $4 }'
		done
	done >"$LS_SCRATCH/lat.txt"
	for t in acc_heap acc_ls; do
		awk -v t="$t" '$1 == t { print $2 }' "$LS_SCRATCH/lat.txt" | stats |
			sed "s/^/seq scan $q $t: /"
	done
done | tee "$OUT/blocks_cost-$(git -C "$REPO" rev-parse --short HEAD).txt"
ls_cluster_stop "$LS_SCRATCH"
