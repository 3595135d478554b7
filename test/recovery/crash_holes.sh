#!/usr/bin/env bash
# test/recovery/crash_holes.sh: files and rowid ranges that hold nothing,
# across crashes.
#
#  1. A hot-only table whose virtual blocks reach past its file's first
#     1 GB segment (fillfactor 10: a row a block).  ANALYZE and bitmap scans
#     make md.c's segments cover them (PostgreSQL prefetches those blocks
#     through md.c), sparse: nothing is written.  After a crash the file,
#     only holes, still counts as never written, so the log brings the
#     table back (it was taken for a damaged meta page: "cannot be read:
#     corrupt").
#  2. Holes: rowids a crashed run handed out that hold nothing now (an
#     insert open at the crash, whose index entries are in PostgreSQL's
#     WAL) and the rest of each virtual block the allocator skipped.
#     Recovery keeps them as one range per table, not as a DEAD slot per
#     rowid: those took hot memory for every skipped rowid (nine 320-byte
#     chunks for a block of one wide row), and recovery failed in a loop
#     ("could not recover rowid N of a leanstore table: no space") for
#     committed tables that the tier held easily before the crash.  The
#     range survives a checkpoint and a crash, and a clean restart; until
#     VACUUM has deleted the index entries naming holes, no visibility map
#     bit is set there (an index-only scan would return them as rows);
#     after it, the bits are set and the index counts only real rows.
#  3. A log whose rows do not fit a smaller leanstore.hot_memory: recovery
#     stores in the cold tree what the tier has no room for (it failed with
#     "could not replay row N ...: no space", and so it did with the same
#     memory after a bulk load: the allocator's size classes fragment
#     differently than before the crash), and its memory does not grow with
#     the log (it held the last 64MB of records: OOM-killed at every restart
#     inside a 128MB memory cgroup).  Then a recovery that fails
#     (leanstore.debug_crash_point = recovery-fail): statements on leanstore
#     tables fail with an error that points to the server log, instead of
#     waiting for ever; without the fault, the next start recovers.
#     Rows deleted before the crash whose replay stored them cold find no
#     room for DEAD slots either: their rowids become holes (recovery
#     failed there).
#  3b. DEAD rowids of a clean shutdown that a smaller hot tier cannot hold
#     as DEAD slots become holes when the table opens (it was declared
#     lost); VACUUM then sets the visibility map bits.
#  4. An insert running while a checkpoint logs the table, rolled back
#     before the checkpoint ends: its rowids are below the clean image's
#     allocation (so not in replay's holes range), no record names them,
#     yet its index entries are in PostgreSQL's WAL.  The checkpoint now
#     logs the rows it found nothing to log for as holes; after a crash
#     VACUUM deletes their index entries and the index-only count stays the
#     table's (it returned the rolled-back rows).
#  5. A session idle in a transaction that wrote hot rows (inserts, updates
#     and deletes of committed rows): a checkpoint does not wait for it
#     (it logs the committed state under the running writes; the writer
#     logs its own at commit, after it), and a crash then keeps the
#     committed state, or the writer's when it committed after the
#     checkpoint.  (Until session 24 the checkpoint waited 10 s in all and
#     gave up, and before session 22 10 s a row and round.)
#  6. The same for a transaction that deleted and updated rows in the cold
#     tier (their tombstones logged when they were made), once another
#     session touched some of them (its migration of the row names the
#     deleter): the checkpoint logs the committed state and the deleter's
#     tombstone again after it (until session 27 it waited 10 s and gave
#     up).  A crash keeps the deletes of the deleter that committed after
#     the checkpoint, and none of the one that was open or rolled back.
#  7. A writer whose commit waits for a synchronous standby that never
#     answers (its commit record is written, clog calls it committed, it
#     still counts as running): a checkpoint logs its rows as committed
#     instead of waiting for it (until session 27: 10 s, then skipped),
#     and a crash keeps them, as PostgreSQL keeps its heap rows.
# Run by test/run (as root; the server runs as postgres).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin crash_holes
ls_test_conf <<EOF2
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '256MB'
leanstore.bulk_load_rows = 0
synchronous_commit = on
autovacuum = off
restart_after_crash = on
EOF2
ls_cluster_start "$dir" "$dir/test.conf" || exit 1

