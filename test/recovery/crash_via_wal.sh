#!/usr/bin/env bash
# test/recovery/crash_via_wal.sh: commits through PostgreSQL's WAL
# (src/pg/README.md, "Commits through PostgreSQL's WAL").  A transaction
# with synchronous_commit on (one with an index entry or a heap row, or
# leanstore rows alone) puts its leanstore row records into the WAL too and
# does not wait for leanstore's log.  The log writer's rounds are held back
# (leanstore.debug_round_delay) so that leanstore's log does not have the
# records when the server dies:
#  1. the committing backend dies right after PostgreSQL's commit record
#     is flushed: every row of the transaction comes back, from the WAL; so
#     does the row of a commit of leanstore rows alone before it;
#  2. PostgreSQL's checkpoints move the redo point past such a commit and
#     recycle WAL: the slot "leanstore" keeps the segment, and a crash
#     brings the rows back;
#  3. the slot moves on once leanstore's log has the records;
#  4. a leanstore checkpoint covers such a commit: its WAL records are not
#     replayed again over later work;
#  5. leanstore.commit_via_wal = off: commits wait for leanstore's log,
#     the slot is dropped at the next start, and a session's setting on
#     cannot bring it back;
#  6. shadows: the row's later delete reached leanstore's log before the
#     commit's own records did, and a checkpoint's start fell between them:
#     the WAL's older image is not replayed over the delete.
# Run by test/run (as root; the server runs as postgres).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin crash_via_wal
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '128MB'
leanstore.log_committer_rounds = off
synchronous_commit = on
autovacuum = off
restart_after_crash = on
max_wal_size = 32MB
min_wal_size = 32MB
wal_keep_size = 0
checkpoint_timeout = 1h
EOF
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql postgres "$@"; }
# hold_rounds DELAY: the log writer waits DELAY before each round ('0' resets)
hold_rounds() {
	q -c "ALTER SYSTEM SET leanstore.debug_round_delay = '$1'" -c "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
}

q -c "CREATE EXTENSION leanstore" >/dev/null
q -c "CREATE TABLE h (n int) USING heap; CREATE TABLE l (n int PRIMARY KEY, v text) USING leanstore;
      CREATE TABLE big (n int) USING heap;
      INSERT INTO l SELECT g, 'v' || g FROM generate_series(1, 100) g; INSERT INTO h VALUES (1);" >/dev/null
ls_expect "the log writer holds the slot" "leanstore|physical|t" \
	"$(q -c "SELECT slot_name, slot_type, active FROM pg_replication_slots")"

# 1. the backend dies after PostgreSQL's commit record is flushed
hold_rounds 60s
before=$(q -c "SELECT wal_copy_commits FROM leanstore_stats()")
q -c "BEGIN; UPDATE l SET v = 'first' WHERE n = 3; INSERT INTO h VALUES (3); COMMIT;" >/dev/null
ls_expect "a transaction with a heap row commits through the WAL, without waiting" "1" \
	"$(q -c "SELECT wal_copy_commits - $before FROM leanstore_stats()")"
