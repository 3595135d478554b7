#!/usr/bin/env bash
# test/recovery/upgrade.sh: pg_dump / pg_restore and pg_upgrade of a
# cluster that holds leanstore tables (pg_upgrade from PostgreSQL 15 to 15:
# the same binaries, the tool's own path).
# The old cluster (data checksums) has tables of both tiers: rows hot, a
# bulk load into cold pages with deletes and updates, wide (TOASTed) values,
# a secondary index and an unlogged table; heap twins of each (no other
# tablespace: pg_upgrade refuses them between clusters of one catalog
# version).  pg_dump -Fc of the database restored by pg_restore into
# another one gives the same answers, the tables still leanstore's.  After
# a clean shutdown `pg_upgrade --check` must call
# the clusters compatible, and the upgrade (file copy) must complete; the new
# cluster then gives the same answers as the heap twins through sequential
# and index scans, leanstore_verify and amcheck's bt_index_check (with
# heapallindexed) pass, writes work, and a crash (kill -9) of the new
# cluster keeps every committed one.  pg_upgrade keeps relfilenodes and
# database OIDs (PostgreSQL 15), so the copied files still name their
# tables.  Run by test/run (suite clean) as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin upgrade
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '64MB'
leanstore.buffer_pool = '8MB'
autovacuum = off
EOF
LS_INITDB_ARGS=-k ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql "$@"; }

# the same statements on leanstore tables (l_*) and heap twins (h_*)
both() {	# SQL with %s for the access method and %p for the prefix
	local am p
	for am in leanstore heap; do
		p=${am:0:1}
		q postgres -c "$(printf '%s' "$1" | sed "s/%s/$am/g; s/%p/${p}_/g")" >/dev/null || return 1
	done
}
q postgres -c "CREATE EXTENSION leanstore" -c "CREATE EXTENSION amcheck" >/dev/null || { echo "$LS_TEST: setup failed"; exit 1; }
both "CREATE TABLE %phot (id int PRIMARY KEY, v text) USING %s;
	INSERT INTO %phot SELECT g, 'h' || g FROM generate_series(1, 2000) g;
	UPDATE %phot SET v = v || 'u' WHERE id % 7 = 0" &&
both "CREATE TABLE %pcold (id int PRIMARY KEY, k int, v text) USING %s;
	CREATE INDEX ON %pcold (k);
	INSERT INTO %pcold SELECT g, g % 100, repeat('c', 80) FROM generate_series(1, 100000) g;
	DELETE FROM %pcold WHERE id % 10 = 0;
	UPDATE %pcold SET k = -k WHERE id % 33 = 0" &&
both "CREATE TABLE %pwide (id int PRIMARY KEY, v text) USING %s;
	INSERT INTO %pwide SELECT g, repeat(md5(g::text), 400) FROM generate_series(1, 50) g" &&
both "CREATE UNLOGGED TABLE %punl (id int) USING %s; INSERT INTO %punl SELECT generate_series(1, 10)" ||
	{ echo "$LS_TEST: setup failed"; exit 1; }
[ "$(q postgres -c "SELECT cold_rows > 50000 FROM leanstore_table_stats('l_cold')")" = t ] ||
	{ echo "$LS_TEST: l_cold has too few cold rows"; fail=1; }

# the answers of a table: sequential scan, index scans, sums
answers() {	# PORT TABLE [DB]
	local sql="SET enable_indexscan = off; SET enable_bitmapscan = off;
		SELECT 'seq', count(*), sum(id), sum(hashtext(x::text)) FROM $2 x;
		RESET enable_indexscan; RESET enable_bitmapscan; SET enable_seqscan = off;
		SELECT 'index', count(*), sum(id) FROM $2 WHERE id > 0;"
	case $2 in
	?_cold) sql+=" SELECT 'k', count(*), sum(k) FROM $2 WHERE k BETWEEN -100 AND 100;" ;;
	?_unl) sql="SELECT 'seq', count(*), sum(id) FROM $2;" ;;
	esac
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -At -h "$dir" -p "$1" -d "${3:-postgres}" -c "$sql" 2>&1)
}
compare() {	# PORT WHAT [DB of the leanstore tables]
	local t l h
	for t in hot cold wide unl; do
		l=$(answers "$1" "l_$t" "${3:-postgres}")
		h=$(answers "$1" "h_$t")
		ls_expect "$2: $t agrees with heap" "$h" "$l"
	done
}
old_port=$PGPORT
compare "$old_port" "before the upgrade"