q() { ls_test_psql postgres "$@"; }
# what the server logged since the mark, WARNINGs and worse
log_mark() { log_at=$(stat -c %s "$dir/server.log"); }
log_tail() { tail -c +"$((log_at + 1))" "$dir/server.log"; }
log_since() { log_tail | grep -E "WARNING|ERROR|FATAL|PANIC" | head -3; }
# how many lines the server logged since the mark match the pattern (ERE)
log_count() { log_tail | grep -cE "$1"; }

q -c "CREATE EXTENSION leanstore" >/dev/null

# 1. a covered hot-only table
q -c "CREATE TABLE sg (a int, b text) USING leanstore WITH (fillfactor = 10)" \
	-c "INSERT INTO sg SELECT g, repeat('x', 380) FROM generate_series(1, 135000) g" \
	-c "ANALYZE sg" >/dev/null
ls_expect "ANALYZE made segment 1 (the table's blocks reach past segment 0)" "t" \
	"$(q -c "SELECT (pg_stat_file(pg_relation_filepath('sg') || '.1')).size >= 0")"
log_mark
ls_crash
ls_restart
ls_expect "the covered hot-only table after a crash: rows, ANALYZE, bitmap scan, verify" "135000|51300000|1000|t" \
	"$(q -c "SELECT count(*), sum(length(b)) FROM sg" -c "ANALYZE sg" -c "CREATE INDEX ON sg (a)" \
		-c "SET enable_seqscan = off" -c "SET enable_indexscan = off" \
		-c "SELECT count(*) FROM sg WHERE a > 134000" -c "SELECT leanstore_verify('sg')" | paste -sd'|')"
ls_expect "the covered hot-only table after a crash: nothing logged" "" "$(log_since)"
q -c "DROP TABLE sg" >/dev/null

# 2. holes
q -c "CREATE TABLE hw (id int PRIMARY KEY, b text) USING leanstore WITH (fillfactor = 10)" \
	-c "INSERT INTO hw SELECT g, repeat('w', 380) FROM generate_series(1, 50000) g" >/dev/null
q -c "BEGIN" -c "INSERT INTO hw SELECT g, repeat('o', 380) FROM generate_series(100001, 150000) g" \
	-c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
