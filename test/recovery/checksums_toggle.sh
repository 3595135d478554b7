#!/usr/bin/env bash
# test/recovery/checksums_toggle.sh: pg_checksums --enable and --disable on
# a stopped cluster with leanstore tables (hot rows, cold pages in the
# default tablespace and in another one, updates, deletes): each table
# keeps heap's answers (sequential and index scans against a heap twin) and
# passes leanstore_verify after each switch, after writes, a crash and a
# clean restart.  --disable only rewrites the control file: the pages keep
# the checksums they were written with, and PostgreSQL then ignores them.
# leanstore checked them against 0 and declared every table with cold pages
# lost after --disable ("the meta page ... cannot be read: page checksum
# mismatch"); this test found that.  Run by test/run (suite clean) as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin checksums_toggle
printf "shared_preload_libraries = 'leanstore'\nleanstore.hot_memory = '32MB'\nleanstore.buffer_pool = '4MB'\nautovacuum = off\nallow_in_place_tablespaces = on\n" | ls_test_conf
ls_cluster_start "$dir" "$dir/test.conf" || exit 1

q() { ls_test_psql postgres "$@"; }

q -c "CREATE EXTENSION leanstore" -c "CREATE TABLESPACE sp LOCATION ''" >/dev/null ||
	{ echo "$LS_TEST: setup failed"; exit 1; }
# big: mostly cold (4x the hot tier); small: hot; spc: in another tablespace
for spec in "big 200000 pg_default" "small 2000 pg_default" "spc 60000 sp"; do
	set -- $spec
	q -c "CREATE TABLE $1 (id int PRIMARY KEY, v text) USING leanstore TABLESPACE $3" \
		-c "CREATE TABLE $1_h (id int PRIMARY KEY, v text) USING heap" \
		-c "INSERT INTO $1 SELECT g, md5(g::text) || repeat('q', 120) FROM generate_series(1, $2) g" \
		-c "INSERT INTO $1_h SELECT * FROM $1" \
		-c "UPDATE $1 SET v = 'u' WHERE id % 9 = 0" -c "UPDATE $1_h SET v = 'u' WHERE id % 9 = 0" \
		-c "DELETE FROM $1 WHERE id % 5 = 0" -c "DELETE FROM $1_h WHERE id % 5 = 0" >/dev/null ||
		{ echo "$LS_TEST: loading $1 failed"; exit 1; }
done
ls_expect "big has cold rows" t "$(q -c "SELECT cold_rows > 100000 FROM leanstore_table_stats('big')")"

check() {	# WHEN: every table equals its heap twin, by both scans; verify
	local t want
	for t in big small spc; do
		want=$(q -c "SELECT count(*), sum(hashtext(id::text || v)) FROM ${t}_h")
		ls_expect "$1: $t, sequential scan" "$want" "$(q -c "SELECT count(*), sum(hashtext(id::text || v)) FROM $t")"
		ls_expect "$1: $t, index scan" "$want" \
			"$(q -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" \
				-c "SELECT count(*), sum(hashtext(id::text || v)) FROM $t WHERE id > -1000000")"
		ls_expect "$1: $t, leanstore_verify" t "$(q -c "SELECT leanstore_verify('$t')")"
	done
}
checksums() {	# ACTION: pg_checksums on the stopped cluster
	ls_pgctl -m fast stop || { echo "$LS_TEST: stop failed"; fail=1; }
	ls_as_pg "$LS_PG_BIN/pg_checksums" "--$1" -D "$dir/data" >"$dir/checksums.log" 2>&1 ||
		{ echo "$LS_TEST: pg_checksums --$1 failed"; cat "$dir/checksums.log"; fail=1; }
	ls_restart
}
write() {	# more changes to the cold table and its twin
	q -c "UPDATE big SET v = '$1' WHERE id % 17 = 0" -c "UPDATE big_h SET v = '$1' WHERE id % 17 = 0" \
		-c "INSERT INTO small VALUES (-$2, '$1')" -c "INSERT INTO small_h VALUES (-$2, '$1')" >/dev/null || fail=1
}

check "no checksums"
checksums enable
ls_expect "checksums on" on "$(q -c "SHOW data_checksums")"
check "after --enable"
write enabled 1
ls_crash
ls_restart
check "checksums on, after a crash"
ls_checksums_check
ls_restart
checksums disable
ls_expect "checksums off" off "$(q -c "SHOW data_checksums")"
check "after --disable"
write disabled 2
ls_crash
ls_restart
check "checksums off, after a crash"
ls_pgctl -m fast stop
ls_restart
check "checksums off, after a clean restart"
checksums enable
check "enabled again"
ls_checksums_check
ls_test_verdict
