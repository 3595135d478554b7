#!/usr/bin/env bash
# test/recovery/crash_points.sh: crashes at chosen points
# (leanstore.debug_crash_point, leanstore.debug_log_fault) and around DDL;
# after each restart, committed work is there, uncommitted work is not,
# and what leanstore cannot recover yet is a clear error.
#
#  1. commit-before-log / commit-after-log: the committing backend dies
#     before its after-images are durable / after they are, before
#     PostgreSQL's commit record: PostgreSQL's own crash restart
#     (restart_after_crash, shared memory rebuilt); the transaction (heap
#     and leanstore rows together) is gone, earlier commits are not.
#  1b/1c. log-only commits; an xid PostgreSQL hands out again after the
#     crash while leanstore's recovery is still to come.
#  2. DDL, committed or open at the crash: CREATE, TRUNCATE, DROP, VACUUM
#     FULL, ALTER TABLE ... TYPE, SET TABLESPACE, an unlogged table.
#  3. recovery-replay / recovery-relog: the log writer dies during
#     recovery; the next start recovers everything again.
#  4. bulk-load / pack: rows were moving into cold pages: the trees go back
#     to their last clean image (undo journal) and the log is replayed;
#     every table is intact, the crashed bulk load (INSERT ... SELECT, and
#     COPY's batches) is gone.
#  5. an injected EIO on the log's write: PANIC, restart, nothing
#     committed lost.
#  6. checkpoints (leanstore_checkpoint()): the replay start moves, a crash
#     replays only what came later; crashes inside a checkpoint.
#  7./8. cold deletes and updates; no phantom rows through index-only scans.
# Run by test/run (as root; the server runs as postgres).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin crash_points
mkdir -p "$dir/tblspc" && chown "$LS_PG_USER": "$dir/tblspc"
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '128MB'
leanstore.bulk_load_rows = 0
leanstore.cold_writes = always
leanstore.pack_threshold = 100
synchronous_commit = on
autovacuum = off
restart_after_crash = on
# the waiting protocol: every commit that wrote leanstore rows waits for
# leanstore's log (crash_via_wal.sh tests commits through PostgreSQL's WAL,
# which skip that wait and its crash points)
leanstore.commit_via_wal = off
EOF
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql postgres "$@"; }
pgctl() { ls_pgctl "$@"; }
crash() { ls_crash; }
restart() { ls_restart; }

q -c "CREATE EXTENSION leanstore" >/dev/null
q -c "CREATE TABLE h (n int) USING heap; CREATE TABLE l (n int PRIMARY KEY, v text) USING leanstore;
      INSERT INTO l SELECT g, 'v' || g FROM generate_series(1, 100) g; INSERT INTO h VALUES (1);" >/dev/null

# 1. the committing backend dies; PostgreSQL restarts every process
for point in commit-before-log commit-after-log; do
	q -c "SET leanstore.debug_crash_point = '$point'" \
		-c "BEGIN; INSERT INTO l VALUES (1000, 'doomed'); UPDATE l SET v = 'doomed' WHERE n = 1;
		    DELETE FROM l WHERE n = 2; INSERT INTO h VALUES (1000); COMMIT;" >/dev/null
	ls_wait_up "$dir"
	ls_expect "$point: the transaction is gone in both tables" "0|0|v1|1" \
		"$(q -c "SELECT (SELECT count(*) FROM l WHERE n = 1000), (SELECT count(*) FROM h WHERE n = 1000),
		                (SELECT v FROM l WHERE n = 1), (SELECT count(*) FROM l WHERE n = 2)")"
	ls_expect "$point: earlier commits are there" "100" "$(q -c "SELECT count(*) FROM l")"
done
grep -q 'crashing at "commit-after-log"' "$dir/server.log" ||
	{ echo "crash_points: the commit-after-log point was not reached"; fail=1; }

# 1b. a transaction that wrote only leanstore rows (no index entry, no heap
#     row: no WAL of PostgreSQL's) commits through leanstore's log alone
#     (a log-only commit): once its commit record is durable it survives
#     a crash, although PostgreSQL's commit record may not; before that it
#     is gone.  Subtransactions: a released one commits with it, a rolled
#     back one does not.  A failure after the log's commit (an error later
#     in PostgreSQL's commit) logs an abort, so the crash after it does not
#     bring the transaction back.
q -c "CREATE TABLE lf (n int, v text) USING leanstore; INSERT INTO lf SELECT g, 'v' || g FROM generate_series(1, 10) g" >/dev/null
before=$(q -c "SELECT log_only_commits FROM leanstore_stats()")
q -c "UPDATE lf SET v = 'w' || n WHERE n = 10" >/dev/null
ls_expect "a leanstore-only transaction commits through the log alone" "t" \
	"$(q -c "SELECT log_only_commits > $before FROM leanstore_stats()")"
q -c "SET leanstore.debug_crash_point = 'commit-before-log'" \
	-c "BEGIN; INSERT INTO lf VALUES (1000, 'doomed'); UPDATE lf SET v = 'doomed' WHERE n = 1;
	    DELETE FROM lf WHERE n = 2; COMMIT;" >/dev/null
ls_wait_up "$dir"
ls_expect "log-only commit, crash before the log: gone" "0|v1|1|10" \
	"$(q -c "SELECT (SELECT count(*) FROM lf WHERE n = 1000), (SELECT v FROM lf WHERE n = 1),
	                (SELECT count(*) FROM lf WHERE n = 2), (SELECT count(*) FROM lf)")"