open_pid=$!
for _ in $(seq 1 100); do
	[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(60)%'")" = 1 ] && break
	sleep 0.2
done
q -c "CHECKPOINT" >/dev/null
log_mark
ls_crash
wait "$open_pid" 2>/dev/null
ls_restart
# index-only counts: VACUUM's verdict, without and with the visibility map
ios() {
	local t=${1:-hw}
	q -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" \
		-c "SELECT count(*) FROM $t WHERE id > 0" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM $t WHERE id > 0" |
		grep -E "^[0-9]+$|Heap Fetches" | sed 's/^ *Heap Fetches: /fetches /' | paste -sd'|'
}
ls_expect "holes after a crash: recovered, the open insert gone" "50000|t" \
	"$(q -c "SELECT count(*), leanstore_verify('hw') FROM hw" | paste -sd'|')"
ls_expect "holes after a crash: recovery logged no error" "" "$(log_since)"
ls_expect "holes after a crash: index-only count before VACUUM (no bit set)" "50000|fetches 50000" "$(ios)"
# the range survives a checkpoint and a crash after it, and a clean restart
q -c "SELECT leanstore_checkpoint()" >/dev/null
ls_crash
ls_restart
ls_pgctl -m fast stop
ls_restart
q -c "VACUUM hw" >/dev/null
ls_expect "holes: VACUUM deleted the index entries naming them, then set the bits" "50000|fetches 0" "$(ios)"
ls_expect "holes: the index counts the real rows" "50000" \
	"$(q -c "SELECT reltuples::bigint FROM pg_class WHERE relname = 'hw_pkey'")"
ls_expect "holes: nothing logged since the first crash" "" "$(log_since)"

# 3. a smaller hot tier than the log's rows take, and a recovery that fails
# (the rows past 45000 are deleted: replay stores them cold for want of
# room, then their tombstones find no room for a DEAD slot either, and the
# rowids join the table's holes; recovery failed there before session 23)
q -c "CREATE TABLE hx (id int PRIMARY KEY, b text) USING leanstore WITH (fillfactor = 10)" \
	-c "INSERT INTO hx SELECT g, repeat('x', 380) FROM generate_series(1, 60000) g" \
	-c "DELETE FROM hx WHERE id > 45000" \
	-c "ALTER SYSTEM SET leanstore.hot_memory = '32MB'" >/dev/null
ls_crash
log_mark
# every process, the log writer's replay included, within 20MB of private
# memory (shared memory does not count): replay held the last 64MB of the
# log's records, about twice that in memory
(ulimit -d 20480 && ls_restart)
ls_expect "a smaller hot tier: every row back, what the tier had no room for cold" "45000|50000|t|t" \
	"$(q -c "SELECT (SELECT count(*) FROM hx), (SELECT count(*) FROM hw), leanstore_verify('hx'), (SELECT cold_rows > 0 FROM leanstore_table_stats('hx'))" | paste -sd'|')"
ls_expect "a smaller hot tier: recovery says how many rows it stored cold" "1" \
	"$(log_count "leanstore recovery replayed .* [1-9][0-9]* rows stored cold and [0-9]+ DEAD rowids made holes for lack of hot memory")"
ls_expect "a smaller hot tier: recovery made DEAD rowids holes" "1" \
	"$(log_count "leanstore recovery replayed .* [1-9][0-9]* DEAD rowids made holes for lack of hot memory")"
ls_expect "a smaller hot tier: nothing else logged" "" "$(log_since)"
ls_expect "a smaller hot tier: the index-only count before and after VACUUM" "45000|fetches 45000|45000|fetches 0" \
	"$(ios hx)|$(q -c "VACUUM hx" && ios hx)"
q -c "INSERT INTO hx VALUES (0, 'after')" \
	-c "ALTER SYSTEM SET leanstore.debug_crash_point = 'recovery-fail'" >/dev/null
ls_crash
ls_restart
ls_expect "a failed recovery: an error, not a wait" \
	"ERROR:  leanstore tables cannot be used: recovery from leanstore's log failed" \
	"$(timeout 60 runuser -u "$LS_PG_USER" -- "$LS_PG_BIN/psql" -X -q -At -d postgres -c "SELECT count(*) FROM hx" 2>&1 | head -1)"
ls_expect "a failed recovery: the server log says why" "1" \
	"$(grep -cE "FATAL: .*failing at \"recovery-fail\"" "$dir/server.log" | awk '{print ($1 > 0)}')"
q -c "ALTER SYSTEM RESET leanstore.debug_crash_point" -c "ALTER SYSTEM RESET leanstore.hot_memory" >/dev/null
ls_crash
ls_restart
ls_expect "a failed recovery: the next start recovers everything" "45001|50000" \
	"$(q -c "SELECT (SELECT count(*) FROM hx), (SELECT count(*) FROM hw)" | paste -sd'|')"

# 3b. DEAD rowids of a clean shutdown that a smaller hot tier has no room
#     for (one 320-byte RID-map chunk each, as the rows are a block apart):
#     they become holes when the table is opened again (the table was
#     declared lost before session 23: "a DEAD rowid cannot be stored")
q -c "CREATE TABLE hd (id int PRIMARY KEY, b text) USING leanstore WITH (fillfactor = 10)" \
	-c "INSERT INTO hd SELECT g, repeat('d', 380) FROM generate_series(1, 120000) g" \
	-c "DELETE FROM hd WHERE id > 10" >/dev/null
ls_pgctl -m fast stop
ls_restart
q -c "ALTER SYSTEM SET leanstore.hot_memory = '32MB'" >/dev/null
ls_pgctl -m fast stop
log_mark
ls_restart
ls_expect "DEAD rowids a smaller hot tier has no room for: the table opens, its rows there" "10|t" \
	"$(q -c "SELECT count(*), leanstore_verify('hd') FROM hd" | paste -sd'|')"
