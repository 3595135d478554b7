#!/usr/bin/env bash
# bench/cold_write.sh: large DELETEs and UPDATEs of cold rows, heap against
# leanstore, interleaved, ratios.
#
#   pgbench -i -s CW_SCALE into a heap database and a leanstore database
#   (one COPY: past leanstore.bulk_load_rows its rows go straight to the cold
#   tree, so nearly every row is cold), then per run and engine, heap and
#   leanstore interleaved, each statement in a transaction that is rolled
#   back (the table stays the same; VACUUM between runs, not timed, and for
#   leanstore a wait until pack (leanstore.pack_eager) moved migrated rows
#   back into the cold tier):
#     delete       DELETE FROM pgbench_accounts WHERE aid % 2 = 0
#     update       UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid % 2 = 0
#     update_key   UPDATE pgbench_accounts SET bid = bid WHERE aid % 2 = 0 (an
#                  indexed column: heap's update is not HOT either)
#   with leanstore.cold_writes = always: past the first
#   leanstore.bulk_load_rows rows, leanstore writes these in the cold tier
#   (src/pg/README.md "Writes in the cold tier"), what the default (auto)
#   does once the hot tier is nearly full.
#     delete_migrating, update_migrating: the same with cold_writes = off
#                  (every row migrates into the hot tier first, as all
#                  writes did before, and as auto does while there is room)
#
# Environment: CW_SCALE (10), CW_RUNS (3), CW_NO_BUILD=1, LS_PRIVATE_ROOT.
# Prints each time, then per statement "heap median (min max), leanstore
# median (min max), ratio median (min max)" and RESULT lines
# cold_write_<name>_ratio (leanstore / heap time: lower is better).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
# shellcheck source=test/lib.sh
. "$REPO/test/lib.sh"
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

SCALE=${CW_SCALE:-10}
RUNS=${CW_RUNS:-3}
ls_bench_setup cold_write "${CW_NO_BUILD:-0}"

ls_scratch_dir cold_write
CONF=$LS_SCRATCH/extra.conf
# pack_eager: rows a statement migrated go cold again before the next one
bench_pair_conf "leanstore.buffer_pool = '1GB'" "max_wal_size = '4GB'" "jit = off" \
	"autovacuum = off" "leanstore.pack_eager = on" >"$CONF"
ls_cluster_start "$LS_SCRATCH" "$CONF" || ls_die "cluster did not start"
psqlq() { ls_as_pg "$LS_PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -d "${DB:-postgres}" "$@"; }

for am in heap leanstore; do
	ls_as_pg "$LS_PG_BIN/createdb" "cw_$am" || exit 1
	[ "$am" = leanstore ] && DB=cw_$am psqlq -c "CREATE EXTENSION leanstore" >/dev/null
	DB=cw_$am psqlq -c "ALTER DATABASE cw_$am SET default_table_access_method = $am" >/dev/null
	ls_as_pg "$LS_PG_BIN/pgbench" -q -i -s "$SCALE" "cw_$am" >"$OUT/cold_write-init-$am.log" 2>&1 ||
		{ cat "$OUT/cold_write-init-$am.log"; exit 1; }
	DB=cw_$am psqlq -c "VACUUM pgbench_accounts" || exit 1
done
lstats() {
	DB=cw_leanstore psqlq -c "SELECT format('leanstore pgbench_accounts $1: %s hot rows, %s hot versions, %s cold pages',
		hot_rows, hot_versions, cold_pages) FROM leanstore_table_stats('pgbench_accounts')"
}
lstats "after the load"

# wait (up to 60 s) until pack moved the rows back into the cold tier
cooled() {
	for _ in $(seq 1 120); do
		[ "$(DB=cw_leanstore psqlq -c "SELECT hot_rows <= 20000 FROM leanstore_table_stats('pgbench_accounts')")" = t ] && return 0
		sleep 0.5
	done
	echo "(rows still hot: $(lstats "before a run"))"
}

# ms SQL: the milliseconds psql's \timing gives the statement (in a
# transaction rolled back afterwards)
ms() {
	psqlq -c 'BEGIN' -c '\timing on' -c "$1" -c '\timing off' -c 'ROLLBACK' |
		sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n1
}

declare -A SQL=(
	[delete]="SET LOCAL leanstore.cold_writes = always; DELETE FROM pgbench_accounts WHERE aid % 2 = 0"
	[update]="SET LOCAL leanstore.cold_writes = always; UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid % 2 = 0"
	[update_key]="SET LOCAL leanstore.cold_writes = always; UPDATE pgbench_accounts SET bid = bid WHERE aid % 2 = 0"
	[delete_migrating]="SET LOCAL leanstore.cold_writes = off; DELETE FROM pgbench_accounts WHERE aid % 2 = 0"
	[update_migrating]="SET LOCAL leanstore.cold_writes = off; UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid % 2 = 0"
)
NAMES="delete update update_key delete_migrating update_migrating"
TIMES=$OUT/cold_write-times.txt
: >"$TIMES"
echo "== large writes of cold rows at pgbench scale $SCALE, $RUNS runs each, interleaved (script of $(git -C "$REPO" rev-parse --short HEAD); the installed build)"
for r in $(seq "$RUNS"); do
	for name in $NAMES; do
		for am in heap leanstore; do
			DB=cw_$am psqlq -c "VACUUM pgbench_accounts" -c "CHECKPOINT" >/dev/null
			[ "$am" = leanstore ] && cooled
			t=$(DB=cw_$am ms "${SQL[$name]}")
			[ -n "$t" ] || ls_die "$name on $am failed"
			echo "$r $name $am $t" | tee -a "$TIMES"
		done
	done
done
bench_pair_summary "$TIMES" cold_write_ $NAMES
lstats "at the end"
