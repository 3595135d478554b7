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
#     (pgbench -t 1 -f per run, 1 client), median / min / max milliseconds.
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
ls_require_root
trap ls_cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$OUT"

if [ "${BC_NO_BUILD:-0}" != 1 ]; then
	ls_build_install >"$OUT/blocks_cost-build.log" 2>&1 ||
		{ tail -n 40 "$OUT/blocks_cost-build.log"; ls_die "build failed"; }
fi

ls_scratch_dir blocks_cost
CONF=$LS_SCRATCH/extra.conf
cat >"$CONF" <<CONF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '2GB'
shared_buffers = '512MB'
autovacuum = off
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
	-c "SELECT c.relname, c.relpages, pg_relation_size(c.oid) / 8192 AS blocks,
		(SELECT max((ctid::text::point)[1]) FROM acc_heap)::int + 1 AS heap_last_block_plus_1
	FROM pg_class c WHERE relname IN ('acc_heap', 'acc_ls') ORDER BY 1"

# medians of per-run latencies
stats() {
	sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
		printf "median %.1f ms  min %.1f  max %.1f  (%d runs)\n", m, v[1], v[NR], NR }'
}
for q in "count(*)" "sum(abalance)"; do
	for t in acc_heap acc_ls; do
		echo "SELECT $q FROM $t;" >"$LS_SCRATCH/q.sql"
		chown "$LS_PG_USER" "$LS_SCRATCH/q.sql"
		# one warm-up run, then RUNS timed runs
		psqlq -c "SELECT $q FROM $t" >/dev/null
		for _ in $(seq "$RUNS"); do
			ls_as_pg "$LS_PG_BIN/pgbench" -n -t 1 -f "$LS_SCRATCH/q.sql" postgres 2>/dev/null |
				awk '/latency average/ { print $4 }'
		done | stats | sed "s/^/seq scan $q $t: /"
	done
done | tee "$OUT/blocks_cost-$(git -C "$REPO" rev-parse --short HEAD).txt"
ls_cluster_stop "$LS_SCRATCH"