q -c "SET leanstore.debug_crash_point = 'commit-after-log'" \
	-c "BEGIN; INSERT INTO lf VALUES (1000, 'kept'); UPDATE lf SET v = 'kept' WHERE n = 1;
	    DELETE FROM lf WHERE n = 2; SAVEPOINT a; INSERT INTO lf VALUES (1001, 'sub');
	    UPDATE lf SET v = 'sub' WHERE n = 3; RELEASE a; COMMIT;" >/dev/null
ls_wait_up "$dir"
ls_expect "log-only commit, crash after the log: committed" "1|kept|0|1|sub|11|w10" \
	"$(q -c "SELECT (SELECT count(*) FROM lf WHERE n = 1000), (SELECT v FROM lf WHERE n = 1),
	                (SELECT count(*) FROM lf WHERE n = 2), (SELECT count(*) FROM lf WHERE n = 1001),
	                (SELECT v FROM lf WHERE n = 3), (SELECT count(*) FROM lf), (SELECT v FROM lf WHERE n = 10)")"
# a rolled-back subtransaction wrote an abort record to PostgreSQL's WAL:
# the transaction commits through PostgreSQL's commit record, so the same
# crash leaves nothing of it
q -c "SET leanstore.debug_crash_point = 'commit-after-log'" \
	-c "BEGIN; INSERT INTO lf VALUES (1003, 'gone'); SAVEPOINT b; INSERT INTO lf VALUES (1002, 'undone');
	    ROLLBACK TO b; COMMIT;" >/dev/null
ls_wait_up "$dir"
ls_expect "a subtransaction rolled back, crash after the log: gone" "0|0|11" \
	"$(q -c "SELECT (SELECT count(*) FROM lf WHERE n = 1002), (SELECT count(*) FROM lf WHERE n = 1003),
	                (SELECT count(*) FROM lf)")"
err=$(q -c "SET leanstore.debug_crash_point = 'commit-error-after-log'" \
	-c "BEGIN; INSERT INTO lf VALUES (2000, 'failed'); UPDATE lf SET v = 'failed' WHERE n = 4; COMMIT;" 2>&1)
case "$err" in
*'failing at "commit-error-after-log"'*) ;;
*) echo "crash_points: no error at commit-error-after-log: $err"; fail=1 ;;
esac
ls_expect "an error after the log's commit: rolled back" "0|v4" \
	"$(q -c "SELECT (SELECT count(*) FROM lf WHERE n = 2000), (SELECT v FROM lf WHERE n = 4)")"
crash
restart
ls_expect "an error after the log's commit, then a crash: still rolled back" "0|v4|11" \
	"$(q -c "SELECT (SELECT count(*) FROM lf WHERE n = 2000), (SELECT v FROM lf WHERE n = 4), (SELECT count(*) FROM lf)")"
ls_expect "leanstore_verify(lf)" "t" "$(q -c "SELECT leanstore_verify('lf')")"
# the same failure, and the crash comes while its abort record is not
# durable yet (commit-error-slow-abort: the abort waits 10 s before it):
# the log keeps the transaction, so it must come back whole.  Meanwhile
# clog calls it aborted; writers of its rows (one its top transaction
# wrote, one a released subtransaction) must wait for it instead of writing
# over them (a writer's durable commit would undo part of it after the
# crash: before session 26, lf 5 came back as 'v5+').  So must an insert
# of a key whose row the subtransaction updated (the unique check's wait:
# until session 27 it spun on the subxid, whose lock was gone).
q -c "CREATE TABLE lfu (k int PRIMARY KEY, v text) USING leanstore" \
	-c "INSERT INTO lfu VALUES (1, 'u1'), (2, 'u2')" >/dev/null
q -c "SET leanstore.debug_crash_point = 'commit-error-slow-abort'" \
	-c "BEGIN; UPDATE lf SET v = 'failed' WHERE n = 5; SAVEPOINT s;
	    UPDATE lf SET v = 'failed' WHERE n = 6; UPDATE lfu SET v = 'failed' WHERE k = 1;
	    RELEASE s; COMMIT;" >"$dir/slow_abort.out" 2>&1 &
slow=$!
for _ in $(seq 1 500); do
	grep -q 'leanstore pauses 10000 ms here (commit-error-slow-abort)' "$dir/server.log" && break
	sleep 0.01
done
grep -q 'leanstore pauses 10000 ms here (commit-error-slow-abort)' "$dir/server.log" ||
	{ echo "crash_points: the slow abort did not begin"; fail=1; }
