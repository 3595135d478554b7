#!/usr/bin/env bash
# test/recovery/restart_clean.sh: leanstore tables survive clean restarts.
# On a cluster with data checksums: tables of many shapes (updates, deletes,
# aborted inserts, rows wider than a tree value, TOAST, NULLs, unlogged,
# partitions, rewrites, TRUNCATE, visibility map bits) are compared with
# heap copies after a clean restart, changed, and compared again after a
# second one; pg_checksums --check runs on the stopped cluster after each
# clean shutdown and pg_basebackup (which verifies checksums) on the running
# one; finally an immediate shutdown (a crash) after more changes, and the
# tables must still equal their heap copies (leanstore's log, undo journals);
# last, the base backup is started: its leanstore tables are refused; and a
# standby made from a base backup refuses them while in recovery. The combined psql output is compared
# with expected/restart_clean.out. Run by test/run as root; $1: output file.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

# tear_saved_blocks JOURNAL FILE: a torn write of every block the undo
# journal saved (the second 4 KiB of the block zeroed in FILE): recovery
# must restore them all. Journal: 32-byte header, then entries of 24 bytes
# (magic, block, image, flags, crc; u32 u32 u64 u32 u32) each followed by
# the 8 KiB page unless flags has bit 1 (src/buffer/undo.c).
tear_saved_blocks() {
	local j=$1 f=$2 size off block flags n=0
	[ -f "$j" ] || return 1
	size=$(stat -c %s "$j")
	off=32
	while [ $((off + 24)) -le "$size" ]; do
		block=$(od -An -t u4 -j $((off + 4)) -N 4 "$j" | tr -d ' ')
		flags=$(od -An -t u4 -j $((off + 16)) -N 4 "$j" | tr -d ' ')
		off=$((off + 24))
		if [ $((flags & 1)) = 0 ]; then
			off=$((off + 8192))
			[ "$off" -le "$size" ] || break
			dd if=/dev/zero of="$f" bs=4096 seek=$((block * 2 + 1)) count=1 conv=notrunc status=none
			n=$((n + 1))
		fi
	done
	[ "$n" -gt 0 ]
}
. "$HERE/../lib.sh"
ls_require_root
trap ls_cleanup EXIT
out=${1:-$(mktemp)}
ls_scratch_dir restart-clean || exit 1
dir=$LS_SCRATCH
cp "$HERE"/restart_clean_[12345].sql "$dir/"
printf "shared_preload_libraries = 'leanstore'\nleanstore.hot_memory = '128MB'\nleanstore.buffer_pool = '4MB'\nautovacuum = off\n" >"$dir/test.conf"
chown -R "$LS_PG_USER": "$dir"
LS_INITDB_ARGS=-k ls_cluster_start "$dir" "$dir/test.conf" || exit 1
psql_run() {
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -a -q -d postgres -v VERBOSITY=terse -f "$1" 2>&1)
}
stop_check_start() {
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || echo "stop failed"
	grep -q "clean" "$dir/data/pg_leanstore/state" || echo "state not clean: $(cat "$dir/data/pg_leanstore/state")"
	ls_as_pg "$LS_PG_BIN/pg_checksums" --check -D "$dir/data" >"$dir/checksums.log" 2>&1 ||
		{ echo "pg_checksums failed:"; cat "$dir/checksums.log"; }
	echo "-- (clean restart; pg_checksums --check: $(grep -c 'Bad checksums:  0' "$dir/checksums.log") ok)"
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -w -t 120 start -l "$dir/server.log" >/dev/null 2>&1 || echo "start failed"
}
{
	psql_run restart_clean_1.sql
	stop_check_start
	# the first uses after the start load the table; concurrent ones wait
	# for that load and see every row, never part of them
	for i in 1 2 3 4; do
		(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -A -t -q -d postgres \
			-c "SELECT count(*) FROM t1" >"$dir/concurrent.$i" 2>&1) &
	done
	wait
	echo "-- (concurrent first reads: $(cat "$dir"/concurrent.* | sort | uniq -c | tr -s ' '))"
	psql_run restart_clean_2.sql
	rm -rf "$dir/backup"
	if ls_as_pg "$LS_PG_BIN/pg_basebackup" -D "$dir/backup" -c fast >"$dir/basebackup.log" 2>&1; then
		echo "-- (pg_basebackup: ok)"
	else
		echo "pg_basebackup failed:"; cat "$dir/basebackup.log"
	fi
	stop_check_start
	psql_run restart_clean_3.sql
	echo "-- (immediate shutdown: a crash; torn writes of t1's saved blocks; then start)"
	t1_path=$(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -A -t -q -d postgres \
		-c "SELECT pg_relation_filepath('t1')")
	t1_journal=$(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -A -t -q -d postgres \
		-c "SELECT format('pg_leanstore/undo/%s_%s_%s', CASE WHEN reltablespace = 0 THEN 1663 ELSE reltablespace END,
		                  (SELECT oid FROM pg_database WHERE datname = current_database()), relfilenode)
		    FROM pg_class WHERE relname = 't1'")
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || echo "immediate stop failed"
	tear_saved_blocks "$dir/data/$t1_journal" "$dir/data/$t1_path" || echo "no saved block of t1 to tear"
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -w -t 120 start -l "$dir/server.log" >/dev/null 2>&1 || echo "start failed"
	psql_run restart_clean_4.sql
	rm -rf "$dir/standby"
	ls_as_pg "$LS_PG_BIN/pg_basebackup" -D "$dir/standby" -c fast -R >"$dir/standby-backup.log" 2>&1 ||
		{ echo "pg_basebackup for a standby failed:"; cat "$dir/standby-backup.log"; }
	echo "-- (the server stopped; the base backup started in its place)"
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || echo "stop failed"
	chmod 700 "$dir/backup"
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/backup" -w -t 120 start -l "$dir/backup.log" >/dev/null 2>&1 ||
		{ echo "backup start failed"; tail -n 20 "$dir/backup.log"; }
	psql_run restart_clean_5.sql
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/backup" -m fast -w stop >/dev/null 2>&1 || echo "backup stop failed"
	grep -q "restored from a base backup: its leanstore tables are lost" "$dir/backup.log" ||
		echo "no warning about the base backup in its server log"
	echo "-- (a standby made from a base backup: in recovery, leanstore tables are refused)"
	chmod 700 "$dir/standby"
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/standby" -w -t 120 start -l "$dir/standby.log" >/dev/null 2>&1 ||
		{ echo "standby start failed"; tail -n 20 "$dir/standby.log"; }
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -d postgres -c "SELECT pg_is_in_recovery()" \
		-c "SELECT count(*) FROM h_t1" -c "SELECT count(*) FROM t1" 2>&1)
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/standby" -m fast -w stop >/dev/null 2>&1 || echo "standby stop failed"
} >"$out"
ls_cluster_stop "$dir"
if diff -u "$HERE/expected/restart_clean.out" "$out"; then
	echo "restart_clean: ok"
else
	echo "restart_clean: FAILED (diff above)"
	exit 1
fi
