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
	-c "CREATE TABLE fill (id int PRIMARY KEY, pad text) USING leanstore" \
	-c "INSERT INTO fill SELECT g, repeat('a', 200) FROM generate_series(1, 20000) g" \
	-c "CREATE PROCEDURE churn() LANGUAGE plpgsql AS \$\$
	    BEGIN
	      FOR i IN 1 .. 10 LOOP
	        UPDATE fill SET pad = repeat(chr(98 + i), 200);
	      END LOOP;
	    END \$\$" >/dev/null || exit 1

# D: an old snapshot keeps row 1's versions hot (pack cannot take them), so
# A's update below is of a hot row
q -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SELECT count(*) FROM t" -c "SELECT pg_sleep(90)" \
	-c "COMMIT" >/dev/null &
sleep 1
q -c "UPDATE t SET n = 1 WHERE id = 1" >/dev/null
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
ls_expect "leanstore_verify" "t" "$(q -c "SELECT leanstore_verify('t')")"
ls_test_verdict
