#!/usr/bin/env bash
# bench/index_build.sh: CREATE INDEX over cold rows, heap against leanstore,
# interleaved, ratios.
#
#   pgbench -i -s IB_SCALE into a heap database and a leanstore database
#   (the load is one COPY: past leanstore.bulk_load_rows its rows go
#   straight to the cold tree, so nearly every row is cold), then per run and
#   engine, heap and leanstore interleaved: CREATE INDEX on
#   pgbench_accounts(abalance), on (bid), and CREATE INDEX CONCURRENTLY on
#   (abalance) (its validate scan too), each dropped again.  Serial builds
#   (max_parallel_maintenance_workers = 0): the table scan is what is
#   measured, not how many cores sort.
#
# Environment: IB_SCALE (10), IB_RUNS (5), IB_NO_BUILD=1, LS_PRIVATE_ROOT.
# Prints each time, then per index "heap median (min max), leanstore median
# (min max), ratio median (min max)" and RESULT lines index_<name>_ratio
# (leanstore / heap time: lower is better; the ratio's spread is that of
# the runs' own ratios).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
# shellcheck source=test/lib.sh
. "$REPO/test/lib.sh"
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

SCALE=${IB_SCALE:-10}
RUNS=${IB_RUNS:-5}
ls_bench_setup index_build "${IB_NO_BUILD:-0}"

ls_scratch_dir index_build
CONF=$LS_SCRATCH/extra.conf
bench_pair_conf "leanstore.buffer_pool = '1GB'" "max_parallel_maintenance_workers = 0" \
	"maintenance_work_mem = '256MB'" "max_wal_size = '4GB'" "jit = off" >"$CONF"
ls_cluster_start "$LS_SCRATCH" "$CONF" || ls_die "cluster did not start"
psqlq() { ls_as_pg "$LS_PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -d "${DB:-postgres}" "$@"; }

for am in heap leanstore; do
	ls_as_pg "$LS_PG_BIN/createdb" "ib_$am" || exit 1
	[ "$am" = leanstore ] && DB=ib_$am psqlq -c "CREATE EXTENSION leanstore" >/dev/null
	DB=ib_$am psqlq -c "ALTER DATABASE ib_$am SET default_table_access_method = $am" >/dev/null
	ls_as_pg "$LS_PG_BIN/pgbench" -q -i -s "$SCALE" "ib_$am" >"$OUT/index_build-init-$am.log" 2>&1 ||
		{ cat "$OUT/index_build-init-$am.log"; exit 1; }
	DB=ib_$am psqlq -c "SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname = 'pgbench_accounts'" |
		grep -qx "$am" || ls_die "pgbench_accounts of ib_$am is not a $am table"
done
lstats() {
	DB=ib_leanstore psqlq -c "SELECT format('leanstore pgbench_accounts $1: %s rows, %s hot, %s cold pages',
		(SELECT count(*) FROM pgbench_accounts), hot_rows, cold_pages) FROM leanstore_table_stats('pgbench_accounts')"
}
lstats "after the load"
# warm-up, not timed: every page read once into shared_buffers / the buffer pool
for am in heap leanstore; do
	DB=ib_$am psqlq -c "CREATE INDEX ib_idx ON pgbench_accounts (abalance)" -c "DROP INDEX ib_idx" || exit 1
done

# ms INDEXSQL: the milliseconds psql's \timing gives the statement
ms() {
	psqlq -c '\timing on' -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n1
}

declare -A SQL=(
	[abalance]="CREATE INDEX ib_idx ON pgbench_accounts (abalance)"
	[bid]="CREATE INDEX ib_idx ON pgbench_accounts (bid)"
	[abalance_cic]="CREATE INDEX CONCURRENTLY ib_idx ON pgbench_accounts (abalance)"
)
NAMES="abalance bid abalance_cic"
TIMES=$OUT/index_build-times.txt
: >"$TIMES"
echo "== CREATE INDEX at pgbench scale $SCALE, $RUNS runs each, interleaved (script of $(git -C "$REPO" rev-parse --short HEAD); the installed build)"
for r in $(seq "$RUNS"); do
	for name in $NAMES; do
		for am in heap leanstore; do
			DB=ib_$am psqlq -c "CHECKPOINT" >/dev/null
			t=$(DB=ib_$am ms "${SQL[$name]}")
			[ -n "$t" ] || ls_die "$name on $am failed"
			DB=ib_$am psqlq -c "DROP INDEX ib_idx" >/dev/null
			echo "$r $name $am $t" | tee -a "$TIMES"
		done
	done
done
bench_pair_summary "$TIMES" index_ $NAMES
lstats "at the end"