# pg_dump -Fc, then pg_restore into another database
(cd "$dir" && ls_as_pg "$LS_PG_BIN/pg_dump" -Fc -f "$dir/dump.fc" postgres) || { echo "$LS_TEST: pg_dump failed"; fail=1; }
q postgres -c "CREATE DATABASE restored" >/dev/null
(cd "$dir" && ls_as_pg "$LS_PG_BIN/pg_restore" -d restored "$dir/dump.fc" 2>&1) || { echo "$LS_TEST: pg_restore failed"; fail=1; }
compare "$old_port" "pg_dump and pg_restore" restored
ls_expect "pg_restore: the tables are leanstore's" "4" \
	"$(q restored -c "SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname LIKE 'l\_%' AND c.relkind = 'r' AND a.amname = 'leanstore'")"
ls_expect "pg_restore: leanstore_verify" "t|t|t|t" \
	"$(q restored -c "SELECT leanstore_verify('l_hot'), leanstore_verify('l_cold'), leanstore_verify('l_wide'), leanstore_verify('l_unl')" | paste -sd'|')"
ls_pgctl -m fast stop

# the new cluster, as pg_upgrade wants it: same settings, empty
mkdir -p "$dir/new" && chown "$LS_PG_USER": "$dir/new"
ls_as_pg "$LS_PG_BIN/initdb" -k -D "$dir/new/data" --no-locale -E UTF8 -A trust >"$dir/new/initdb.log" 2>&1 ||
	{ cat "$dir/new/initdb.log"; exit 1; }
cat "$dir/test.conf" >>"$dir/new/data/postgresql.conf"
upg() {	# pg_upgrade in its own working directory (it writes its logs there)
	(cd "$dir/new" && ls_as_pg "$LS_PG_BIN/pg_upgrade" -b "$LS_PG_BIN" -B "$LS_PG_BIN" \
		-d "$dir/data" -D "$dir/new/data" -p "$(ls_free_port)" -P "$(ls_free_port)" \
		-s "$dir" "$@" 2>&1)
}
out=$(upg --check)
ls_expect "pg_upgrade --check: clusters compatible" "1" "$(grep -c 'Clusters are compatible' <<<"$out")"
[ "$(grep -c 'Clusters are compatible' <<<"$out")" = 1 ] || { echo "$out" | tail -20; exit 1; }
out=$(upg)
ls_expect "pg_upgrade: complete" "1" "$(grep -c 'Upgrade Complete' <<<"$out")"
[ "$(grep -c 'Upgrade Complete' <<<"$out")" = 1 ] || { echo "$out" | tail -20; exit 1; }

# start the new cluster where the old one listened
printf "listen_addresses = ''\nunix_socket_directories = '%s'\nport = %s\n" "$dir" "$old_port" >>"$dir/new/data/postgresql.conf"
newctl() { (cd "$dir" && ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/new/data" -l "$dir/new.log" -w -t 120 "$@" >/dev/null 2>&1); }
newctl start || { echo "$LS_TEST: the new cluster did not start"; tail -n 30 "$dir/new.log"; exit 1; }
compare "$old_port" "after the upgrade"
ls_expect "after the upgrade: leanstore_verify" "t|t|t|t" \
	"$(q postgres -c "SELECT leanstore_verify('l_hot'), leanstore_verify('l_cold'), leanstore_verify('l_wide'), leanstore_verify('l_unl')" | paste -sd'|')"
ls_expect "after the upgrade: amcheck with heapallindexed" "3" \
	"$(q postgres -c "SELECT count(bt_index_check(c.oid, true)) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid WHERE t.relname LIKE 'l\_%' AND t.relkind = 'r' AND t.relname <> 'l_wide'")"
# writes, then kill -9: the new cluster's log keeps them
both "INSERT INTO %phot SELECT g, 'n' || g FROM generate_series(5001, 5100) g;
	DELETE FROM %pcold WHERE id % 10 = 1; UPDATE %pcold SET v = 'new' WHERE id % 10 = 2" || { echo "$LS_TEST: writes after the upgrade failed"; fail=1; }
compare "$old_port" "writes after the upgrade"
(cd "$dir" && ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/new/data" -m immediate -w stop >/dev/null 2>&1)
newctl start || { echo "$LS_TEST: the new cluster did not restart"; tail -n 30 "$dir/new.log"; exit 1; }
# an unlogged table is empty after a crash, on both engines
compare "$old_port" "a crash after the upgrade"
ls_expect "a crash after the upgrade: leanstore_verify" "t|t" \
	"$(q postgres -c "SELECT leanstore_verify('l_hot'), leanstore_verify('l_cold')" | paste -sd'|')"
ls_expect "the new cluster logged no warning or error" "" \
	"$(grep -E 'WARNING|ERROR|FATAL|PANIC|TRAP' "$dir/new.log" | grep -v 'database system was interrupted' | head -5)"
newctl -m fast stop
if [ "$fail" = 0 ]; then
	echo "$LS_TEST: ok"
else
	echo "$LS_TEST: FAILED"
	exit 1
fi
