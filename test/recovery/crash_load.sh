#!/usr/bin/env bash
# test/recovery/crash_load.sh: kill -9 under load, repeatedly; nothing
# acknowledged may be lost, nothing aborted may show up.
#
# One throwaway cluster (synchronous_commit = on).  Each round runs, at the
# same time:
#  - pgbench tpcb-like on leanstore tables (4 clients; in even rounds with
#    synchronous_commit = off: asynchronous log-only commits; else its
#    commits go through PostgreSQL's WAL, in every fourth round through
#    leanstore's log alone: leanstore.commit_via_wal = off);
#  - a writer whose transactions insert the same number into a leanstore
#    and a heap table and commit, then print "ack N" (psql prints it only
#    after COMMIT returned), and roll back every fourth one (negative N);
#  - VACUUM of every table, over and over;
# (checkpoints every second, so kills also land inside them)
# then kills every process of the cluster with SIGKILL at a random moment,
# starts it again and checks:
#  - every acknowledged N is in both tables, and every N is in both or in
#    neither (a transaction over heap and leanstore is atomic);
#  - no rolled-back N is visible;
#  - pgbench's sums agree: accounts = branches = tellers = history;
#  - sequential and index scans return the same rows; leanstore_verify.
# LS_CRASH_ROUNDS sets the number of kills (default 10); LS_CRASH_COLD=1
# moves every row into cold pages as soon as it can (see below).  Run by test/run
# (as root; the server runs as postgres).  Exits non-zero on any failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_require_root
trap ls_cleanup EXIT
rounds=${LS_CRASH_ROUNDS:-10}
ls_scratch_dir crash || exit 1
dir=$LS_SCRATCH
# LS_CRASH_COLD=1: rows go into cold pages at once (pack_eager, bulk loads,
# a 2MB buffer pool: write-back overwrites the trees' clean images all the
# time, the undo journals bring them back); else everything stays hot.
if [ "${LS_CRASH_COLD:-0}" = 1 ]; then
	tier="leanstore.hot_memory = '128MB'
leanstore.buffer_pool = '2MB'
leanstore.pack_eager = on"
else
	tier="leanstore.hot_memory = '256MB'
leanstore.bulk_load_rows = 0
leanstore.pack_threshold = 100"
fi
cat >"$dir/test.conf" <<EOF
shared_preload_libraries = 'leanstore'
$tier
default_table_access_method = 'leanstore'
synchronous_commit = on
autovacuum = off
restart_after_crash = off
leanstore.checkpoint_timeout = 1
EOF
chown -R "$LS_PG_USER": "$dir"
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
pg_psql() { (cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres "$@"); }
pg_psql -c "CREATE EXTENSION leanstore" || exit 1
(cd "$dir" && ls_as_pg "$LS_PG_BIN/pgbench" -q -i -s 2 postgres >"$dir/init.log" 2>&1) ||
	{ cat "$dir/init.log"; exit 1; }
pg_psql -c "CREATE TABLE ack_ls (n int PRIMARY KEY) USING leanstore;
            CREATE TABLE ack_heap (n int PRIMARY KEY) USING heap;" || exit 1

for _ in $(seq 1 400); do printf 'VACUUM;\nSELECT pg_sleep(0.2);\n'; done >"$dir/vacuum.sql"
chown "$LS_PG_USER": "$dir/vacuum.sql"

fail=0
check() {
	local what=$1 got=$2
	if [ "$got" != "ok" ]; then
		echo "crash_load round $r: $what: $got"
		fail=1
	fi
}