ls_expect "DEAD rowids made holes: the index-only count before and after VACUUM" "10|fetches 10|10|fetches 0" \
	"$(ios hd)|$(q -c "VACUUM hd" && ios hd)"
ls_expect "DEAD rowids made holes: nothing logged" "" "$(log_since)"
ls_expect "DEAD rowids made holes: the server log says how many" "1" \
	"$(log_count 'leanstore table "hd": [1-9][0-9]* of its [0-9]+ DEAD rowids became holes for lack of hot memory')"
q -c "DROP TABLE hd" -c "ALTER SYSTEM RESET leanstore.hot_memory" >/dev/null
ls_pgctl -m fast stop
ls_restart

# 4. an insert rolled back during a checkpoint
# (a later insert into its cold tree makes the checkpoint write the tree
# with the allocation past the running insert's rowids)
q -c "CREATE TABLE hc (id int PRIMARY KEY, v text) USING leanstore" \
	-c "SET leanstore.bulk_load_rows = 10" \
	-c "INSERT INTO hc SELECT g, 'c' || g FROM generate_series(1, 1000) g" >/dev/null
q -c "BEGIN" -c "INSERT INTO hc SELECT g, 'r' || g FROM generate_series(1001, 3000) g" \
	-c "SELECT pg_sleep(4)" -c "ROLLBACK" >/dev/null &
open_pid=$!
sleep 1
q -c "SET leanstore.bulk_load_rows = 10" \
	-c "INSERT INTO hc SELECT g, 'c' || g FROM generate_series(3001, 3100) g" >/dev/null
ls_expect "a checkpoint while an insert runs (waits for it)" "t" "$(q -c "SELECT leanstore_checkpoint()")"
wait "$open_pid"
q -c "CHECKPOINT" >/dev/null
ls_crash
ls_restart
ls_expect "an insert rolled back during a checkpoint: VACUUM, then the index-only count" "1100|1100|Index Only Scan" \
	"$(ls_ios_verdict hc "x.v IS NOT NULL")"

# 5. sessions idle in a transaction that wrote hot rows: checkpoints do
#    not wait for them; after a crash the committed state is there, and
#    the writes of the one that committed after the checkpoint
q -c "CREATE TABLE hi (id int PRIMARY KEY, v text) USING leanstore" \
	-c "INSERT INTO hi SELECT g, 'c' || g FROM generate_series(1, 200) g" >/dev/null
hi_state() { q -c "SELECT count(*), sum(hashtext(x::text)) FROM hi x" | paste -sd'|'; }
committed=$(hi_state)
ls_sessions_open idle
ls_session idle "BEGIN; INSERT INTO hi SELECT g, 'i' || g FROM generate_series(5001, 5050) g;
	UPDATE hi SET v = 'idle' WHERE id BETWEEN 1 AND 10; DELETE FROM hi WHERE id BETWEEN 11 AND 20;"
# a checkpoint that must not wait for open writers: done, quick, nothing skipped
ckpt_nowait() {
	local what=$1 t0 took
	log_mark
	t0=$(date +%s)
	ls_expect "$what: the checkpoint is done" "t" "$(q -c "SELECT leanstore_checkpoint()")"
	took=$(($(date +%s) - t0))
	ls_expect "$what: the checkpoint did not wait for it (took ${took}s)" "1" \
		"$([ "$took" -lt 5 ] && echo 1 || echo 0)"
	ls_expect "$what: nothing skipped" "0" "$(log_count "checkpoint skipped")"
}
ckpt_nowait "an idle writer"
ls_expect "a checkpoint beside an idle writer: others see the committed state" "$committed" "$(hi_state)"
ls_crash
ls_sessions_close idle
ls_restart
ls_expect "a crash after it: the committed state, none of the open writes" "$committed" "$(hi_state)"
ls_sessions_open late
ls_session late "BEGIN; UPDATE hi SET v = 'late' WHERE id BETWEEN 21 AND 30; DELETE FROM hi WHERE id BETWEEN 31 AND 40;
	INSERT INTO hi SELECT g, 'l' || g FROM generate_series(6001, 6020) g;"
