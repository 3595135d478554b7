#!/usr/bin/env bash
# test/recovery/commit_subxids.sh: a transaction that wrote only leanstore
# rows, with more committed subtransactions than leanstore's commit record
# can name, commits (and survives a crash).
# With wal_level = minimal (and leanstore.commit_via_wal = off) such a
# transaction writes no WAL of PostgreSQL's and commits through leanstore's
# log alone: its LS_LR_COMMIT record names every committed subxid, and one
# record takes half of leanstore.log_buffer (128 kB at the 256 kB minimum:
# 32k subxids).  Session A updates rows in 40,000 PL/pgSQL exception blocks
# (each a subtransaction with its own xid); another session takes the xid
# that starts a new clog page (that would write WAL for A).  Until session
# 29 A's COMMIT failed with "could not append to leanstore's log: too
# large" and rolled everything back; now it takes PostgreSQL's commit
# record, as a transaction that wrote WAL does.
# Run by test/run (suite crash, as root; the server runs as postgres).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin commit_subxids
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.log_buffer = '256kB'
leanstore.commit_via_wal = off
wal_level = minimal
max_wal_senders = 0
synchronous_commit = on
autovacuum = off
EOF
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql postgres "$@"; }
q -c "CREATE EXTENSION leanstore" \
	-c "CREATE TABLE lt (id int PRIMARY KEY, v int) USING leanstore" \
	-c "INSERT INTO lt SELECT g, 0 FROM generate_series(1, 1000) g" \
	-c "CREATE TABLE go (step text)" \
	-c "CREATE FUNCTION many(n int) RETURNS void LANGUAGE plpgsql AS \$\$
	    BEGIN
	      FOR i IN 1 .. n LOOP
	        BEGIN
	          UPDATE lt SET v = v + 1 WHERE id = i % 1000 + 1;
	        EXCEPTION WHEN division_by_zero THEN NULL;
	        END;
	      END LOOP;
	    END \$\$" >/dev/null || exit 1
before=$(q -c "SELECT log_only_commits FROM leanstore_stats()")

# A: subtransactions up to 40 xids before the next clog page, a pause
# while another session takes that page's first xid, then 8000 more
q -c "SET synchronous_commit = on" -c "BEGIN" \
	-c "SELECT 'part1 ' || (32768 - txid_current() % 32768 - 40)" \
	-c "SELECT many((32768 - txid_current() % 32768 - 40)::int)" \
	-c "SELECT 'waiting'" \
	-c "DO \$\$ BEGIN WHILE NOT EXISTS (SELECT FROM go) LOOP PERFORM pg_sleep(0.05); END LOOP; END \$\$" \
	-c "SELECT many(8000)" -c "COMMIT" >"$dir/a.out" 2>&1 &
apid=$!
for _ in $(seq 1 1200); do
	grep -q "waiting" "$dir/a.out" && break
	sleep 0.25
done
part1=$(sed -n 's/^part1 //p' "$dir/a.out")
for _ in $(seq 1 100); do echo "SELECT txid_current();"; done >"$dir/burn.sql"
chmod a+r "$dir/burn.sql"
q -f "$dir/burn.sql" >/dev/null
q -c "INSERT INTO go VALUES ('go')" >/dev/null
wait "$apid"
want=$((part1 + 8000))
ls_expect "A committed" "" "$(grep -v "^part1\|^waiting\|^$" "$dir/a.out")"
ls_expect "A's updates are there" "$want" "$(q -c "SELECT sum(v) FROM lt")"
ls_expect "A did not commit through leanstore's log alone (its record would not fit)" \
	"$before" "$(q -c "SELECT log_only_commits FROM leanstore_stats()")"
ls_kill9 "$dir/data"
ls_restart
ls_expect "after kill -9: A's updates are there" "$want|t" \
	"$(q -c "SELECT sum(v), leanstore_verify('lt') FROM lt")"
ls_test_verdict