before=$(q -c "SELECT wal_copy_commits || '|' || log_only_commits FROM leanstore_stats()")
q -c "UPDATE l SET v = 'alone' WHERE n = 9" >/dev/null
ls_expect "so does one of leanstore rows alone (not a log-only commit)" "1|0" \
	"$(q -c "SELECT wal_copy_commits - ${before%|*}, log_only_commits - ${before#*|} FROM leanstore_stats()" | tr -d ' ')"
q -c "SET leanstore.debug_crash_point = 'commit-via-wal'" \
	-c "BEGIN; INSERT INTO l VALUES (1000, 'kept'); UPDATE l SET v = 'kept' WHERE n = 1;
	    DELETE FROM l WHERE n = 2; INSERT INTO h VALUES (1000); COMMIT;" >/dev/null 2>&1
ls_wait_up "$dir"
hold_rounds 0
grep -q 'crashing at "commit-via-wal"' "$dir/server.log" ||
	{ echo "crash_via_wal: the commit-via-wal point was not reached"; fail=1; }
ls_expect "crash after PostgreSQL's flush: the transaction is there, in both tables" "1|1|kept|0|first|alone|100" \
	"$(q -c "SELECT (SELECT count(*) FROM l WHERE n = 1000), (SELECT count(*) FROM h WHERE n = 1000),
	                (SELECT v FROM l WHERE n = 1), (SELECT count(*) FROM l WHERE n = 2),
	                (SELECT v FROM l WHERE n = 3), (SELECT v FROM l WHERE n = 9), (SELECT count(*) FROM l)")"
ls_expect "recovery took the rows from PostgreSQL's WAL" "5" \
	"$(q -c "SELECT recovery_wal_records FROM leanstore_stats()")"
ls_expect "index and sequential scans agree" "100|100" \
	"$(q -c "SET enable_seqscan = off" -c "SELECT count(*) FROM l WHERE n > 0" -c "RESET enable_seqscan" \
	     -c "SET enable_indexscan = off" -c "SET enable_bitmapscan = off" -c "SELECT count(*) FROM l WHERE n > 0" | paste -sd'|')"
ls_expect "leanstore_verify(l)" "t" "$(q -c "SELECT leanstore_verify('l')")"

# 2. checkpoints of PostgreSQL's in the window, WAL recycled (no new
#    rowid: the first one after a recovery waits for its reservation)
hold_rounds 60s
q -c "BEGIN; UPDATE l SET v = 'through checkpoints' WHERE n = 6; DELETE FROM l WHERE n = 4;
      INSERT INTO h VALUES (2000); COMMIT;" >/dev/null
lsn=$(q -c "SELECT pg_current_wal_insert_lsn()")
ckpts=$(q -c "SELECT checkpoints_req + checkpoints_timed FROM pg_stat_bgwriter")
q -c "INSERT INTO big SELECT generate_series(1, 1500000)" >/dev/null
for _ in $(seq 1 100); do
	[ "$(q -c "SELECT redo_lsn > '$lsn' FROM pg_control_checkpoint()")" = t ] && break
	sleep 0.1
done
ls_expect "PostgreSQL's checkpoints passed the commit, the slot kept its WAL" "t|t|t" \
	"$(q -c "SELECT (SELECT redo_lsn > '$lsn' FROM pg_control_checkpoint()),
	                (SELECT checkpoints_req + checkpoints_timed > $ckpts FROM pg_stat_bgwriter),
	                (SELECT restart_lsn <= '$lsn' FROM pg_replication_slots WHERE slot_name = 'leanstore')")"
ls_crash
ls_restart
hold_rounds 0
ls_expect "crash after checkpoints: the transaction is there" "through checkpoints|0|99|1" \
	"$(q -c "SELECT (SELECT v FROM l WHERE n = 6), (SELECT count(*) FROM l WHERE n = 4), (SELECT count(*) FROM l),
	                (SELECT count(*) FROM h WHERE n = 2000)")"
ls_expect "recovery took them from PostgreSQL's WAL" "2" \
	"$(q -c "SELECT recovery_wal_records FROM leanstore_stats()")"

# 3. the slot moves on: commits, then WAL of other work
q -c "UPDATE l SET v = 'moves' WHERE n = 5; INSERT INTO l VALUES (3000, 'x')" >/dev/null
lsn=$(q -c "SELECT pg_current_wal_insert_lsn()")
q -c "INSERT INTO big SELECT generate_series(1, 700000)" >/dev/null
moved=f
for _ in $(seq 1 100); do
	moved=$(q -c "SELECT restart_lsn > '$lsn' FROM pg_replication_slots WHERE slot_name = 'leanstore'")
	[ "$moved" = t ] && break
	sleep 0.1
done
ls_expect "the slot moves behind what leanstore's log has" "t" "$moved"
ls_crash
ls_restart
ls_expect "after the slot moved, a crash: all there" "moves|1|100" \
	"$(q -c "SELECT (SELECT v FROM l WHERE n = 5), (SELECT count(*) FROM l WHERE n = 3000), (SELECT count(*) FROM l)")"

# 4. a leanstore checkpoint covers a commit through the WAL: its records
#    (still in the WAL the slot keeps) are not taken again.  The row it
#    wrote was deleted (a log-only commit) and pruned before the
#    checkpoint, so nothing after the checkpoint names it: taken again, the
#    WAL's image would bring the row back.
q -c "BEGIN; UPDATE l SET v = 'covered' WHERE n = 7; INSERT INTO h VALUES (7); COMMIT;" \
	-c "SET leanstore.commit_via_wal = off" -c "DELETE FROM l WHERE n = 7" -c "RESET leanstore.commit_via_wal" \
	-c "VACUUM l" -c "SELECT leanstore_checkpoint()" >/dev/null
ls_crash
ls_restart
ls_expect "a commit through the WAL before a checkpoint, the row deleted since: stays deleted" "0|99|0" \
	"$(q -c "SELECT (SELECT count(*) FROM l WHERE n = 7), (SELECT count(*) FROM l), recovery_wal_records FROM leanstore_stats()")"

# 5. off: commits wait for leanstore's log; the next start drops the slot
q -c "ALTER SYSTEM SET leanstore.commit_via_wal = off" >/dev/null
ls_pgctl restart || { echo "crash_via_wal: restart failed"; tail -n 30 "$dir/server.log"; exit 1; }
before=$(q -c "SELECT wal_copy_commits FROM leanstore_stats()")
q -c "INSERT INTO l VALUES (4000, 'waits')" >/dev/null
q -c "SET leanstore.commit_via_wal = on" -c "INSERT INTO l VALUES (4002, 'waits too')" >/dev/null
ls_expect "off: no commit through the WAL (a session's on included), no slot" "0|0" \
	"$(q -c "SELECT wal_copy_commits - $before FROM leanstore_stats()")|$(q -c "SELECT count(*) FROM pg_replication_slots")"
q -c "ALTER SYSTEM RESET leanstore.commit_via_wal" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
before=$(q -c "SELECT wal_copy_commits FROM leanstore_stats()")
q -c "INSERT INTO l VALUES (4001, 'via wal again')" >/dev/null
ls_expect "on again by a reload: the slot is taken, commits go through the WAL" "1|1" \
	"$(q -c "SELECT wal_copy_commits - $before FROM leanstore_stats()")|$(q -c "SELECT count(*) FROM pg_replication_slots WHERE active")"
ls_crash
ls_restart
ls_expect "after a crash: the three rows" "3|102" \
	"$(q -c "SELECT count(*) FROM l WHERE n >= 4000")|$(q -c "SELECT count(*) FROM l")"
# 6. shadows: a commit through the WAL whose row a later log-only commit
#    deleted, the delete durable first (rounds leave the first session's
#    records: leanstore.debug_hold_my_log), both inside a checkpoint's step 1
#    (leanstore.debug_checkpoint_pause, after it read the GSN counter), the
#    row pruned before the checkpoint logs the hot tier again.  The
#    checkpoint's start falls after the delete, and the update is only in
#    the WAL: replayed, it would bring the row back.  Sessions a and b are
#    psql reading fifos, opened before the pause (opening a table during
#    the checkpoint's hold would wait for it).
ls_sessions_open a b
ls_session a "SELECT count(*) FROM l;"
ls_session b "SET leanstore.commit_via_wal = off; SELECT count(*) FROM l;"
ls_session a "SET leanstore.debug_hold_my_log = on;"
before=$(q -c "SELECT wal_copy_commits || '|' || log_only_commits FROM leanstore_stats()")
(q -c "SET leanstore.debug_checkpoint_pause = '4s'" -c "CHECKPOINT" >"$dir/ckpt.out" 2>&1) &
ckpt=$!
for _ in $(seq 1 100); do grep -q "leanstore pauses" "$dir/server.log" && break; sleep 0.05; done
ls_session a "BEGIN; UPDATE l SET v = 'resurrected' WHERE n = 8; INSERT INTO h VALUES (8); COMMIT;"
ls_session b "DELETE FROM l WHERE n = 8;"
ls_session b "VACUUM l;"
wait $ckpt
ls_expect "inside the checkpoint: one commit through the WAL, one log-only" "t|t" \
	"$(q -c "SELECT wal_copy_commits > ${before%|*}, log_only_commits > ${before#*|} FROM leanstore_stats()")"
ls_crash
ls_sessions_close a b
ls_restart
ls_expect "the deleted row stays deleted (its older image in the WAL is shadowed)" "0|0|101" \
	"$(q -c "SELECT (SELECT count(*) FROM l WHERE n = 8), recovery_wal_records, (SELECT count(*) FROM l) FROM leanstore_stats()")"
grep -q "1 records older than a later one of their row skipped" "$dir/server.log" ||
	{ echo "crash_via_wal: recovery did not skip the shadowed record"; fail=1; }

if [ "$fail" -ne 0 ]; then
	tail -n 40 "$dir/server.log"
	echo "crash_via_wal: FAILED"
	exit 1
fi
ls_cluster_stop "$dir"
echo "crash_via_wal: ok"