ls_expect "a checkpoint beside a writer that commits after it" "t" "$(q -c "SELECT leanstore_checkpoint()")"
ls_session late "COMMIT;"
ls_sessions_close late
after=$(hi_state)
ls_expect "the late writer's rows" "210|10|20" \
	"$(q -c "SELECT count(*), count(*) FILTER (WHERE v = 'late'), count(*) FILTER (WHERE v LIKE 'l%' AND v <> 'late') FROM hi" | paste -sd'|')"
ls_crash
ls_restart
ls_expect "a crash after its commit: its writes there (logged after the checkpoint's)" "$after" "$(hi_state)"
ls_expect "and VACUUM's verdict" "210|210|Index Only Scan" "$(ls_ios_verdict hi "x.v IS NOT NULL")"

# 6. a transaction that deleted and updated rows in the cold tier, rows of
#    which another session touched
q -c "CREATE TABLE hd (id int PRIMARY KEY, v text) USING leanstore" \
	-c "SET leanstore.bulk_load_rows = 10" \
	-c "INSERT INTO hd SELECT g, 'c' || g FROM generate_series(1, 6000) g" >/dev/null
hd_state() { q -c "SELECT count(*), sum(hashtext(x::text)) FROM hd x" | paste -sd'|'; }
hd_hot() { q -c "SELECT hot_rows FROM leanstore_table_stats('hd')"; }
# a row touched by a writer that times out waiting for the deleter (it
# migrates the row first): 1
touch_hd() {
	q -c "SET lock_timeout = '200ms'" -c "UPDATE hd SET v = 't' WHERE id = $1" 2>&1 | grep -c "lock timeout"
}
committed=$(hd_state)
# each round in its own rows, far from the others' rowids: the deleter's
# commit logs nothing for the touched rows (it logs the rowid ranges its
# hot writes cover), so only the checkpoint's second tombstone deletes them
base=1000
for outcome in open rollback commit; do
	del="id BETWEEN $((base + 1)) AND $((base + 100))"
	upd="id BETWEEN $((base + 101)) AND $((base + 200))"
	ls_sessions_open "cd$outcome"
	hot_before=$(hd_hot)
	# the first 10 rows a transaction writes migrate, the rest are cold writes
	ls_session "cd$outcome" "BEGIN; SET LOCAL leanstore.bulk_load_rows = 10;
		SET LOCAL leanstore.cold_writes = always;
		DELETE FROM hd WHERE $del; UPDATE hd SET v = 'u' WHERE $upd;"
	ls_expect "cold deleter ($outcome): its rows were written in the cold tier" "1" \
		"$([ $(($(hd_hot) - hot_before)) -le 20 ] && echo 1 || echo 0)"
	hot_before=$(hd_hot)
	ls_expect "cold deleter ($outcome): a deleted and an updated row touched (lock timeouts)" \
		"1|1" "$(touch_hd $((base + 50)))|$(touch_hd $((base + 150)))"
	ls_expect "cold deleter ($outcome): both were cold (migrated now)" "2" "$(($(hd_hot) - hot_before))"
	ckpt_nowait "cold deleter ($outcome)"
	case $outcome in
	rollback) ls_session "cd$outcome" "ROLLBACK;" ;;
	commit)
		ls_session "cd$outcome" "COMMIT;"
		committed=$(hd_state)
		;;
	esac
	ls_crash
	ls_sessions_close "cd$outcome"
	ls_restart
	if [ "$outcome" = commit ]; then
		want="0|100"
	else
		want="100|0"
	fi
	ls_expect "cold deleter ($outcome), after a crash: its deleted rows, its updated rows" "$want" \
		"$(q -c "SELECT count(*) FROM hd WHERE $del" -c "SELECT count(*) FROM hd WHERE $upd AND v = 'u'" | paste -sd'|')"
	ls_expect "cold deleter ($outcome), after a crash: the committed state" "$committed" "$(hd_state)"
	ls_expect "cold deleter ($outcome), after a crash: verify" "t" "$(q -c "SELECT leanstore_verify('hd')")"
	base=$((base + 2000))
done

