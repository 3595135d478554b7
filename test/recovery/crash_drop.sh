#!/usr/bin/env bash
# test/recovery/crash_drop.sh: the end of a storage, around crashes.
#
#  1. Undo journals (pg_leanstore/undo/<spc>_<db>_<rel>) go with their
#     storage, and only then: after DROP TABLE (in the run that changed the
#     tree, and after a restart that never opened the table), after DROP
#     DATABASE (tables opened or not), after a crash between such a drop's
#     commit and the removal (leanstore.debug_crash_point = 'drop-commit':
#     the next start removes them), after the DROP of a table declared lost
#     (its journal damaged); a live table keeps its journal throughout and
#     recovers from it.  An unlogged table whose tree was being changed at a
#     crash comes back empty (its reset file is not "restored" from the
#     journal).
#  2. Relfilenode reuse after DROP: a new table gets the dropped table's
#     relfilenode (binary-upgrade mode, postgres -b, and the
#     binary_upgrade_set_next_* functions), gets rows of its own (hot and
#     cold), then kill -9 and a normal start: the new table has exactly its
#     own rows and verifies.  Variants: the drop in the same run; a
#     checkpoint before the drop; the old table dropped after a restart
#     that never opened it and its journal put back after the DROP (as if
#     the removal had not reached the disk), the new table's tree made
#     after a checkpoint.
#  3. A bulk load (COPY) into a table dropped before a crash: the next start
#     replays past its cold images (their file is gone).
# Run by test/run (as root; the server runs as postgres).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin crash_drop
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '64MB'
leanstore.buffer_pool = '2MB'
leanstore.pack_threshold = 100
autovacuum = off
fsync = off
restart_after_crash = on
EOF
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
undo=$dir/data/pg_leanstore/undo
qd() { ls_test_psql "$@"; }
q() { qd postgres "$@"; }
pgctl() { ls_pgctl "$@"; }
start() { pgctl "$@" start || { echo "crash_drop: start failed"; tail -n 30 "$dir/server.log"; exit 1; }; }
crash() { ls_crash; }
clean_restart() { pgctl -m fast stop; start "$@"; }
# journal DB TABLE: the name of TABLE's undo journal
journal() {
	qd "$1" -c "SELECT (CASE WHEN c.reltablespace = 0 THEN d.dattablespace ELSE c.reltablespace END)
	                   || '_' || d.oid || '_' || pg_relation_filenode(c.oid)
	            FROM pg_class c, pg_database d WHERE c.oid = '$2'::regclass AND d.datname = current_database()"
}
has() { [ -e "$undo/$1" ] && echo yes || echo no; }
# cold DB TABLE FROM TO: rows FROM..TO go straight into TABLE's tree (a bulk load)
cold() { qd "$1" -c "SET leanstore.bulk_load_rows = 5" -c "INSERT INTO $2 SELECT g, g % 7 FROM generate_series($3, $4) g" >/dev/null; }
# journaled DB TABLE: TABLE (new) gets a tree, a clean image, then a change
# of the tree: its journal exists
journaled() {
	qd "$1" -c "CREATE TABLE $2 (a int, b int) USING leanstore" >/dev/null
	cold "$1" "$2" 1 3000
	qd "$1" -c "SELECT leanstore_checkpoint()" >/dev/null
	cold "$1" "$2" 3001 3100
}
digest() { qd "$1" -c "SELECT count(*), sum(a), sum(b) FROM $2"; }

q -c "CREATE EXTENSION leanstore" >/dev/null

# 1. journals
journaled postgres keep
keep_j=$(journal postgres keep)
ls_expect "a changed tree after a clean image has a journal" yes "$(has "$keep_j")"
journaled postgres t_same
j=$(journal postgres t_same)
ls_expect "t_same has a journal" yes "$(has "$j")"
q -c "DROP TABLE t_same" >/dev/null
ls_expect "DROP TABLE in the same run removes the journal" no "$(has "$j")"

journaled postgres t_unopened
j_unopened=$(journal postgres t_unopened)
q -c "CREATE DATABASE db1" >/dev/null
qd db1 -c "CREATE EXTENSION leanstore" >/dev/null
journaled db1 e_opened
journaled db1 e_unopened
db1=$(q -c "SELECT oid FROM pg_database WHERE datname = 'db1'")
q -c "CREATE DATABASE db2" >/dev/null
qd db2 -c "CREATE EXTENSION leanstore" >/dev/null
journaled db2 f1
db2=$(q -c "SELECT oid FROM pg_database WHERE datname = 'db2'")
journaled postgres t_crash
j_crash=$(journal postgres t_crash)
keep_digest=$(digest postgres keep)
clean_restart
ls_expect "journals stay across a clean restart" "yes yes" "$(has "$keep_j") $(has "$j_unopened")"
ls_expect "journals of db1 and db2" "2 1" \
	"$(ls "$undo" | grep -c "^[0-9]*_${db1}_") $(ls "$undo" | grep -c "^[0-9]*_${db2}_")"