q -c "UPDATE lf SET v = v || '+' WHERE n = 5 RETURNING v" >"$dir/slow_writer5.out" 2>&1 &
q -c "UPDATE lf SET v = v || '+' WHERE n = 6 RETURNING v" >"$dir/slow_writer6.out" 2>&1 &
q -c "INSERT INTO lfu VALUES (1, 'dup') RETURNING v" >"$dir/slow_writer_u.out" 2>&1 &
# all wait for the failed transaction's xid lock (or wrote: then the check fails)
waiting=0
for _ in $(seq 1 100); do
	waiting=$(q -c "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
	                AND wait_event = 'transactionid'
	                AND (query LIKE 'UPDATE lf SET v = v || %' OR query LIKE 'INSERT INTO lfu %')")
	[ "$waiting" = 3 ] && break
	[ -s "$dir/slow_writer5.out" ] && [ -s "$dir/slow_writer6.out" ] && [ -s "$dir/slow_writer_u.out" ] && break
	sleep 0.05
done
ls_expect "writers of a failed log-only commit's rows wait while its abort is not durable" \
	"3|||" "$waiting|$(cat "$dir/slow_writer5.out")|$(cat "$dir/slow_writer6.out")|$(cat "$dir/slow_writer_u.out")"
crash
wait $slow 2>/dev/null
restart
ls_expect "a failed log-only commit, crash before its abort record: whole" "failed|failed|11|failed|2" \
	"$(q -c "SELECT (SELECT v FROM lf WHERE n = 5), (SELECT v FROM lf WHERE n = 6), (SELECT count(*) FROM lf),
	                (SELECT v FROM lfu WHERE k = 1), (SELECT count(*) FROM lfu)")"
ls_expect "leanstore_verify(lf) after the slow abort" "t|t" \
	"$(q -c "SELECT leanstore_verify('lf'), leanstore_verify('lfu')")"
q -c "UPDATE lf SET v = 'v' || n WHERE n IN (5, 6)" >/dev/null
# a log-only delete of cold rows (they migrate: the delete's xid is in hot
# versions only): after the crash the rows stay deleted over their images
# (replay gives the dead versions a frozen xmax, as PostgreSQL may hand the
# xid out again), and VACUUM removes them
q -c "CREATE TABLE lfc (a int) USING leanstore" -c "SET leanstore.bulk_load_rows = 10" \
	-c "INSERT INTO lfc SELECT generate_series(1, 100)" >/dev/null
before=$(q -c "SELECT log_only_commits FROM leanstore_stats()")
q -c "DELETE FROM lfc WHERE a = 100" >/dev/null
ls_expect "a delete of cold rows is a log-only commit" "t" \
	"$(q -c "SELECT log_only_commits > $before FROM leanstore_stats()")"
q -c "SET leanstore.debug_crash_point = 'commit-after-log'" -c "DELETE FROM lfc WHERE a <= 5" >/dev/null
ls_wait_up "$dir"
ls_expect "log-only delete of cold rows, crash after the log: deleted" "94|5050" \
	"$(q -c "SELECT count(*), sum(a) + 115 FROM lfc")"
ls_expect "log-only delete of cold rows: VACUUM, verify" "94|t" \
	"$(q -c "VACUUM lfc" -c "SELECT count(*), leanstore_verify('lfc') FROM lfc")"

# 1b'. a synchronous standby confirms PostgreSQL's commit record, so a
#     leanstore-only commit that must wait for one is not log-only: it
#     waits (here for a standby that never comes; a cancel ends the wait
#     after the commit, with PostgreSQL's warning); with synchronous_commit
#     = local no standby is waited for, and the commit is log-only
q -c "ALTER SYSTEM SET synchronous_standby_names = 'ls_no_such_standby'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
before=$(q -c "SELECT log_only_commits FROM leanstore_stats()")
q -c "SET synchronous_commit = local" -c "UPDATE lf SET v = 'local' WHERE n = 5" >/dev/null
ls_expect "a synchronous standby, synchronous_commit = local: log-only" "1" \
	"$(q -c "SELECT log_only_commits - $before FROM leanstore_stats()")"
q -c "UPDATE lf SET v = 'remote' WHERE n = 5" >"$dir/syncrep.out" 2>&1 &
upd=$!
waited=f
for _ in $(seq 1 100); do
	waited=$(q -c "SELECT coalesce(bool_or(pg_cancel_backend(pid)), false) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
	[ "$waited" = t ] && break
	sleep 0.1
done
wait $upd
q -c "ALTER SYSTEM RESET synchronous_standby_names" -c "SELECT pg_reload_conf()" >/dev/null
ls_expect "a synchronous standby: the commit waits for it, not log-only" "t|1|remote" \
	"$waited|$(q -c "SELECT log_only_commits - $before FROM leanstore_stats()")|$(q -c "SELECT v FROM lf WHERE n = 5")"
grep -q "canceling wait for synchronous replication" "$dir/syncrep.out" ||
	{ echo "crash_points: no synchronous replication warning: $(cat "$dir/syncrep.out")"; fail=1; }

# 1b''. a cancel while a log-only commit waits for the log's flush (the
#     writer's rounds held back by debug_round_delay, committers leave the
#     round to it): the commit record may be durable already, so the wait
#     holds interrupts; the transaction commits, also as far as a crash is
#     concerned
q -c "ALTER SYSTEM SET leanstore.debug_round_delay = '2s'" -c "ALTER SYSTEM SET leanstore.log_committer_rounds = off" \
	-c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
before=$(q -c "SELECT log_only_commits FROM leanstore_stats()")
q -c "UPDATE lf SET v = 'cancel' WHERE n = 6" >"$dir/cancel.out" 2>&1 &
upd=$!
cancelled=f
for _ in $(seq 1 100); do
	cancelled=$(q -c "SELECT coalesce(bool_or(pg_cancel_backend(pid)), false) FROM pg_stat_activity
	                  WHERE wait_event_type = 'Extension' AND query LIKE 'UPDATE lf SET v = ''cancel''%'")
	[ "$cancelled" = t ] && break
	sleep 0.05
done
wait $upd
q -c "ALTER SYSTEM RESET leanstore.debug_round_delay" -c "ALTER SYSTEM RESET leanstore.log_committer_rounds" \
	-c "SELECT pg_reload_conf()" >/dev/null
ls_expect "a cancel during a log-only commit's wait: committed" "t|1|cancel" \
	"$cancelled|$(q -c "SELECT log_only_commits - $before FROM leanstore_stats()")|$(q -c "SELECT v FROM lf WHERE n = 6")"
crash
restart
ls_expect "a cancel during a log-only commit's wait, then a crash: committed" "cancel" \
	"$(q -c "SELECT v FROM lf WHERE n = 6")"

# 1c. a transaction that is not a log-only commit (SERIALIZABLE) dies
#     after its rows are durable in leanstore's log, before any WAL record
#     of PostgreSQL's named its xid: PostgreSQL hands the xid out again
#     after the restart.  A transaction of the new run takes it and commits
#     while leanstore's recovery is still to come (debug_recovery_delay):
#     the dead transaction's rows must not come back, also not when the
#     server crashes again before leanstore's recovery has finished (the
#     second redo's xid bound would cover the reused xid).
# ls_reuse_xid NAME: the crashed transaction inserts (n = 3000, NAME) into
# lf; after the restart, xids are taken until the crashed one has
# committed again, before leanstore's recovery ran (its xid: $reused)
ls_reuse_xid() {
	local out xid n replays
	q -c "CHECKPOINT" >/dev/null
	replays=$(grep -c 'leanstore recovery replayed' "$dir/server.log")
	out=$(q -c "SET leanstore.debug_crash_point = 'commit-after-log'" -c "BEGIN ISOLATION LEVEL SERIALIZABLE" \
		-c "SELECT txid_current()" -c "INSERT INTO lf VALUES (3000, '$1')" -c "COMMIT" 2>&1)
	xid=$(echo "$out" | head -n 1)
	ls_wait_up "$dir"
	n=0
	for _ in $(seq 1 100); do
		# a heap row: WAL of its own, so the commit is flushed (a second
		# crash must find the reused xid committed)
		n=$(q -c "INSERT INTO xr SELECT txid_current() RETURNING x")
		[ "$n" -ge "$xid" ] 2>/dev/null && break
	done
	reused=$xid
	ls_expect "$1: the crashed xid is handed out again and commits before leanstore's recovery" \
		"$xid|$replays" "$n|$(grep -c 'leanstore recovery replayed' "$dir/server.log")"
}
q -c "CREATE TABLE xr (x bigint) USING heap" >/dev/null
q -c "ALTER SYSTEM SET leanstore.debug_recovery_delay = '5s'" -c "ALTER SYSTEM SET wal_writer_delay = '10s'" \
	-c "SELECT pg_reload_conf()" >/dev/null
ls_reuse_xid reused
ls_expect "a reused xid: the crashed transaction's row stays gone" "0|11" \
	"$(q -c "SELECT (SELECT count(*) FROM lf WHERE n = 3000), (SELECT count(*) FROM lf)")"
ls_reuse_xid reused-twice
q -c "ALTER SYSTEM RESET leanstore.debug_recovery_delay" -c "ALTER SYSTEM RESET wal_writer_delay" >/dev/null
crash
restart
ls_expect "a reused xid, a second crash before leanstore's recovery: still gone" "0|11|t|1" \
	"$(q -c "SELECT (SELECT count(*) FROM lf WHERE n = 3000), (SELECT count(*) FROM lf), leanstore_verify('lf'),
	                (SELECT count(*) FROM xr WHERE x = $reused)")"
ls_expect "the xid bound is forgotten once recovery is over" "no" \
	"$(test -e "$dir/data/pg_leanstore/xid_bound" && echo yes || echo no)"

# 2. DDL: committed before the crash, or still open at the crash
q -c "CREATE TABLESPACE ts LOCATION '$dir/tblspc'" >/dev/null
q -c "CREATE TABLE d_trunc (a int) USING leanstore; INSERT INTO d_trunc VALUES (1), (2);
      CREATE TABLE d_drop (a int) USING leanstore; INSERT INTO d_drop VALUES (1);
      CREATE TABLE d_vf (a int, b text) USING leanstore;
      INSERT INTO d_vf SELECT g, 'b' || g FROM generate_series(1, 50) g; DELETE FROM d_vf WHERE a % 2 = 0;
      CREATE TABLE d_type (a int, b int) USING leanstore; INSERT INTO d_type SELECT g, g FROM generate_series(1, 20) g;
      CREATE TABLE d_ts (a int) USING leanstore; INSERT INTO d_ts SELECT generate_series(1, 30);
      CREATE UNLOGGED TABLE d_unlogged (a int) USING leanstore; INSERT INTO d_unlogged VALUES (1), (2), (3);
      CREATE TABLE o_drop (a int) USING leanstore; INSERT INTO o_drop VALUES (7);
      CREATE TABLE o_trunc (a int) USING leanstore; INSERT INTO o_trunc VALUES (8);" >/dev/null
# (one statement per -c: each its own transaction)
q -c "TRUNCATE d_trunc" -c "INSERT INTO d_trunc VALUES (3)" \
	-c "DROP TABLE d_drop" \
	-c "VACUUM FULL d_vf" \
	-c "ALTER TABLE d_type ALTER COLUMN b TYPE bigint" \
	-c "ALTER TABLE d_ts SET TABLESPACE ts" \
	-c "CREATE TABLE d_new (a int) USING leanstore" -c "INSERT INTO d_new VALUES (42)" \
	-c "BEGIN" -c "CREATE TABLE d_trunc2 (a int) USING leanstore" -c "INSERT INTO d_trunc2 VALUES (1)" \
	-c "TRUNCATE d_trunc2" -c "INSERT INTO d_trunc2 VALUES (2)" -c "COMMIT" >/dev/null
# open at the crash: a new table, a drop, a truncate
(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -d postgres -c "BEGIN; CREATE TABLE o_new (a int) USING leanstore;
	INSERT INTO o_new VALUES (1); DROP TABLE o_drop; TRUNCATE o_trunc; INSERT INTO o_trunc VALUES (9);
	SELECT pg_sleep(60);" >/dev/null 2>&1) &
opened=$!
for _ in $(seq 1 100); do
	[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND state = 'active' AND pid <> pg_backend_pid()")" = 1 ] && break
	sleep 0.1
done
crash
wait "$opened" 2>/dev/null
restart
ls_expect "committed TRUNCATE" "3" "$(q -c "SELECT string_agg(a::text, ',') FROM d_trunc")"
ls_expect "committed DROP" "0" "$(q -c "SELECT count(*) FROM pg_class WHERE relname = 'd_drop'")"
ls_expect "committed VACUUM FULL" "25|625" "$(q -c "SELECT count(*), sum(a) FROM d_vf")"
ls_expect "committed ALTER TYPE" "20|210|bigint" "$(q -c "SELECT count(*), sum(b), pg_typeof(sum(b) - sum(b)::int)::text FROM d_type" | sed 's/numeric/bigint/')"
ls_expect "committed SET TABLESPACE" "30|465" "$(q -c "SELECT count(*), sum(a) FROM d_ts")"
ls_expect "committed CREATE" "42" "$(q -c "SELECT a FROM d_new")"
ls_expect "TRUNCATE in the creating transaction" "2" "$(q -c "SELECT string_agg(a::text, ',') FROM d_trunc2")"
ls_expect "unlogged table empty after a crash" "0" "$(q -c "SELECT count(*) FROM d_unlogged")"
ls_expect "unlogged table usable" "1" "$(q -c "INSERT INTO d_unlogged VALUES (1); SELECT count(*) FROM d_unlogged")"
ls_expect "open CREATE rolled back" "0" "$(q -c "SELECT count(*) FROM pg_class WHERE relname = 'o_new'")"
ls_expect "open DROP rolled back" "7" "$(q -c "SELECT a FROM o_drop")"
ls_expect "open TRUNCATE rolled back" "8" "$(q -c "SELECT string_agg(a::text, ',') FROM o_trunc")"
for t in l d_trunc d_vf d_type d_ts d_new o_drop o_trunc; do
	ls_expect "leanstore_verify($t)" "t" "$(q -c "SELECT leanstore_verify('$t')")"
done

# 3. the log writer dies during recovery (the setting comes from the
#    configuration file, so restarts stay off until it is removed)
for point in recovery-replay recovery-relog; do
	q -c "INSERT INTO l VALUES (2000 + length('$point'), '$point')" >/dev/null
	q -c "ALTER SYSTEM SET restart_after_crash = off" -c "ALTER SYSTEM SET leanstore.debug_crash_point = '$point'" >/dev/null
	crash
	pgctl start
	for _ in $(seq 1 100); do
		[ -f "$dir/data/postmaster.pid" ] || break
		sleep 0.1
	done
	grep -q "crashing at \"$point\"" "$dir/server.log" ||
		{ echo "crash_points: $point was not reached"; fail=1; }
	sed -i '/debug_crash_point/d;/restart_after_crash/d' "$dir/data/postgresql.auto.conf"
	rm -f "$dir/data/postmaster.pid"
	restart
	ls_expect "$point: recovered again" "101|$point" \
		"$(q -c "SELECT count(*), max(v) FILTER (WHERE n > 1000) FROM l")"
	q -c "DELETE FROM l WHERE n > 1000" >/dev/null
done

# 4. rows moving into cold pages at the crash (a bulk load, pack): the
#    trees go back to their last clean image (undo journal) and the log's
#    cold records are replayed on top
q -c "CREATE TABLE c_bulk (a int) USING leanstore; INSERT INTO c_bulk VALUES (-1)" >/dev/null
q -c "SET leanstore.bulk_load_rows = 10" -c "INSERT INTO c_bulk SELECT generate_series(1, 5000)" >/dev/null
q -c "SET leanstore.bulk_load_rows = 10" -c "SET leanstore.debug_crash_point = 'bulk-load'" \
	-c "INSERT INTO c_bulk SELECT generate_series(10001, 10100)" >/dev/null
ls_wait_up "$dir"
ls_expect "bulk-load: committed load kept, the crashed one gone" "5001|12502499" \
	"$(q -c "SELECT count(*), sum(a) FROM c_bulk")"
ls_expect "bulk-load: other tables intact" "100" "$(q -c "SELECT count(*) FROM l")"
# the same through COPY: multi_insert's batches (one LS_LR_PUTS record per
# run of images); the crash comes after the crashed COPY's first batch
q -c "CREATE TABLE c_copy (a int) USING leanstore" >/dev/null
q -c "SET leanstore.bulk_load_rows = 10" -c "COPY c_copy FROM PROGRAM 'seq 1 5000'" >/dev/null
q -c "SET leanstore.bulk_load_rows = 10" -c "SET leanstore.debug_crash_point = 'bulk-load'" \
	-c "COPY c_copy FROM PROGRAM 'seq 10001 12000'" >/dev/null 2>&1
ls_wait_up "$dir"
ls_expect "bulk-load (COPY): committed load kept, the crashed one gone" "5000|12502500|t" \
	"$(q -c "SELECT count(*), sum(a) FROM c_copy")|$(q -c "SELECT leanstore_verify('c_copy')")"
# COPY FREEZE into storage made in its transaction does not wait for its
# rowid reservations (ls_log_rowid_used): committed, it is whole after a
# crash and later inserts take fresh rowids; crashed half way, the
# truncated table's committed rows come back
fz_check() {
	q -c "SELECT count(*), sum(a) FROM c_fz" \
		-c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" \
		-c "SELECT count(*), sum(a) FROM c_fz WHERE a > 0" -c "SELECT leanstore_verify('c_fz')" | paste -sd'|'
}
q -c "CREATE TABLE c_fz (a int PRIMARY KEY) USING leanstore" \
	-c "INSERT INTO c_fz SELECT generate_series(1, 100)" >/dev/null
q -c "SET leanstore.bulk_load_rows = 10" -c "BEGIN" -c "TRUNCATE c_fz" \
	-c "COPY c_fz FROM PROGRAM 'seq 1 200000' (FREEZE)" -c "COMMIT" >/dev/null
crash
restart
q -c "INSERT INTO c_fz SELECT generate_series(200001, 201000)" >/dev/null
ls_expect "COPY FREEZE: committed load whole after a crash, later rows beside it" \
	"201000|20200600500|201000|20200600500|t" "$(fz_check)"
q -c "SET leanstore.bulk_load_rows = 10" -c "SET leanstore.debug_crash_point = 'bulk-load'" \
	-c "BEGIN" -c "TRUNCATE c_fz" -c "COPY c_fz FROM PROGRAM 'seq 1 300000' (FREEZE)" \
	-c "COMMIT" >/dev/null 2>&1
ls_wait_up "$dir"
ls_expect "COPY FREEZE: crashed load gone, the truncated rows back" \
	"201000|20200600500|201000|20200600500|t" "$(fz_check)"
q -c "CREATE TABLE c_pack (a int) USING leanstore; INSERT INTO c_pack SELECT generate_series(1, 1000)" >/dev/null
# pack takes the tables in its own order; every one must come back intact
tables=$(q -c "SELECT string_agg(c.relname, ' ') FROM pg_class c JOIN pg_am a ON a.oid = c.relam
               WHERE a.amname = 'leanstore' AND c.relkind = 'r' AND c.relpersistence = 'p'")
declare -A before
for t in $tables; do
	before[$t]=$(q -c "SELECT count(*), sum(hashtext(x::text)) FROM $t x")
done
q -c "ALTER SYSTEM SET restart_after_crash = off" -c "ALTER SYSTEM SET leanstore.pack_eager = on" \
	-c "ALTER SYSTEM SET leanstore.debug_crash_point = 'pack'" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 100); do
	[ -f "$dir/data/postmaster.pid" ] || break
	sleep 0.1
done
grep -q 'crashing at "pack"' "$dir/server.log" || { echo "crash_points: pack was not reached"; fail=1; }
sed -i '/debug_crash_point/d;/restart_after_crash/d;/pack_eager/d' "$dir/data/postgresql.auto.conf"
rm -f "$dir/data/postmaster.pid"
restart
for t in $tables; do
	ls_expect "pack: $t intact" "${before[$t]}" "$(q -c "SELECT count(*), sum(hashtext(x::text)) FROM $t x")"
done

# 5. the log's write or sync fails: PANIC, PostgreSQL restarts, no commit
#    is lost, the failed one is not there
for fault in write sync; do
	q -c "INSERT INTO l VALUES (3000 + length('$fault'), 'before the fault')" >/dev/null
	q -c "ALTER SYSTEM SET leanstore.debug_log_fault = '$fault'" -c "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
	q -c "INSERT INTO l VALUES (4000 + length('$fault'), 'during the fault')" >/dev/null 2>&1
	ls_wait_up "$dir"
	q -c "ALTER SYSTEM RESET leanstore.debug_log_fault" -c "SELECT pg_reload_conf()" >/dev/null
	ls_expect "log $fault fault: PANIC" yes \
		"$(grep -q "PANIC:.*could not write leanstore's log" "$dir/server.log" && echo yes || echo no)"
	ls_expect "log $fault fault: committed rows kept, the failed one absent" "1|0" \
		"$(q -c "SELECT count(*) FILTER (WHERE n = 3000 + length('$fault')), count(*) FILTER (WHERE n = 4000 + length('$fault')) FROM l")"
done

# 6. checkpoints: the replay start moves, a crash after one replays only
#    what came later; crashes inside one (after the clean images, after
#    the re-log) recover everything
q -c "CREATE TABLE k (id int PRIMARY KEY, v text) USING leanstore;
      INSERT INTO k SELECT g, 'k' || g FROM generate_series(1, 2000) g" >/dev/null
q -c "SET leanstore.bulk_load_rows = 10" -c "INSERT INTO k SELECT g, 'b' || g FROM generate_series(2001, 6000) g" >/dev/null
# (VACUUM first: the crashes above left DEAD rowids, and a checkpoint logs
# every DEAD rowid again, which would dwarf what this part counts)
q -c "VACUUM" >/dev/null
start_before=$(awk '{ print $5 }' "$dir/data/pg_leanstore/state")
got=$(q -c "BEGIN" -c "INSERT INTO k VALUES (-1, 'x')" -c "SELECT leanstore_checkpoint()")
ls_expect "leanstore_checkpoint() in a writing transaction" "error" \
	"$(case "$got" in *"cannot run in a transaction that has written"*) echo error ;; *) echo "$got" ;; esac)"
ls_expect "checkpoint" "t" "$(q -c "SELECT leanstore_checkpoint()")"
start_after=$(awk '{ print $5 }' "$dir/data/pg_leanstore/state")
ls_expect "the replay start moved" "yes" "$([ "$start_after" -gt "$start_before" ] && echo yes || echo "$start_before -> $start_after")"
q -c "UPDATE k SET v = 'after' WHERE id % 100 = 0" -c "DELETE FROM k WHERE id % 100 = 1" >/dev/null
before_k=$(q -c "SELECT count(*), sum(hashtext(x::text)) FROM k x")
crash
restart
ls_expect "after a checkpoint: everything there" "$before_k" "$(q -c "SELECT count(*), sum(hashtext(x::text)) FROM k x")"
ls_expect "after a checkpoint: only later records replayed" "yes" \
	"$(q -c "SELECT CASE WHEN recovery_records < 5000 THEN 'yes' ELSE recovery_records::text END FROM leanstore_stats()")"
for point in checkpoint-clean checkpoint-relog; do
	q -c "SET leanstore.bulk_load_rows = 10" -c "INSERT INTO k SELECT g, '$point' FROM generate_series(1000000 + length('$point') * 1000, 1000000 + length('$point') * 1000 + 500) g" \
		-c "UPDATE k SET v = '$point' WHERE id % 100 = 5" >/dev/null
	before_k=$(q -c "SELECT count(*), sum(hashtext(x::text)) FROM k x")
	q -c "SET leanstore.debug_crash_point = '$point'" -c "SELECT leanstore_checkpoint()" >/dev/null 2>&1
	ls_wait_up "$dir"
	grep -q "crashing at \"$point\"" "$dir/server.log" || { echo "crash_points: $point was not reached"; fail=1; }
	ls_expect "crash in a checkpoint ($point): everything there" "$before_k" \
		"$(q -c "SELECT count(*), sum(hashtext(x::text)) FROM k x")"
	ls_expect "leanstore_verify(k) after $point" "t" "$(q -c "SELECT leanstore_verify('k')")"
done

# 7. deletes made in the cold tier (past leanstore.bulk_load_rows cold rows
#    of a table, the deleter's xid goes into the row's image, the
#    tombstone into the log at once): after a crash a committed one is
#    gone, one still open is not, also when a checkpoint wrote the images
#    with the xid between the delete and the crash (clog decides), and
#    when the delete's tombstones are before the checkpoint's replay start
#    but its commit is after
q -c "CREATE TABLE cd (id int PRIMARY KEY, v text) USING leanstore" \
	-c "SET leanstore.bulk_load_rows = 10" \
	-c "INSERT INTO cd SELECT g, 'c' || g FROM generate_series(1, 3000) g" \
	-c "SELECT leanstore_checkpoint()" >/dev/null
q -c "SET leanstore.bulk_load_rows = 10" -c "DELETE FROM cd WHERE id % 3 = 0" >/dev/null
# (the open one ends without a commit while the checkpoint waits for it:
# a checkpoint waits for running writers 10 s in all, then gives up)
q -c "SET leanstore.bulk_load_rows = 10" -c "BEGIN" -c "DELETE FROM cd WHERE id % 3 = 1" \
	-c "SELECT pg_sleep(4)" >/dev/null 2>&1 &
open_pid=$!
q -c "SET leanstore.bulk_load_rows = 10" -c "BEGIN" -c "DELETE FROM cd WHERE id % 3 = 2 AND id <= 1500" \
	-c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null &
late_pid=$!
sleep 1.5
ls_expect "cold deletes: checkpoint while deletes are open" "t" "$(q -c "SELECT leanstore_checkpoint()")"
wait "$late_pid"
crash
wait "$open_pid" 2>/dev/null
restart
ls_expect "cold deletes after a crash: committed ones gone, the open one not" "1500|1000|1500" \
	"$(q -c "SELECT count(*), count(*) FILTER (WHERE id % 3 = 1), (SELECT count(*) FROM cd WHERE id % 3 = 1 OR id > 1500) FROM cd")"
ls_expect "cold deletes after a crash: the index agrees" "1500" \
	"$(q -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" -c "SELECT count(*) FROM cd WHERE id BETWEEN 1 AND 3000")"
ls_expect "cold deletes after a crash: VACUUM, verify" "1500|t" \
	"$(q -c "VACUUM cd" -c "SELECT count(*), leanstore_verify('cd') FROM cd")"
# updates made in the cold tier: the new versions (at new rowids) of a
# committed one are there after a crash, those of one open at the crash not
q -c "SET leanstore.bulk_load_rows = 10" -c "UPDATE cd SET v = 'u' || id WHERE id % 3 = 1" >/dev/null
q -c "SET leanstore.bulk_load_rows = 10" -c "BEGIN" -c "UPDATE cd SET v = 'open', id = id + 100000 WHERE id > 2000" \
	-c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
open_pid=$!
sleep 1
crash
wait "$open_pid" 2>/dev/null
restart
ls_expect "cold updates after a crash: committed ones there, the open one not" "1500|1000|0|0" \
	"$(q -c "SELECT count(*), count(*) FILTER (WHERE v = 'u' || id), count(*) FILTER (WHERE v = 'open'), count(*) FILTER (WHERE id > 100000) FROM cd")"
ls_expect "cold updates after a crash: the index agrees, VACUUM, verify" "1000|1500|t" \
	"$(q -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" -c "SELECT count(*) FROM cd WHERE id BETWEEN 1 AND 3000 AND v LIKE 'u%'" -c "RESET enable_seqscan" -c "VACUUM cd" -c "SELECT count(*), leanstore_verify('cd') FROM cd" | paste -sd'|')"

# 8. index entries of rows a crash took away must never come back through
#    an index-only scan: rows a transaction open at the crash inserted (its
#    index entries are in PostgreSQL's WAL), and rows deleted before a
#    checkpoint (their DEAD rowids must survive it); after VACUUM sets the
#    visibility map bits, the index-only count equals the table's
q -c "CREATE TABLE ph (id int PRIMARY KEY, v text) USING leanstore" \
	-c "INSERT INTO ph SELECT g, 'p' || g FROM generate_series(1, 100) g" -c "DELETE FROM ph WHERE id > 50" >/dev/null
q -c "SELECT leanstore_checkpoint()" >/dev/null
q -c "BEGIN" -c "INSERT INTO ph SELECT g, 'open' FROM generate_series(1001, 2000) g" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
open_pid=$!
sleep 1
q -c "CHECKPOINT" >/dev/null
crash
wait "$open_pid" 2>/dev/null
restart
ls_expect "no phantom rows: sequential and index-only counts after VACUUM" "50|50|Index Only Scan" \
	"$(ls_ios_verdict ph "x.v IS NOT NULL OR x.v IS NULL")"

# 9. a crash inside the clean shutdown, after the first table's clean image
#    was written and before the others' (and before the state says clean):
#    the next start recovers from the log, over one table's shutdown image
#    and the others' checkpoint images; every table has what it had
q -c "CREATE TABLE sm1 (id int PRIMARY KEY, v text) USING leanstore" \
	-c "CREATE TABLE sm2 (id int PRIMARY KEY, v text) USING leanstore" \
	-c "SET leanstore.bulk_load_rows = 10" \
	-c "INSERT INTO sm1 SELECT g, 's' || g FROM generate_series(1, 3000) g" \
	-c "INSERT INTO sm2 SELECT g, 't' || g FROM generate_series(1, 3000) g" \
	-c "SELECT leanstore_checkpoint()" >/dev/null
q -c "UPDATE sm1 SET v = 'u' WHERE id % 7 = 0" -c "DELETE FROM sm1 WHERE id % 11 = 0" \
	-c "INSERT INTO sm1 SELECT g, 'h' FROM generate_series(5001, 5500) g" \
	-c "UPDATE sm2 SET v = 'u' WHERE id % 5 = 0" -c "DELETE FROM sm2 WHERE id % 13 = 0" \
	-c "INSERT INTO sm2 SELECT g, 'h' FROM generate_series(5001, 5300) g" >/dev/null
sm_state() {
	q -c "SELECT (SELECT count(*) || '/' || sum(hashtext(x::text)) FROM sm1 x) || ' ' ||
	             (SELECT count(*) || '/' || sum(hashtext(x::text)) FROM sm2 x) || ' ' ||
	             k_state FROM (SELECT count(*) || '/' || sum(hashtext(x::text)) AS k_state FROM k x) s"
}
before_sm=$(sm_state)
q -c "ALTER SYSTEM SET leanstore.debug_crash_point = 'shutdown-meta'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
mark=$(wc -l <"$dir/server.log")
ls_pgctl -m fast stop
tail -n +"$((mark + 1))" "$dir/server.log" | grep -q 'crashing at "shutdown-meta"' ||
	{ echo "crash_points: shutdown-meta was not reached"; fail=1; }
restart
q -c "ALTER SYSTEM RESET leanstore.debug_crash_point" -c "SELECT pg_reload_conf()" >/dev/null
ls_expect "crash in the clean shutdown: a recovery ran" "yes" \
	"$(tail -n +"$((mark + 1))" "$dir/server.log" | grep -q "leanstore recovery replayed [1-9]" && echo yes || echo no)"
ls_expect "crash in the clean shutdown: every table as it was" "$before_sm" "$(sm_state)"
ls_expect "crash in the clean shutdown: index scans agree" "3228|3070" \
	"$(q -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" \
		-c "SELECT (SELECT count(*) FROM sm1 WHERE id > 0) || '|' || (SELECT count(*) FROM sm2 WHERE id > 0)")"
ls_expect "crash in the clean shutdown: verify" "true|true" \
	"$(q -c "SELECT leanstore_verify('sm1') || '|' || leanstore_verify('sm2')")"
ls_expect "crash in the clean shutdown: no phantom rows after VACUUM" "3228|3228|Index Only Scan" \
	"$(ls_ios_verdict sm1 "x.v IS NOT NULL OR x.v IS NULL")"
sleep 1
ls_pgctl -m fast stop
restart
ls_expect "crash in the clean shutdown: a clean restart after it" "$before_sm" "$(sm_state)"

if [ "$fail" != 0 ]; then
	tail -n 40 "$dir/server.log"
	echo "crash_points: FAILED"
	exit 1
fi
ls_cluster_stop "$dir"
echo "crash_points: ok"
