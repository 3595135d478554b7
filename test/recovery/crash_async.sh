#!/usr/bin/env bash
# test/recovery/crash_async.sh: synchronous_commit = off (README.md,
# "What a commit guarantees"; src/pg/README.md, "Asynchronous commits").
#  1. an asynchronous log-only commit returns without waiting for
#     leanstore's log (rounds leave its records: leanstore.debug_hold_my_log;
#     no new rowid there: its reservation would wait for the log);
#     a later synchronous commit that is not log-only (a heap row, a commit
#     through PostgreSQL's WAL, of leanstore rows alone too) waits until
#     those records are durable (here: until it is cancelled); an
#     asynchronous heap commit does not
#     wait; after a crash the held commit is gone, as a whole;
#  2. without a hold the log writer makes an asynchronous commit durable by
#     itself (wal_writer_delay): it survives a crash nobody waited for;
#  3. an asynchronous heap commit, then a synchronous log-only commit
#     (leanstore.commit_via_wal = off), then
#     a crash: the log-only commit flushed PostgreSQL's WAL up to its own
#     commit record, so the heap row is there too (PostgreSQL's WAL writer
#     would have waited wal_writer_delay = 10s);
#  4. an asynchronous commit that is not log-only (a heap row too), then a
#     leanstore checkpoint, which logs its row again as a frozen version,
#     then a crash: the transaction is there whole or not at all (the
#     checkpoint flushes its commit record first);
#  5. the same with pack, which makes the row a frozen cold image (pack
#     leaves the row hot until the commit record is durable);
#  6. the same with a delete that VACUUM removes (it leaves the row until
#     the commit record is durable) and a checkpoint, which logs the rowid
#     as dead;
#  7. the same with a delete made in place in the cold tier, whose removal
#     by VACUUM is logged at once;
#  8. pgbench tpcb-like on leanstore tables with synchronous_commit =
#     off, killed under load: the last transactions may be gone, but as a
#     whole: the sums agree, scans agree, leanstore_verify;
#  9. an asynchronous log-only commit over two tables, a round having taken
#     one table's row only, PostgreSQL's commit record flushed: gone as a
#     whole after a crash.
# Run by test/run (as root; the server runs as postgres).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin crash_async
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '128MB'
synchronous_commit = on
wal_writer_delay = '10s'
autovacuum = off
restart_after_crash = on
checkpoint_timeout = 1h
EOF
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql postgres "$@"; }
stat() { q -c "SELECT $1 FROM leanstore_stats()"; }
writer_delay() {
	q -c "ALTER SYSTEM SET wal_writer_delay = '$1'" -c "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
}