# 7. a commit that waits for a synchronous standby
q -c "CREATE TABLE hs (id int PRIMARY KEY, v text) USING leanstore" \
	-c "CREATE TABLE hs_heap (id int PRIMARY KEY, v text) USING heap" \
	-c "INSERT INTO hs SELECT g, 'c' || g FROM generate_series(1, 100) g" \
	-c "INSERT INTO hs_heap SELECT g, 'c' || g FROM generate_series(1, 100) g" \
	-c "ALTER SYSTEM SET synchronous_standby_names = 'nobody'" -c "SELECT pg_reload_conf()" >/dev/null
for tbl in hs hs_heap; do
	q -c "BEGIN" -c "UPDATE $tbl SET v = 'sync' WHERE id <= 10" -c "DELETE FROM $tbl WHERE id BETWEEN 11 AND 20" \
		-c "INSERT INTO $tbl VALUES (1000, 'sync')" -c "COMMIT" >/dev/null 2>&1 &
done
# syncrep_wait N SECS: until N commits wait for the standby (SECS at most); their number
syncrep_wait() {
	local n=0
	for _ in $(seq 1 $(($2 * 20))); do
		n=$(q -c "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
		[ "$n" = "$1" ] && break
		sleep 0.05
	done
	echo "$n"
}
ls_expect "two commits wait for the synchronous standby" "2" "$(syncrep_wait 2 10)"
ckpt_nowait "a commit waiting for a synchronous standby"
# 7b. the checkpoint meets a row while its writer still waits for
#     leanstore's log (a round held back 4 s), then that writer commits and
#     waits for the standby: the checkpoint stops waiting for it then (it
#     waited out its 10 s before a review found the wait loop asking only
#     whether the writer runs).  Its last step waits for one more round
#     of the log (4 s here): < 7 s after the writer's commit, not 10 + 4.
q -c "ALTER SYSTEM SET leanstore.debug_round_delay = 4000" \
	-c "ALTER SYSTEM SET leanstore.log_committer_rounds = off" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
q -c "SET leanstore.debug_checkpoint_pause = 2000" -c "SELECT leanstore_checkpoint()" >"$dir/ckpt7b.out" 2>&1 &
ckpt7b=$!
sleep 1
q -c "SET leanstore.commit_via_wal = off" -c "UPDATE hs SET v = 'late' WHERE id BETWEEN 21 AND 30" >/dev/null 2>&1 &
insync=
[ "$(syncrep_wait 3 15)" = 3 ] && insync=$(date +%s.%N)
wait "$ckpt7b"
took=$(awk -v a="$insync" -v b="$(date +%s.%N)" 'BEGIN { printf "%d", (a == "" ? 99 : b - a) }')
ls_expect "a writer that commits into the standby's wait during the checkpoint: done, no 10 s wait (${took}s after)" \
	"t|1" "$(cat "$dir/ckpt7b.out")|$([ "$took" -lt 7 ] && echo 1 || echo 0)"
q -c "ALTER SYSTEM RESET leanstore.debug_round_delay" -c "ALTER SYSTEM RESET leanstore.log_committer_rounds" \
	-c "SELECT pg_reload_conf()" >/dev/null
ls_crash
wait
q -c "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null 2>&1
ls_restart
q -c "ALTER SYSTEM RESET synchronous_standby_names" -c "SELECT pg_reload_conf()" >/dev/null
ls_expect "a crash after it: its commit kept, as heap's" "10|10|90|1|10|90|1" \
	"$(q -c "SELECT count(*) FILTER (WHERE v = 'sync' AND id <= 10), count(*) FILTER (WHERE v = 'late'),
	             count(*) FILTER (WHERE id <> 1000), count(*) FILTER (WHERE id = 1000) FROM hs" \
	     -c "SELECT count(*) FILTER (WHERE v = 'sync' AND id <= 10), count(*) FILTER (WHERE id <> 1000),
	             count(*) FILTER (WHERE id = 1000) FROM hs_heap" | paste -sd'|')"
ls_expect "and verify" "t" "$(q -c "SELECT leanstore_verify('hs')")"

if [ "$fail" != 0 ]; then
	tail -n 40 "$dir/server.log"
	echo "crash_holes: FAILED"
	exit 1
fi
ls_cluster_stop "$dir"
echo "crash_holes: ok"
