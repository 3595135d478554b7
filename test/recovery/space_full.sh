#!/usr/bin/env bash
# test/recovery/space_full.sh: a tablespace on a small tmpfs fills up with a
# leanstore table's cold pages. Every batch of inserts goes into the
# leanstore table f (in the small tablespace) and its heap twin h (in the
# default one) in one transaction, so h holds exactly what was committed.
#  - Once the disk is full, an insert fails at once with "could not extend
#    the cold tree of a leanstore table: No space left on device" (SQLSTATE
#    53100), as heap fails the statement that extends its file; it does not
#    hang, and the leanstore worker does not spin meanwhile. (Before: the
#    tree's new pages got their disk space only when written back, so the
#    pool filled with pages it could not write, reads failed with "no
#    space", pack waited two seconds per row and an insert waited on it for
#    many minutes.)
#  - Reads, index lookups and leanstore_verify keep working while it is full.
#  - A clean shutdown that cannot write the hot rows into the full
#    tablespace leaves the state to recovery (WARNING), and the next start
#    has every committed row. (Before: the start took the table's last
#    checkpoint image and nothing was replayed: committed rows were gone.)
#  - kill -9 while full loses nothing.
#  - Once there is room again (the tmpfs grows), inserts work and a clean
#    shutdown writes every table.
# Run by test/run as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin space_full
fs=$(mktemp -d /tmp/leanstore-spacefs.XXXXXX) || exit 1
cleanup_fs() {
	ls_cleanup
	umount "$fs" 2>/dev/null
	rmdir "$fs" 2>/dev/null
}
trap cleanup_fs EXIT
if ! mount -t tmpfs -o size=40m tmpfs "$fs"; then
	echo "space_full: cannot mount a tmpfs here (not root in a full container?): FAILED"
	exit 1
fi
mkdir -p "$fs/ts"
chown -R "$LS_PG_USER": "$fs"
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '32MB'
leanstore.buffer_pool = '16MB'
leanstore.checkpoint_timeout = 5
synchronous_commit = on
autovacuum = off
restart_after_crash = on
EOF
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql postgres "$@"; }
# batch I: rows I*20000+1 .. (I+1)*20000 into f and h, one transaction
# (timeout 120: exit status 124 when it hangs)
batch() {
	(cd "$dir" && timeout 120 runuser -u "$LS_PG_USER" -- "$LS_PG_BIN/psql" -X -q -At \
		-v ON_ERROR_STOP=1 -d postgres 2>&1 \
		-c "WITH ins AS (INSERT INTO f SELECT g, repeat('x', 300)
		     FROM generate_series($1 * 20000 + 1, ($1 + 1) * 20000) g RETURNING id)
		    INSERT INTO h SELECT id FROM ins")
}
same() {
	ls_expect "$1: f holds what h holds" "$(q -c "SELECT count(*), sum(id) FROM h")" \
		"$(q -c "SELECT count(*), sum(id) FROM f")"
}
worker_ticks() {
	local pid
	pid=$(pgrep -f "postgres: leanstore worker" | head -n1)
	awk '{print $14 + $15}' "/proc/$pid/stat"
}
q -c "CREATE EXTENSION leanstore" -c "CREATE TABLESPACE small LOCATION '$fs/ts'" \
	-c "CREATE TABLE f (id int PRIMARY KEY, pad text) USING leanstore TABLESPACE small" \
	-c "CREATE TABLE h (id int PRIMARY KEY)" >/dev/null

# fill it: about 7MB of rows a batch, 40MB of room
full=""
for i in $(seq 0 14); do
	start=$(date +%s)
	out=$(batch "$i")
	rc=$?
	if [ $rc = 124 ]; then
		ls_expect "batch $i ends within 120 s" "ended" "hung"
		break
	fi
	if [ -n "$out" ]; then
		full=$out
		ls_expect "the failing batch fails at once" yes "$([ $(($(date +%s) - start)) -lt 30 ] && echo yes || echo no)"
		break
	fi
done
case "$full" in
*"ERROR:  could not extend the cold tree of a leanstore table: No space left on device"*"HINT:  Check free disk space."*)
	echo "space_full: an insert into the full tablespace fails with the disk-full error: ok" ;;
*) ls_expect "an insert into the full tablespace fails with the disk-full error" "ERROR: could not extend ..." "$full" ;;
esac
committed=$(q -c "SELECT count(*) FROM h")
ls_expect "some batches committed before" yes "$([ "$committed" -ge 60000 ] && echo yes || echo no)"
ls_expect "the error's SQLSTATE" "53100" \
	"$(q -c "\\set VERBOSITY verbose" -c "INSERT INTO f SELECT g, repeat('y', 300) FROM generate_series(1000001, 1020000) g" 2>&1 |
		grep -o "ERROR:  [0-9A-Z]*" | head -n1 | cut -c 9-)"
same "while full"
ls_expect "an index lookup while full" "1|300" "$(q -c "SELECT id, length(pad) FROM f WHERE id = 1")"
ls_expect "leanstore_verify while full" "t" "$(q -c "SELECT leanstore_verify('f')")"
q -c "SELECT leanstore_checkpoint()" >/dev/null
t0=$(worker_ticks)
sleep 5
t1=$(worker_ticks)
# the worker's CPU over 5 s (in clock ticks, 100 a second): it must not spin
ls_expect "the worker idles while the disk is full" yes "$([ $((t1 - t0)) -lt 150 ] && echo yes || echo no)"

# stop_start WHAT WARNINGS: a fast shutdown (it must end), which logs the
# warning that it left the tables to recovery WARNINGS times, then a start
stop_start() {
	local mark
	mark=$(wc -l <"$dir/server.log")
	ls_pgctl -m fast stop || ls_expect "the fast shutdown ends" "stopped" "still running"
	ls_expect "$1" "$2" "$(tail -n +"$((mark + 1))" "$dir/server.log" |
		grep -c "WARNING:  leanstore tables were not all written at shutdown")"
	ls_restart
}

echo "-- a clean shutdown that cannot write the hot rows"
stop_start "the shutdown says it left the tables to recovery" 1
same "after the unclean shutdown"
ls_expect "leanstore_verify after it" "t" "$(q -c "SELECT leanstore_verify('f')")"

echo "-- kill -9 while full"
batch 100 >/dev/null 2>&1
ls_crash
ls_restart
same "after kill -9"

echo "-- room again (the file system grows)"
mount -o remount,size=256m "$fs" || ls_expect "tmpfs grows" "ok" "no remount"
q -c "SELECT leanstore_checkpoint()" >/dev/null
ls_expect "inserts work again" "" "$(q -c "WITH ins AS (INSERT INTO f SELECT g, repeat('z', 300)
	FROM generate_series(2000001, 2010000) g RETURNING id) INSERT INTO h SELECT id FROM ins")"
same "with room"
stop_start "this shutdown wrote every table" 0
same "after the clean restart"
ls_expect "leanstore_verify at the end" "t" "$(q -c "SELECT leanstore_verify('f')")"
if [ "$fail" != 0 ]; then
	tail -n 40 "$dir/server.log"
	echo "space_full: FAILED"
	exit 1
fi
ls_cluster_stop "$dir"
echo "space_full: ok"