q -c "DROP TABLE t_unopened" >/dev/null
ls_expect "DROP TABLE of a table not opened since the restart removes its journal" no "$(has "$j_unopened")"
qd db1 -c "SELECT count(*) FROM e_opened" >/dev/null
q -c "DROP DATABASE db1" >/dev/null
ls_expect "DROP DATABASE removes the journals of its tables" 0 "$(ls "$undo" | grep -c "^[0-9]*_${db1}_")"
# a crash between the drop's commit and the journal's removal
q -c "SET leanstore.debug_crash_point = 'drop-commit'" -c "DROP DATABASE db2" >/dev/null 2>&1
ls_wait_up "$dir"
q -c "SET leanstore.debug_crash_point = 'drop-commit'" -c "DROP TABLE t_crash" >/dev/null 2>&1
ls_wait_up "$dir"
ls_expect "drop-commit was reached twice" 2 "$(grep -c 'crashing at "drop-commit"' "$dir/server.log")"
ls_expect "DROP DATABASE, crash before the journals went: gone after the start" "0|0" \
	"$(ls "$undo" | grep -c "^[0-9]*_${db2}_")|$(q -c "SELECT count(*) FROM pg_database WHERE datname = 'db2'")"
ls_expect "DROP TABLE, crash before the journal went: gone after the start" "no|0" \
	"$(has "$j_crash")|$(q -c "SELECT count(*) FROM pg_class WHERE relname = 't_crash'")"
ls_expect "the live table's journal stays" yes "$(has "$keep_j")"

# a lost table: its tree was changing at a crash and its journal is damaged
journaled postgres t_lost
j_lost=$(journal postgres t_lost)
cold postgres keep 5001 5100
keep_digest=$(digest postgres keep)
# an unlogged table whose tree changes after a clean image
q -c "CREATE UNLOGGED TABLE u (a int, b int) USING leanstore" >/dev/null
cold postgres u 1 3000
q -c "SELECT leanstore_checkpoint()" >/dev/null
clean_restart
cold postgres u 3001 3100
j_u=$(journal postgres u)
ls_expect "the unlogged table has a journal" yes "$(has "$j_u")"
cold postgres t_lost 6001 6100
cold postgres keep 6001 6100
keep_digest=$(digest postgres keep)
crash
truncate -s 10 "$undo/$j_lost"
start
ls_expect "after the crash: the live table recovered from its journal" "$keep_digest|t" \
	"$(digest postgres keep)|$(q -c "SELECT leanstore_verify('keep')")"
ls_expect "after the crash: the unlogged table is empty" 0 "$(q -c "SELECT count(*) FROM u")"
got=$(q -c "SELECT count(*) FROM t_lost")
ls_expect "t_lost is lost" lost "$(case "$got" in *"was lost"*) echo lost ;; *) echo "$got" ;; esac)"
ls_expect "a lost table keeps its journal until it is dropped" yes "$(has "$j_lost")"
q -c "DROP TABLE t_lost" >/dev/null
ls_expect "DROP TABLE of a lost table removes its journal" no "$(has "$j_lost")"
ls_expect "only the live tables' journals are left" "$(printf '%s\n' "$keep_j" "$j_u" | sort | tr '\n' ' ')" \
	"$(ls "$undo" | sort | tr '\n' ' ')"

