#!/usr/bin/env bash
# test/recovery/template_copy.sh: CREATE DATABASE from a template that holds
# leanstore tables (issue 12) fails before it does anything, with either
# strategy, whether the template's tables were opened in this server run
# (their rows are partly in the hot tier and the buffer pool) or not (only
# their files: a copied tree file names the template's table, so the copy
# would be refused as lost; this test found that).  Checked while open,
# after a clean restart (nothing opened), after a crash (recovery opened
# them); the template stays intact; once its leanstore tables are dropped
# it can be copied.  ALTER DATABASE ... SET TABLESPACE of the template is
# refused the same way in each of those states (before, a moved table read
# its cold tree as corrupt and was lost after a restart: this test found
# it), and works once the leanstore tables left are in other tablespaces;
# those keep their rows.  Run by test/run (suite clean) as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin template_copy
printf "shared_preload_libraries = 'leanstore'\nleanstore.hot_memory = '64MB'\nleanstore.buffer_pool = '4MB'\nautovacuum = off\nallow_in_place_tablespaces = on\n" | ls_test_conf
LS_INITDB_ARGS=-k ls_cluster_start "$dir" "$dir/test.conf" || exit 1

q() { ls_test_psql "$@"; }	# DB SQL...: one value per line

# the template: rows hot and cold (a bulk load), updated, deleted, a moved
# key, an aborted insert, wide rows; heap twins of each table
q postgres -c "CREATE DATABASE tpl" -c "CREATE TABLESPACE sp LOCATION ''" -c "CREATE TABLESPACE sp2 LOCATION ''" >/dev/null
q tpl -c "CREATE EXTENSION leanstore" \
	-c "CREATE TABLE t (id int PRIMARY KEY, v text, w int) USING leanstore" \
	-c "CREATE TABLE h (id int PRIMARY KEY, v text, w int) USING heap" \
	-c "INSERT INTO t SELECT g, repeat(md5(g::text), 1 + g % 40), g % 7 FROM generate_series(1, 30000) g" \
	-c "INSERT INTO h SELECT * FROM t" \
	-c "UPDATE t SET w = w + 100 WHERE id % 10 = 0" -c "UPDATE h SET w = w + 100 WHERE id % 10 = 0" \
	-c "DELETE FROM t WHERE id % 13 = 0" -c "DELETE FROM h WHERE id % 13 = 0" \
	-c "UPDATE t SET id = id + 100000 WHERE id % 17 = 0" -c "UPDATE h SET id = id + 100000 WHERE id % 17 = 0" \
	-c "BEGIN" -c "INSERT INTO t SELECT g, 'aborted', 0 FROM generate_series(200001, 220000) g" -c "ROLLBACK" \
	-c "CREATE TABLE s (k text PRIMARY KEY, n bigint) USING leanstore" \
	-c "INSERT INTO s SELECT 'key' || g, g FROM generate_series(1, 500) g" >/dev/null ||
	{ echo "$LS_TEST: setup failed"; exit 1; }
restart() {	# MODE: fast (clean) or immediate (a crash)
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -m "$1" -w stop >/dev/null 2>&1 || echo "$1 stop failed"
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -w -t 120 start -l "$dir/server.log" >/dev/null 2>&1 || echo "start failed"
}
refused() {	# WHEN: both strategies refused, nothing created
	local s
	for s in FILE_COPY WAL_LOG; do
		ls_expect "$1: $s refused" \
			'ERROR:  cannot copy database "tpl" because it contains leanstore tables' \
			"$(q postgres -c "CREATE DATABASE cp TEMPLATE tpl STRATEGY $s" | head -1)"
	done
	ls_expect "$1: no database created" 0 "$(q postgres -c "SELECT count(*) FROM pg_database WHERE datname = 'cp'")"
	ls_expect "$1: ALTER DATABASE ... SET TABLESPACE refused" \
		'ERROR:  cannot move database "tpl" to another tablespace because leanstore tables are in its default tablespace' \
		"$(q postgres -c "ALTER DATABASE tpl SET TABLESPACE sp" | head -1)"
	ls_expect "$1: the database stays where it was" pg_default \
		"$(q postgres -c "SELECT spcname FROM pg_database d JOIN pg_tablespace s ON s.oid = dattablespace WHERE datname = 'tpl'")"
}
same() {	# DB: "equal" when t and h hold the same rows
	q "$1" -c "SELECT CASE WHEN (SELECT count(*) FROM (TABLE t EXCEPT ALL TABLE h) a) = 0
	                        AND (SELECT count(*) FROM (TABLE h EXCEPT ALL TABLE t) b) = 0
	                       THEN 'equal' ELSE 'differ' END"
}
want=$(q tpl -c "SELECT count(*), sum(w) FROM h")

