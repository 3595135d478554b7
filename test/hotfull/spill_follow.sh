#!/usr/bin/env bash
# test/hotfull/spill_follow.sh: a FOR KEY SHARE lock (a foreign key check)
# that follows a running no-key update whose new version went into the
# cold tree because the hot tier was full.
# Session G fills the 32MB hot tier with its own versions and stays open;
# session A's UPDATE of t's row 1 then writes its new version into the cold
# tree at a new rowid (a spill) and is held between its two steps (the
# image, the old version naming it) by leanstore.debug_update_lock; G is
# cancelled, so its memory comes back.  Then B's SELECT ... FOR KEY SHARE
# of row 1 must return the row, as on heap, and C's insert of a child row
# referencing it must pass its foreign key check; after A commits, the
# row has A's change and the child row is there.  Until session 28 the
# old version named the new rowid before the image was written: the
# locker followed the update there, found nothing, and took the row for
# deleted (the SELECT returned no row, the insert failed with a foreign
# key violation).
# Parts 2 and 3 keep the tier full while the lock follows: a spilled
# update of a hot row (part 2), and an update made in the cold tier (part
# 3); the FOR KEY SHARE lock must not wait (NOWAIT) and must hold on the
# new version after the update commits, as on heap.
# Run by test/run (suite hotfull, as root); $1: output file.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin spill_follow
cp "$HERE/tier32.conf" "$dir/test.conf"
chown -R "$LS_PG_USER": "$dir"
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { (cd "$dir" && ls_as_pg timeout 300 "$LS_PG_BIN/psql" -X -q -At -d postgres "$@" 2>&1); }
q -c "CREATE EXTENSION leanstore" \
	-c "CREATE TABLE t (id int PRIMARY KEY, n int, pad text) USING leanstore" \
	-c "INSERT INTO t SELECT g, 0, repeat('t', 200) FROM generate_series(1, 10) g" \
	-c "CREATE TABLE child (pid int REFERENCES t (id))" \
	-c "CREATE TABLE go (who text)" \
	-c "CREATE TABLE c (id int PRIMARY KEY, n int) USING leanstore" \
	-c "SET leanstore.bulk_load_rows = 1" \
	-c "INSERT INTO c SELECT g, 0 FROM generate_series(1, 10) g" \
	-c "CREATE TABLE child2 (pid int REFERENCES c (id))" >/dev/null || exit 1
q -v ON_ERROR_STOP=1 <"$HERE/fill.sql" >/dev/null || exit 1

# D: an old snapshot keeps the versions of rows 1, 2 and 3 hot (pack cannot
# take them), so the updates of A (and A2 in part 2, A4 in part 4) below
# are of hot rows
q -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SELECT count(*) FROM t" -c "SELECT pg_sleep(180)" \
	-c "COMMIT" >/dev/null &
sleep 1
q -c "UPDATE t SET n = 1 WHERE id IN (1, 2, 3)" >/dev/null
# G: fills the tier with its own versions and stays open
q -c "BEGIN" -c "CALL churn()" -c "SELECT pg_sleep(120)" -c "ROLLBACK" >"$dir/g.out" 2>&1 &
gpid=
for _ in $(seq 1 240); do
	gpid=$(q -c "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(120)'")
	[ -n "$gpid" ] && break
	sleep 0.5
done
ls_expect "the filler is done" "yes" "$([ -n "$gpid" ] && echo yes || cat "$dir/g.out")"
spilled=$(q -c "SELECT writes_spilled FROM leanstore_stats()")
# L holds the advisory lock A waits for between its steps
q -c "SELECT pg_advisory_lock(4242)" -c "SELECT pg_sleep(20)" >/dev/null &
sleep 0.5
q -c "BEGIN" -c "SET leanstore.debug_update_lock = 4242" -c "UPDATE t SET n = n + 1 WHERE id = 1" \
	-c "COMMIT" >"$dir/a.out" 2>&1 &
apid=$!
held=
for _ in $(seq 1 120); do
	held=$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
	[ "$held" = 1 ] && break
	sleep 0.25
done
ls_expect "A's update spilled and waits between its steps" "1|t" \
	"$held|$(q -c "SELECT writes_spilled > $spilled FROM leanstore_stats()")"