# 2. relfilenode reuse: drop old (rows a 1..3100 and more), create new with
#    old's relfilenode, give it rows 100001.., crash, start normally
reuse() {
	local variant=$1 r oid typ arr
	q -c "CREATE TABLE old (a int, b int) USING leanstore" >/dev/null
	q -c "INSERT INTO old SELECT g, -1 FROM generate_series(1, 500) g" >/dev/null
	cold postgres old 501 3000
	if [ "$variant" = restart ]; then
		q -c "SELECT leanstore_checkpoint()" >/dev/null
		cold postgres old 3001 3100
		ls_expect "$variant: old has a journal" yes "$(has "$(journal postgres old)")"
		clean_restart -o -b
	else
		clean_restart -o -b
		q -c "INSERT INTO old SELECT g, -1 FROM generate_series(3001, 3100) g" >/dev/null
	fi
	[ "$variant" = checkpoint ] && q -c "SELECT leanstore_checkpoint()" >/dev/null
	read -r r oid typ arr <<<"$(q -F ' ' -c "SELECT pg_relation_filenode(c.oid), c.oid, c.reltype, t.typarray
	                                        FROM pg_class c JOIN pg_type t ON t.oid = c.reltype WHERE c.relname = 'old'")"
	local j
	j=$(journal postgres old)
	[ "$variant" = restart ] && cp -p "$undo/$j" "$dir/stale"
	# PostgreSQL hands out a dropped relfilenode again only after a checkpoint
	# (md.c keeps the file until then; binary-upgrade mode does not): so its
	# redo never unlinks the new table's file again
	q -c "DROP TABLE old" -c "CHECKPOINT" >/dev/null
	ls_expect "$variant: old's journal is gone" no "$(has "$j")"
	# as if the removal had not reached the disk before a crash
	[ "$variant" = restart ] && cp -p "$dir/stale" "$undo/$j"
	# (newer minor releases of PostgreSQL 15 want one version per column too)
	local attv=()
	[ "$(q -c "SELECT count(*) FROM pg_proc WHERE proname = 'binary_upgrade_set_next_attribute_versions'")" = 1 ] &&
		attv=(-c "SELECT binary_upgrade_set_next_attribute_versions('{0/0,0/0}')")
	q "${attv[@]}" -c "SELECT binary_upgrade_set_next_heap_pg_class_oid($oid)" -c "SELECT binary_upgrade_set_next_pg_type_oid($typ)" \
		-c "SELECT binary_upgrade_set_next_array_pg_type_oid($arr)" -c "SELECT binary_upgrade_set_next_heap_relfilenode($r)" \
		-c "CREATE TABLE new (a int, b int) USING leanstore" >/dev/null
	ls_expect "$variant: new has old's relfilenode" "$r" "$(q -c "SELECT pg_relation_filenode('new')")"
	ls_expect "$variant: no journal of that number after the CREATE" no "$(has "$j")"
	q -c "INSERT INTO new SELECT g, 1 FROM generate_series(100001, 100200) g" >/dev/null
	if [ "$variant" = restart ]; then
		q -c "SELECT leanstore_checkpoint()" >/dev/null
	else
		q -c "ALTER SYSTEM SET leanstore.pack_eager = on" -c "SELECT pg_reload_conf()" >/dev/null
	fi
	cold postgres new 100201 101000
	q -c "INSERT INTO new SELECT g, 2 FROM generate_series(101001, 101100) g" >/dev/null
	sleep 0.5
	crash
	start
	ls_expect "$variant: new has exactly its rows" "1100|$(( (100001 + 101100) * 1100 / 2 ))|0" \
		"$(q -c "SELECT count(*), sum(a), count(*) FILTER (WHERE a <= 3100) FROM new")"
	ls_expect "$variant: leanstore_verify(new)" t "$(q -c "SELECT leanstore_verify('new')")"
	q -c "ALTER SYSTEM RESET leanstore.pack_eager" -c "SELECT pg_reload_conf()" -c "DROP TABLE new" >/dev/null
}
for variant in same checkpoint restart; do
	reuse "$variant"
done
ls_expect "the live table after all crashes" "$keep_digest|t" \
	"$(digest postgres keep)|$(q -c "SELECT leanstore_verify('keep')")"

# 3. A bulk load (COPY: multi_insert's batches) into a table dropped before
#    a crash: the log still has its cold images, PostgreSQL's redo removed
#    the file; the replay skips them (it used to stop at them with "could
#    not create the cold tree", and the server never came up), and a table
#    loaded the same way and kept has every row.
q -c "COPY (SELECT g, g % 7 FROM generate_series(1, 30000) g) TO '$dir/load.csv'" >/dev/null
q -c "CREATE TABLE gone (a int, b int) USING leanstore" -c "COPY gone FROM '$dir/load.csv'" -c "DROP TABLE gone" >/dev/null
q -c "CREATE TABLE kept (a int, b int) USING leanstore" -c "COPY kept FROM '$dir/load.csv'" >/dev/null
crash
start
ls_expect "a COPY into a table dropped before a crash: the server starts, the kept load is whole" \
	"30000|450015000|t" "$(q -c "SELECT count(*), sum(a) FROM kept")|$(q -c "SELECT leanstore_verify('kept')")"
ls_expect "the live table after all crashes" "$keep_digest|t" \
	"$(digest postgres keep)|$(q -c "SELECT leanstore_verify('keep')")"

if [ "$fail" != 0 ]; then
	tail -n 40 "$dir/server.log"
	echo "crash_drop: FAILED"
	exit 1
fi
ls_cluster_stop "$dir"
echo "crash_drop: ok"
