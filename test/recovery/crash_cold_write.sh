#!/usr/bin/env bash
# test/recovery/crash_cold_write.sh: kill -9 under writes made in the cold
# tier.  crash_load's transactions each write a few rows, which migrate
# into the hot tier; here each writer changes 50 to 200 cold rows in their
# images (leanstore.cold_writes = always: the tombstones are logged when
# the images change, not at commit), stays open up to 1.5 s, then commits
# or rolls back, while other sessions update single rows of it (they wait,
# migrating the row first) and checkpoints run every second (they log the
# committed state of such rows and the open writer's tombstone again after
# it), and VACUUM runs all along.  Every transaction records its range in
# a heap ledger in the same transaction (atomic across a crash: it commits
# through PostgreSQL's commit record).  After each kill -9 and restart:
#  - every row is there once, and its counter equals the number of
#    committed ledger ranges that cover it (no committed change lost, no
#    rolled-back or crashed one visible, no deleted row back);
#  - no rolled-back ledger row; sequential and index scans agree;
#    leanstore_verify passes.
# LS_CRASH_ROUNDS sets the number of kills (default 5).  Run by test/run
# (as root; the server runs as postgres).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin crash_cold_write
rounds=${LS_CRASH_ROUNDS:-5}
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '128MB'
leanstore.buffer_pool = '4MB'
leanstore.pack_eager = on
synchronous_commit = on
autovacuum = off
restart_after_crash = off
leanstore.checkpoint_timeout = 1
EOF
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql postgres "$@"; }

q -c "CREATE EXTENSION leanstore" \
	-c "CREATE TABLE ct (id int PRIMARY KEY, n int, pad text) USING leanstore" \
	-c "INSERT INTO ct SELECT g, 0, repeat('p', 60) FROM generate_series(1, 20000) g" \
	-c "CREATE TABLE ledger (a int, b int) USING heap" >/dev/null || exit 1

# writers: REPEATABLE READ, so that a row another writer changed meanwhile
# fails the transaction (pgbench retries it) instead of being skipped
writer() {
	cat <<EOF
\\set a random(1, 19801)
\\set s random(0, 1500)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SET LOCAL leanstore.bulk_load_rows = 10;
SET LOCAL leanstore.cold_writes = always;
$1
\\sleep :s ms
$2;
EOF
}
writer "UPDATE ct SET n = n + 1 WHERE id BETWEEN :a AND :a + 199;
INSERT INTO ledger VALUES (:a, :a + 199);" COMMIT >"$dir/update.sql"
writer "UPDATE ct SET n = n + 1 WHERE id BETWEEN :a AND :a + 199;
INSERT INTO ledger VALUES (-:a, :a + 199);" ROLLBACK >"$dir/rollback.sql"
# deleted in the cold tier, inserted again (hot) with the counter raised
writer "WITH d AS (DELETE FROM ct WHERE id BETWEEN :a AND :a + 49 RETURNING id, n, pad)
INSERT INTO ct SELECT id, n + 1, pad FROM d;
INSERT INTO ledger VALUES (:a, :a + 49);" COMMIT >"$dir/delete.sql"
# a single-row writer that waits for the open ones (changes no counter)
printf '%s\n' '\set i random(1, 20000)' 'UPDATE ct SET n = n WHERE id = :i;' '\sleep 20 ms' >"$dir/touch.sql"
# VACUUM all along (removes images of committed deletes, freezes, sets
# visibility map bits while writers come and go)
for _ in $(seq 1 400); do printf 'VACUUM ct;\nSELECT pg_sleep(0.2);\n'; done >"$dir/vacuum.sql"
chown "$LS_PG_USER": "$dir"/*.sql

for r in $(seq 1 "$rounds"); do
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/pgbench" -n -c 8 -j 2 -T 60 --max-tries=20 \
		-f "$dir/update.sql@4" -f "$dir/rollback.sql@2" -f "$dir/delete.sql@2" -f "$dir/touch.sql@6" \
		postgres >"$dir/pgbench_$r.log" 2>&1) &
	bench=$!
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -d postgres -f "$dir/vacuum.sql" >"$dir/vacuum_$r.log" 2>&1) &
	vac=$!
	sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 4 + rand() * 6 }')"
	ckpts=$(q -c "SELECT checkpoints FROM leanstore_stats()")
	ls_kill9 "$dir/data"
	wait "$bench" "$vac" 2>/dev/null
	if ! (cd "$dir" && ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 120 start >/dev/null); then
		echo "crash_cold_write round $r: restart failed"
		tail -n 30 "$dir/server.log"
		exit 1
	fi
	ls_expect "round $r: every row once, counters = committed ledger ranges, no rolled-back ledger row" \
		"20000|20000|0|0" "$(q -c "SELECT count(*), count(DISTINCT id) FROM ct" \
			-c "WITH e AS (SELECT g AS id, count(*) AS k FROM ledger, generate_series(a, b) g
			               WHERE a > 0 GROUP BY g)
			    SELECT count(*) FROM ct LEFT JOIN e USING (id) WHERE ct.n <> coalesce(e.k, 0)" \
			-c "SELECT count(*) FROM ledger WHERE a < 0" | paste -sd'|')"
	seq=$(q -c "SET enable_indexscan = off" -c "SET enable_bitmapscan = off" \
		-c "SELECT count(*), sum(n), sum(id) FROM ct WHERE id > 0")
	idx=$(q -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" \
		-c "SELECT count(*), sum(n), sum(id) FROM ct WHERE id > 0")
	ls_expect "round $r: sequential and index scans agree" "$seq" "$idx"
	ls_expect "round $r: leanstore_verify" "t" "$(q -c "SELECT leanstore_verify('ct')")"
	ls_expect "round $r: VACUUM ran without error" "0" "$(grep -c 'ERROR' "$dir/vacuum_$r.log")"
	echo "crash_cold_write round $r: $(q -c "SELECT count(*) FROM ledger") committed ranges, $ckpts checkpoints before the kill, $(grep -c pg_sleep "$dir/vacuum_$r.log" || true) VACUUMs"
	[ "$fail" = 0 ] || break
done
ls_expect "no checkpoint skipped (none waits for an open cold writer)" "0" \
	"$(grep -c "checkpoint skipped" "$dir/server.log")"
ls_test_verdict