refused "open (rows in the hot tier and the buffer pool)"
ls_expect "open: the template's t is intact" equal "$(same tpl)"

restart fast
refused "after a clean restart (tables not opened)"
ls_expect "tables not opened yet: the template's t is intact" equal "$(same tpl)"
restart immediate
refused "after a crash"
ls_expect "after a crash: t" equal "$(same tpl)"
ls_expect "after a crash: index scan" "$want" \
	"$(q tpl -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" -c "SELECT count(*), sum(w) FROM t WHERE id > 0")"
ls_expect "leanstore_verify" "t|t" "$(q tpl -c "SELECT leanstore_verify('t'), leanstore_verify('s')" | tr '\n' '|' | sed 's/|$//')"

# without leanstore tables (dropped; their files go at the checkpoint) the
# template copies, both ways, and the copies take new leanstore tables
q tpl -c "DROP TABLE t, s" -c "CHECKPOINT" >/dev/null || fail=1
restart fast
for st in file_copy wal_log; do
	q postgres -c "CREATE DATABASE cp_$st TEMPLATE tpl STRATEGY $st" >/dev/null || fail=1
	ls_expect "$st copy of the template without leanstore tables" "$want" "$(q "cp_$st" -c "SELECT count(*), sum(w) FROM h")"
	ls_expect "$st copy takes leanstore tables" 3 \
		"$(q "cp_$st" -c "CREATE TABLE n (i int) USING leanstore" -c "INSERT INTO n VALUES (1), (2), (3)" -c "SELECT count(*) FROM n")"
done

# leanstore tables in another tablespace do not move with the database: the
# move is allowed, and they keep their rows, open and after restarts
q tpl -c "CREATE TABLE o (id int PRIMARY KEY, v text) USING leanstore TABLESPACE sp2" \
	-c "INSERT INTO o SELECT g, md5(g::text) FROM generate_series(1, 20000) g" \
	-c "DELETE FROM o WHERE id % 11 = 0" >/dev/null || { echo "$LS_TEST: o not made"; fail=1; }
owant=$(q tpl -c "SELECT count(*), sum(id) FROM o")
ls_expect "o's rows" "18182|181821819" "$owant"
for to in sp pg_default; do
	q postgres -c "ALTER DATABASE tpl SET TABLESPACE $to" >/dev/null || fail=1
	ls_expect "moved to $to with a leanstore table in sp2: its rows" "$owant" "$(q tpl -c "SELECT count(*), sum(id) FROM o")"
	ls_expect "moved to $to: the heap table" "$want" "$(q tpl -c "SELECT count(*), sum(w) FROM h")"
done
restart fast
q postgres -c "ALTER DATABASE tpl SET TABLESPACE sp" >/dev/null || fail=1
restart immediate
ls_expect "after the moves, restarts and a crash: o" "$owant" \
	"$(q tpl -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" -c "SELECT count(*), sum(id) FROM o WHERE id > 0")"
ls_expect "after the moves: leanstore_verify" t "$(q tpl -c "SELECT leanstore_verify('o')")"

ls_checksums_check
ls_test_verdict