next=1
for r in $(seq 1 "$rounds"); do
	# the writer: numbers next.. upwards, each in its own transaction
	gen="$dir/writer_$r.sql"
	: >"$gen"
	for n in $(seq "$next" $((next + 3999))); do
		if [ $((n % 4)) = 0 ]; then
			printf 'BEGIN; INSERT INTO ack_ls VALUES (-%d); INSERT INTO ack_heap VALUES (-%d); ROLLBACK;\n' "$n" "$n"
		else
			printf 'BEGIN; INSERT INTO ack_ls VALUES (%d); INSERT INTO ack_heap VALUES (%d); COMMIT;\n\\echo ack %d\n' "$n" "$n" "$n"
		fi
	done >>"$gen"
	chown "$LS_PG_USER": "$gen"
	next=$((next + 4000))
	# every second round pgbench commits asynchronously (the writer's
	# commits, synchronous, then wait for those before them); of the
	# synchronous rounds, every second one commits through leanstore's log
	# alone (log-only commits) instead of PostgreSQL's WAL
	opts=
	[ $((r % 2)) = 0 ] && opts="-c synchronous_commit=off"
	[ $((r % 4)) = 3 ] && opts="-c leanstore.commit_via_wal=off"
	(cd "$dir" && PGOPTIONS=$opts ls_as_pg "$LS_PG_BIN/pgbench" -n -c 4 -j 2 -T 30 postgres \
		>"$dir/pgbench_$r.log" 2>&1) &
	bench=$!
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres -f "$gen" >"$dir/acks_$r.txt" 2>/dev/null) &
	writer=$!
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -d postgres -f "$dir/vacuum.sql" >"$dir/vacuum_$r.log" 2>&1) &
	vac=$!
	sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.5 + rand() * 2.5 }')"
	ls_kill9 "$dir/data"
	wait "$bench" "$writer" "$vac" 2>/dev/null
	if ! (cd "$dir" && ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 120 start >/dev/null); then
		echo "crash_load round $r: restart failed"
		tail -n 30 "$dir/server.log"
		exit 1
	fi
	acked=$(grep -c '^ack ' "$dir/acks_$r.txt")
	grep '^ack ' "$dir/acks_$r.txt" | awk '{ print $2 }' >"$dir/acked_$r.txt"
	chown "$LS_PG_USER": "$dir/acked_$r.txt"
	pg_psql -c "CREATE TEMP TABLE acked (n int);" \
		-c "\\copy acked FROM '$dir/acked_$r.txt'" \
		-c "SELECT 'missing ' || count(*) FROM acked a
		     WHERE NOT EXISTS (SELECT 1 FROM ack_ls l WHERE l.n = a.n)
		        OR NOT EXISTS (SELECT 1 FROM ack_heap h WHERE h.n = a.n)" >"$dir/check_$r.txt" 2>&1
	check "acknowledged commits present ($acked acked)" \
		"$(grep -q 'missing 0' "$dir/check_$r.txt" && echo ok || cat "$dir/check_$r.txt")"
	check "heap and leanstore halves agree" "$(pg_psql -At -c "
		SELECT CASE WHEN count(*) = 0 THEN 'ok' ELSE count(*) || ' numbers in one table only' END
		FROM (SELECT n FROM ack_ls EXCEPT SELECT n FROM ack_heap
		      UNION ALL
		      SELECT n FROM ack_heap EXCEPT SELECT n FROM ack_ls) d" 2>&1)"
	check "rolled back rows invisible" "$(pg_psql -At -c "
		SELECT CASE WHEN count(*) = 0 THEN 'ok' ELSE count(*) || ' rolled back rows visible' END
		FROM ack_ls WHERE n < 0" 2>&1)"
	check "pgbench sums agree" "$(pg_psql -At -c "
		SELECT CASE WHEN a = b AND b = t AND t = h THEN 'ok'
		            ELSE format('accounts %s branches %s tellers %s history %s', a, b, t, h) END
		FROM (SELECT (SELECT sum(abalance) FROM pgbench_accounts) a,
		             (SELECT sum(bbalance) FROM pgbench_branches) b,
		             (SELECT sum(tbalance) FROM pgbench_tellers) t,
		             (SELECT coalesce(sum(delta), 0) FROM pgbench_history) h) s" 2>&1)"
	seq=$(pg_psql -At -c "SET enable_indexscan = off; SET enable_bitmapscan = off;
		SELECT count(*), sum(abalance), sum(aid) FROM pgbench_accounts WHERE aid > 0;
		SELECT count(*), sum(n) FROM ack_ls WHERE n > 0" 2>&1)
	idx=$(pg_psql -At -c "SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT count(*), sum(abalance), sum(aid) FROM pgbench_accounts WHERE aid > 0;
		SELECT count(*), sum(n) FROM ack_ls WHERE n > 0" 2>&1)
	check "sequential and index scans agree" "$([ "$seq" = "$idx" ] && echo ok || echo "seq [$seq] index [$idx]")"
	check "VACUUM ran without error" "$(grep -q ERROR "$dir/vacuum_$r.log" && grep ERROR "$dir/vacuum_$r.log" | head -n 3 || echo ok)"
	check "leanstore_verify" "$(pg_psql -At -c "
		SELECT CASE WHEN bool_and(leanstore_verify(c.oid)) THEN 'ok' ELSE 'failed' END
		FROM pg_class c JOIN pg_am a ON a.oid = c.relam
		WHERE a.amname = 'leanstore' AND c.relkind = 'r'" 2>&1)"
	echo "crash_load round $r: $acked acknowledged commits checked, $(grep -c 'processed' "$dir/pgbench_$r.log" 2>/dev/null || echo 0) pgbench summaries, $(grep -c pg_sleep "$dir/vacuum_$r.log" || true) VACUUMs"
	[ "$fail" = 0 ] || break
done
if [ "$fail" != 0 ]; then
	tail -n 40 "$dir/server.log"
	echo "crash_load: FAILED"
	exit 1
fi
grep -h 'leanstore recovery replayed' "$dir/server.log" | tail -n 3
ls_cluster_stop "$dir"
echo "crash_load: ok ($rounds kills)"