# blocked_commit SQL: SQL, whose commit must wait for leanstore's log
# (wait event Extension), in the background; cancelled after a while.
# Prints the wait event and SQL's error.
blocked_commit() {
	local pid state=
	(q -c "SET application_name = 'blocked'" -c "$1" >"$dir/blocked.out" 2>&1) &
	pid=$!
	for _ in $(seq 1 200); do
		state=$(q -c "SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity
		              WHERE application_name = 'blocked' AND wait_event_type = 'Extension'")
		[ -n "$state" ] && break
		sleep 0.05
	done
	sleep 0.5
	q -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'blocked'" >/dev/null
	wait $pid
	echo "$state|$(grep -v '^ROLLBACK' "$dir/blocked.out")"
}

q -c "CREATE EXTENSION leanstore" >/dev/null
q -c "CREATE TABLE h (n int) USING heap; CREATE TABLE l (n int PRIMARY KEY, v text) USING leanstore;
      INSERT INTO l SELECT g, 'v' || g FROM generate_series(1, 100) g;" >/dev/null

# 1. an asynchronous commit held back, the synchronous ones after it
ls_sessions_open a
ls_session a "SET synchronous_commit = off; SET statement_timeout = '20s'; SET leanstore.debug_hold_my_log = on;"
before=$(stat "async_commits || '|' || log_only_commits")
ls_session a "DELETE FROM l WHERE n = 100; UPDATE l SET v = 'async' WHERE n = 1;"
ls_expect "asynchronous log-only commits return without the log" "2|2|" \
	"$(stat "async_commits - ${before%|*} || '|' || log_only_commits - ${before#*|}")|$(cat "$dir/a.out" | grep -v '^done-')"
ls_expect "and are visible at once" "0|async" \
	"$(q -c "SELECT count(*) FROM l WHERE n = 100")|$(q -c "SELECT v FROM l WHERE n = 1")"
ls_expect "a synchronous heap commit waits for them (a cancel ends the wait)" \
	"Extension:Extension|ERROR:  canceling statement due to user request|0" \
	"$(blocked_commit "INSERT INTO h VALUES (1)")|$(q -c "SELECT count(*) FROM h")"
ls_expect "so does a synchronous commit through PostgreSQL's WAL" \
	"Extension:Extension|ERROR:  canceling statement due to user request|0|v2" \
	"$(blocked_commit "BEGIN; UPDATE l SET v = 'via wal' WHERE n = 2; INSERT INTO h VALUES (2); COMMIT;")|$(q -c "SELECT count(*) FROM h")|$(q -c "SELECT v FROM l WHERE n = 2")"
ls_expect "so does a synchronous commit of leanstore rows alone, through the WAL" \
	"Extension:Extension|ERROR:  canceling statement due to user request|v3" \
	"$(blocked_commit "UPDATE l SET v = 'sync via wal' WHERE n = 3")|$(q -c "SELECT v FROM l WHERE n = 3")"
ls_expect "an asynchronous heap commit does not wait" "1" \
	"$(q -c "SET statement_timeout = '5s'" -c "SET synchronous_commit = off" \
	     -c "INSERT INTO h VALUES (3)" -c "SELECT count(*) FROM h WHERE n = 3")"
ls_crash
ls_sessions_close a
ls_restart
ls_expect "after a crash the held commits are gone, each as a whole" "1|v1|100" \
	"$(q -c "SELECT count(*) FROM l WHERE n = 100")|$(q -c "SELECT v FROM l WHERE n = 1")|$(q -c "SELECT count(*) FROM l")"
ls_expect "leanstore_verify(l)" "t" "$(q -c "SELECT leanstore_verify('l')")"

# 2. the log writer syncs an asynchronous commit within wal_writer_delay
writer_delay 100ms
q -c "SET synchronous_commit = off" -c "INSERT INTO l VALUES (1002, 'by the writer')" >/dev/null
sleep 1
ls_crash
ls_restart
ls_expect "an asynchronous commit nobody waited for survives a crash after wal_writer_delay" "1" \
	"$(q -c "SELECT count(*) FROM l WHERE n = 1002")"

# 3. an asynchronous heap commit, then a synchronous log-only commit
writer_delay 10s
before=$(stat log_only_commits)
q -c "SET synchronous_commit = off" -c "INSERT INTO h VALUES (4)" -c "RESET synchronous_commit" \
	-c "SET leanstore.commit_via_wal = off" -c "UPDATE l SET v = 'after the heap row' WHERE n = 4" >/dev/null
ls_expect "the update was a log-only commit" "1" "$(stat "log_only_commits - $before")"
ls_crash
ls_restart
ls_expect "the synchronous log-only commit kept the asynchronous heap commit before it" "after the heap row|1" \
	"$(q -c "SELECT v FROM l WHERE n = 4")|$(q -c "SELECT count(*) FROM h WHERE n = 4")"

# 4. an asynchronous commit that is not log-only (a heap row too): a
#    leanstore checkpoint logs its row again, frozen, before PostgreSQL's
#    commit record is flushed; after a crash the transaction is there whole
#    or not at all
q -c "SET synchronous_commit = off" \
	-c "BEGIN; UPDATE l SET v = 'mixed' WHERE n = 5; INSERT INTO h VALUES (5); COMMIT;" >/dev/null
q -c "SELECT leanstore_checkpoint()" >/dev/null
ls_crash
ls_restart
got="$(q -c "SELECT v FROM l WHERE n = 5")|$(q -c "SELECT count(*) FROM h WHERE n = 5")"
[ "$got" = "v5|0" ] && got="mixed|1"	# lost as a whole: as good as kept
ls_expect "an asynchronous heap+leanstore commit, a checkpoint, a crash: whole or not at all" "mixed|1" "$got"

# 5. the same with pack (the asserting build's leanstore_test_pack): the
#    row goes into a cold image, frozen, only once the commit is durable
q -c "CREATE FUNCTION leanstore_test_pack(regclass, bool) RETURNS bigint
      AS 'leanstore', 'leanstore_test_pack' LANGUAGE C STRICT" >/dev/null
q -c "SET synchronous_commit = off" \
	-c "BEGIN; UPDATE l SET v = 'packed' WHERE n = 6; INSERT INTO h VALUES (6); COMMIT;" >/dev/null
ls_expect "pack moves the other rows" "t" "$(q -c "SELECT leanstore_test_pack('l', false) > 50")"
ls_crash
ls_restart
got="$(q -c "SELECT v FROM l WHERE n = 6")|$(q -c "SELECT count(*) FROM h WHERE n = 6")"
[ "$got" = "v6|0" ] && got="packed|1"	# lost as a whole: as good as kept
ls_expect "an asynchronous heap+leanstore commit, a pack, a crash: whole or not at all" "packed|1" "$got"
ls_expect "leanstore_verify(l) after the pack" "t" "$(q -c "SELECT leanstore_verify('l')")"

# 6. the same with a delete and VACUUM, which removes the row once nobody
#    sees it (a checkpoint then logs its rowid as dead), only once the
#    commit is durable
q -c "SET synchronous_commit = off" \
	-c "BEGIN; DELETE FROM l WHERE n = 7; INSERT INTO h VALUES (7); COMMIT;" -c "VACUUM l" \
	-c "SELECT leanstore_checkpoint()" >/dev/null
ls_crash
ls_restart
got="$(q -c "SELECT count(*) FROM l WHERE n = 7")|$(q -c "SELECT count(*) FROM h WHERE n = 7")"
[ "$got" = "1|0" ] && got="0|1"	# lost as a whole: as good as kept
ls_expect "an asynchronous heap+leanstore delete, VACUUM, a checkpoint, a crash: whole or not at all" "0|1" "$got"

# 7. the same with deletes made in the cold tier (rows 8 and 9 were packed
#    in part 5; with leanstore.bulk_load_rows = 1 the second cold row of the
#    transaction is deleted in place): VACUUM removes the image only once
#    the commit is durable (no checkpoint here: its flush of the commit
#    record for the other row's tombstone would hide the removal)
ls_expect "the rows of l are cold" "t" "$(q -c "SELECT cold_rows > 50 FROM leanstore_table_stats('l')")"
q -c "SET synchronous_commit = off" -c "SET leanstore.cold_writes = always" -c "SET leanstore.bulk_load_rows = 1" \
	-c "BEGIN; DELETE FROM l WHERE n IN (8, 9); INSERT INTO h VALUES (8); COMMIT;" -c "VACUUM l" >/dev/null
sleep 0.5	# the log writer's lazy round writes what VACUUM logged
ls_crash
ls_restart
got="$(q -c "SELECT count(*) FROM l WHERE n IN (8, 9)")|$(q -c "SELECT count(*) FROM h WHERE n = 8")"
[ "$got" = "2|0" ] && got="0|1"	# lost as a whole: as good as kept
ls_expect "an asynchronous heap+leanstore delete in the cold tier, VACUUM, a crash: whole or not at all" "0|1" "$got"

# 8. pgbench with synchronous_commit = off, killed under load
writer_delay 200ms
(cd "$dir" && PGOPTIONS="-c default_table_access_method=leanstore" \
	ls_as_pg "$LS_PG_BIN/pgbench" -q -i -s 1 postgres >"$dir/init.log" 2>&1) ||
	{ cat "$dir/init.log"; exit 1; }
ls_expect "pgbench's tables are leanstore tables" "4" \
	"$(q -c "SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
	         WHERE relname LIKE 'pgbench_%' AND relkind = 'r' AND amname = 'leanstore'")"
before=$(stat async_commits)
(cd "$dir" && PGOPTIONS="-c synchronous_commit=off" ls_as_pg "$LS_PG_BIN/pgbench" -n -c 4 -T 30 postgres \
	>"$dir/bench.log" 2>&1 &)
sleep 4
ls_expect "pgbench's transactions are asynchronous log-only commits" "t" \
	"$(stat "async_commits - $before > 100")"
ls_crash
ls_restart
ls_expect "after the crash pgbench's sums agree (accounts = branches = tellers = history)" "t|t|t" \
	"$(q -c "SELECT a = b, b = t, t = hst FROM (SELECT
	           (SELECT sum(abalance) FROM pgbench_accounts) a, (SELECT sum(bbalance) FROM pgbench_branches) b,
	           (SELECT sum(tbalance) FROM pgbench_tellers) t, (SELECT coalesce(sum(delta), 0) FROM pgbench_history) hst) s")"
ls_expect "index and sequential scans agree" "100000|100000" \
	"$(q -c "SET enable_seqscan = off" -c "SELECT count(*) FROM pgbench_accounts WHERE aid > 0" -c "RESET enable_seqscan" \
	     -c "SET enable_indexscan = off" -c "SET enable_bitmapscan = off" \
	     -c "SELECT count(*) FROM pgbench_accounts WHERE aid > 0" | paste -sd'|')"
ls_expect "leanstore_verify" "t|t|t|t" \
	"$(q -c "SELECT leanstore_verify(c.oid) FROM pg_class c WHERE relname IN
	           ('pgbench_accounts', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history') ORDER BY relname" | paste -sd'|')"

# 9. an asynchronous log-only commit over two tables whose first table's
#    row reached the log's disk and whose second's did not (a round took
#    part of it: test point commit-async-split holds the rest in the slot),
#    while PostgreSQL's WAL writer flushed its commit record: clog says
#    committed, the log has no commit record.  After a crash the
#    transaction is gone as a whole (before 81e3ae9 the first row came back)
q -c "CREATE TABLE l2 (n int PRIMARY KEY, v text) USING leanstore;
      INSERT INTO l2 SELECT g, 'w' || g FROM generate_series(1, 10) g;" >/dev/null
writer_delay 10ms
ls_sessions_open s
ls_session s "SET synchronous_commit = off; SET leanstore.debug_crash_point = 'commit-async-split';"
ls_session s "BEGIN; UPDATE l SET v = 'split' WHERE n = 10; UPDATE l2 SET v = 'split' WHERE n = 10; COMMIT;"
sleep 1
ls_expect "the split commit returned, its PostgreSQL commit record is flushed" "split|split|committed|t" \
	"$(q -c "SELECT (SELECT v FROM l WHERE n = 10), (SELECT v FROM l2 WHERE n = 10),
	                pg_xact_status(xmin::text::xid8),
	                pg_current_wal_flush_lsn() >= pg_current_wal_insert_lsn() - 8192 FROM l WHERE n = 10" | tr -d ' ')"
ls_crash
ls_sessions_close s
ls_restart
ls_expect "after a crash the split commit is gone as a whole" "v10|w10" \
	"$(q -c "SELECT v FROM l WHERE n = 10")|$(q -c "SELECT v FROM l2 WHERE n = 10")"

# 10. an asynchronous commit that PostgreSQL's WAL decides (a heap row too),
#     then an asynchronous log-only commit that updates the same row (its
#     after-image carries the first one's change), then a synchronous
#     log-only commit: its round makes leanstore's log durable up to both,
#     and the backend dies right after (commit-after-log), before
#     PostgreSQL's WAL writer flushed anything (wal_writer_delay 10s).
#     The round flushed PostgreSQL's WAL first, so the first commit is
#     there too; before, its heap row was gone while its change survived
#     inside the second one's row (crash_load found it: pgbench's branch and
#     teller deltas of a transaction that started a clog page, without its
#     account update and history row).
writer_delay 10s
q -c "CREATE TABLE acc (id int PRIMARY KEY, bal int) USING leanstore;
      INSERT INTO acc VALUES (1, 0), (2, 0);" >/dev/null
before=$(stat "async_commits || '|' || log_only_commits")
q -c "SET synchronous_commit = off" \
	-c "BEGIN; UPDATE acc SET bal = bal + 1 WHERE id = 1; INSERT INTO h VALUES (11); COMMIT;" \
	-c "UPDATE acc SET bal = bal + 10 WHERE id = 1" >/dev/null
ls_expect "the second update was the only asynchronous log-only commit" "1|1" \
	"$(stat "async_commits - ${before%|*} || '|' || log_only_commits - ${before#*|}")"
# (No check that PostgreSQL's WAL is unflushed here: the log writer's own
# round for the asynchronous commit, wal_writer_delay after the last one,
# may take the second commit's records first and then flushes the WAL
# itself, as it must.  The build before the fix left the WAL unflushed,
# and lost the first commit.)
q -c "SET leanstore.commit_via_wal = off" -c "SET leanstore.debug_crash_point = 'commit-after-log'" \
	-c "UPDATE acc SET bal = bal + 100 WHERE id = 2" >/dev/null 2>&1
ls_wait_up "$dir"
ls_expect "after the crash the first commit is there with the second" "11|1|100" \
	"$(q -c "SELECT (SELECT bal FROM acc WHERE id = 1), (SELECT count(*) FROM h WHERE n = 11),
	                (SELECT bal FROM acc WHERE id = 2)" | tr -d ' ')"

if [ "$fail" -ne 0 ]; then
	tail -n 40 "$dir/server.log"
	echo "crash_async: FAILED"
	exit 1
fi
ls_cluster_stop "$dir"
echo "crash_async: ok"
