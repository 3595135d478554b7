#!/usr/bin/env bash
# test/recovery/log_full.sh: leanstore's log on a small file system that
# fills up. The log directory is on a 64MB tmpfs of which a filler file
# takes 30MB: two 16MB segments fit, the third does not. A transaction
# that needs the third segment makes the log writer PANIC (never a hang,
# never a commit on a log that cannot hold it); PostgreSQL restarts; once
# the filler is removed the server comes back with every committed row and
# nothing of the transaction that filled the log. Run by test/run as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_require_root
ls_scratch_dir logfull || exit 1
dir=$LS_SCRATCH
fs=$dir/logfs
mkdir -p "$fs"
cleanup_fs() {
	umount "$fs" 2>/dev/null
	ls_cleanup
}
trap cleanup_fs EXIT
if ! mount -t tmpfs -o size=64m tmpfs "$fs"; then
	echo "log_full: cannot mount a tmpfs here (not root in a full container?): FAILED"
	exit 1
fi
mkdir -p "$fs/log"
dd if=/dev/zero of="$fs/filler" bs=1M count=30 status=none
chown -R "$LS_PG_USER": "$fs"
cat >"$dir/test.conf" <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '256MB'
leanstore.bulk_load_rows = 0
leanstore.log_directory = '$fs/log'
synchronous_commit = on
autovacuum = off
restart_after_crash = on
EOF
chown -R "$LS_PG_USER": "$dir"
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { (cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@" 2>&1); }
fail=0
expect() {
	if [ "$2" != "$3" ]; then
		printf 'log_full: %s: want [%s] got [%s]\n' "$1" "$2" "$3"
		fail=1
	else
		echo "log_full: $1: ok"
	fi
}
q -c "CREATE EXTENSION leanstore" -c "CREATE TABLE f (id int PRIMARY KEY, pad text) USING leanstore" >/dev/null
q -c "INSERT INTO f SELECT g, repeat('a', 900) FROM generate_series(1, 5000) g" >/dev/null
expect "committed before the log filled" "5000" "$(q -c "SELECT count(*) FROM f")"
# about 45MB of after-images in one transaction: more than the log can hold
got=$(q -c "INSERT INTO f SELECT g, repeat('b', 900) FROM generate_series(100001, 150000) g")
case "$got" in
*"terminating connection"*|*"server closed the connection"*|*"connection to server"*) ;;
*) expect "the filling transaction fails" "a lost connection" "$got" ;;
esac
for _ in $(seq 1 100); do
	grep -q "PANIC:.*could not create leanstore's next log segment" "$dir/server.log" && break
	sleep 0.1
done
expect "PANIC for the full log" yes \
	"$(grep -q "PANIC:.*could not create leanstore's next log segment" "$dir/server.log" && echo yes || echo no)"
rm -f "$fs/filler"
up=no
for _ in $(seq 1 600); do
	if q -c "SELECT count(*) FROM f" >/dev/null 2>&1; then
		up=yes
		break
	fi
	sleep 0.1
done
expect "the server comes back once there is room" yes "$up"
expect "committed rows kept, the failed transaction absent" "5000|0" \
	"$(q -c "SELECT count(*), count(*) FILTER (WHERE id > 100000) FROM f")"
expect "writes work again" "5001" "$(q -c "INSERT INTO f VALUES (0, 'again')" -c "SELECT count(*) FROM f")"
expect "leanstore_verify" "t" "$(q -c "SELECT leanstore_verify('f')")"
if [ "$fail" != 0 ]; then
	tail -n 30 "$dir/server.log"
	echo "log_full: FAILED"
	exit 1
fi
ls_cluster_stop "$dir"
echo "log_full: ok"