q -c "SELECT pg_cancel_backend($gpid)" >/dev/null
sleep 1
ls_expect "FOR KEY SHARE of the row A is updating returns it" "1|1" \
	"$(q -c "SET lock_timeout = '10s'" -c "SELECT id, n FROM t WHERE id = 1 FOR KEY SHARE")"
ls_expect "a child row referencing it passes the foreign key check" "" \
	"$(q -c "SET lock_timeout = '10s'" -c "INSERT INTO child VALUES (1)")"
# L's session ends: its advisory lock goes, A goes on
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(20)'" >/dev/null
wait "$apid"
ls_expect "A committed" "" "$(grep -v '^SET$' "$dir/a.out")"
ls_expect "afterwards: row 1 has A's change, the child row is there" "2|1" \
	"$(q -c "SELECT (SELECT n FROM t WHERE id = 1), (SELECT count(*) FROM child)" | tr -d ' ')"

wait_for() {	# wait_for FILE TEXT: until TEXT shows up in FILE (60 s)
	for _ in $(seq 1 240); do
		grep -q "$2" "$1" && return 0
		sleep 0.25
	done
	return 1
}
gone() {	# the psql lines that wait until a row for $1 is in go
	echo "DO \$\$ BEGIN WHILE NOT EXISTS (SELECT FROM go WHERE who = '$1') LOOP PERFORM pg_sleep(0.05); END LOOP; END \$\$"
}
# fill_update N TABLE ID: G<N> fills the tier and stays open; A<N> updates
# TABLE's row ID (the update is not stored in the hot tier) and stays open
fill_update() {
	local n=$1 tbl=$2 id=$3 spilled
	q -c "BEGIN" -c "CALL churn()" -c "SELECT 'G$n full'" -c "$(gone "g$n")" -c "ROLLBACK" \
		>"$dir/g$n.out" 2>&1 &
	gpids[$n]=$!
	wait_for "$dir/g$n.out" "G$n full"
	spilled=$(q -c "SELECT writes_spilled FROM leanstore_stats()")
	q -c "BEGIN" -c "UPDATE $tbl SET n = n + 1 WHERE id = $id" -c "SELECT 'A$n updated'" \
		-c "$(gone "a$n")" -c "COMMIT" >"$dir/a$n.out" 2>&1 &
	apids[$n]=$!
	wait_for "$dir/a$n.out" "A$n updated"
	ls_expect "part $n: A$n's update did not go into the full tier" "t" \
		"$(q -c "SELECT writes_spilled > $spilled FROM leanstore_stats()")"
}
# follow_lock N TABLE ID CHILD OLD: B<N>'s FOR KEY SHARE NOWAIT of the row
# returns its old version (n = OLD) at once, and so does a foreign key
# check of CHILD; after A<N> commits, B<N>'s lock holds on the new version
# (FOR UPDATE must not get it, FOR NO KEY UPDATE may); then everybody ends
follow_lock() {
	local n=$1 tbl=$2 id=$3 child=$4 old=$5 bpid
	probe() {	# probe MODE: lock the row in MODE with NOWAIT
		q -c "SELECT id FROM $tbl WHERE id = $id FOR $1 NOWAIT" |
			sed 's/.*could not obtain lock.*/blocked/'
	}
	q -c "BEGIN" -c "SELECT id, n FROM $tbl WHERE id = $id FOR KEY SHARE NOWAIT" \
		-c "SELECT 'B$n locked'" -c "$(gone "b$n")" -c "COMMIT" >"$dir/b$n.out" 2>&1 &
	bpid=$!
	wait_for "$dir/b$n.out" "B$n locked\|ERROR"
	ls_expect "part $n: FOR KEY SHARE NOWAIT of the row A$n is updating returns it" \
		"$id|$old B$n locked" "$(tr '\n' ' ' <"$dir/b$n.out" | sed 's/ $//')"
	ls_expect "part $n: a child row referencing it passes the foreign key check at once" "" \
		"$(q -c "SET lock_timeout = '2s'" -c "INSERT INTO $child VALUES ($id)")"
	q -c "INSERT INTO go VALUES ('a$n')" >/dev/null
	wait "${apids[$n]}"
	ls_expect "part $n: A$n committed" "A$n updated" "$(cat "$dir/a$n.out")"
	ls_expect "part $n: B$n's lock holds on A$n's new version" "blocked|$id" \
		"$(probe UPDATE)|$(probe "NO KEY UPDATE")"
	q -c "INSERT INTO go VALUES ('b$n')" >/dev/null
	wait "$bpid"
	ls_expect "part $n: once B$n ends, FOR UPDATE gets the row" "$id" "$(probe UPDATE)"
	q -c "INSERT INTO go VALUES ('g$n')" >/dev/null
	wait "${gpids[$n]}"
}
declare -a gpids apids

# Part 2: the same while the tier stays full: A2's update of row 2 (hot)
# spills; B2's FOR KEY SHARE then locks the old (hot) version and follows
# the update to its new version, whose image the full tier cannot take:
# the lock goes into that image.  Until session 29 the follow migrated it
# and B2 failed with "leanstore hot tier is full" (so did the foreign key
# check).
fill_update 2 t 2
follow_lock 2 t 2 child 1
ls_expect "part 2: afterwards: row 2 has A2's change, both child rows are there" "2|2" \
	"$(q -c "SELECT (SELECT n FROM t WHERE id = 2), (SELECT count(*) FROM child)" | tr -d ' ')"

# Part 3: a no-key update made in the cold tier (c's rows are cold, the
# tier is full) while A3 runs: B3's FOR KEY SHARE of that row goes through
# it at once, as on heap, joining the update in the image (a multixact),
# and locks A3's new version too; so does the foreign key check.  Until
# session 29 both waited for A3.
ls_expect "part 3: c's rows are cold" "0|10" \
	"$(q -c "SELECT hot_rows, cold_rows FROM leanstore_table_stats('c')")"
fill_update 3 c 5
ls_expect "part 3: A3's update was made in the cold tier" "0|11" \
	"$(q -c "SELECT hot_rows, cold_rows FROM leanstore_table_stats('c')")"
follow_lock 3 c 5 child2 0
ls_expect "part 3: afterwards: row 5 has A3's change, the child row is there" "1|1" \
	"$(q -c "SELECT (SELECT n FROM c WHERE id = 5), (SELECT count(*) FROM child2)" | tr -d ' ')"

# Part 4: a cursor's FOR KEY SHARE (its snapshot older) meets a committed
# no-key update of a hot row that spilled while the tier stays full: the
# row moved, and the lock follows to the new version in its image, which
# EvalPlanQual returns, as on heap.  Until session 29 the follow migrated
# that version and failed with "leanstore hot tier is full" (found by a
# helper's concurrent stress: FOR KEY SHARE and foreign key checks).
q -c "BEGIN" -c "CALL churn()" -c "SELECT 'G4 full'" -c "$(gone g4)" -c "ROLLBACK" \
	>"$dir/g4.out" 2>&1 &
g4pid=$!
wait_for "$dir/g4.out" "G4 full"
q -c "BEGIN" -c "DECLARE k CURSOR FOR SELECT id, n FROM t WHERE id = 3 FOR KEY SHARE" \
	-c "SELECT 'B4 declared'" -c "$(gone b4)" -c "FETCH ALL k" -c "COMMIT" >"$dir/b4.out" 2>&1 &
b4pid=$!
wait_for "$dir/b4.out" "B4 declared"
spilled=$(q -c "SELECT writes_spilled FROM leanstore_stats()")
q -c "UPDATE t SET n = n + 1 WHERE id = 3" >/dev/null
ls_expect "part 4: the update spilled (its new version is a cold image)" "t" \
	"$(q -c "SELECT writes_spilled > $spilled FROM leanstore_stats()")"
q -c "INSERT INTO go VALUES ('b4')" >/dev/null
wait "$b4pid"
ls_expect "part 4: the cursor's FOR KEY SHARE returns the new version" "B4 declared 3|2" \
	"$(tr '\n' ' ' <"$dir/b4.out" | sed 's/ $//')"
q -c "INSERT INTO go VALUES ('g4')" >/dev/null
wait "$g4pid"
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(180)'" >/dev/null
q -c "VACUUM c" >/dev/null
ls_expect "leanstore_verify" "t|t" "$(q -c "SELECT leanstore_verify('t'), leanstore_verify('c')")"
ls_test_verdict
