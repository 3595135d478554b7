#!/usr/bin/env bash
# test/hotfull/spill_concurrent.sh: writes that find the hot tier full go to
# the cold tier, concurrently. Four pgbench clients on a 32MB hot tier run
# transactions that update the same 3000 rows of their own range six times
# (the tier fills with their versions, so updates write their new versions
# into the cold tree and later writes of those rows are made there), insert
# rows and delete some of them, then commit or roll back; a fifth client
# reads. Checks: the counters' sum equals the committed increments, no row
# is lost or doubled (sequential and index scans agree), the inserts that
# committed are there, leanstore_verify passes, and writes were spilled.
# Ranges are disjoint: a row lock on a row another transaction moved into
# the cold tree still needs room in the hot tier (README: no cold path).
# This test found that VACUUM failed ("could not access the cold tree ...:
# no space") when a removed image's DEAD slot found the hot tier still
# full (pack behind under load): VACUUM now packs and marks it again.
# Run by test/run (suite hotfull, as root); $1: output file.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_require_root
trap ls_cleanup EXIT
out=${1:-$(mktemp)}
ls_scratch_dir spill || exit 1
dir=$LS_SCRATCH
SECS=${SPILL_SECS:-20}
cp "$HERE/tier32.conf" "$dir/test.conf"
# client c (0..3) updates ids of c*5000+1 .. c*5000+5000; inserts take ids
# above 100000 from a sequence (plain inserts: INSERT ... ON CONFLICT needs
# room in the hot tier)
cat >"$dir/upd.sql" <<'SQL'
\set c :client_id % 4
\set a :c * 5000 + random(1, 2000)
SELECT 100000 + nextval('ins_seq') * 1000 AS ins \gset
BEGIN;
UPDATE t SET n = n + 1, pad = repeat(chr(97 + :a % 26), 200) WHERE id BETWEEN :a AND :a + 2999;
UPDATE t SET n = n + 1 WHERE id BETWEEN :a AND :a + 2999;
UPDATE t SET n = n + 1, pad = repeat(chr(98 + :a % 25), 200) WHERE id BETWEEN :a AND :a + 2999;
UPDATE t SET n = n + 1 WHERE id BETWEEN :a AND :a + 2999;
UPDATE t SET n = n + 1, pad = repeat(chr(99 + :a % 24), 200) WHERE id BETWEEN :a AND :a + 2999;
UPDATE t SET n = n + 1 WHERE id BETWEEN :a AND :a + 2999;
INSERT INTO t SELECT g, 0, 'new' FROM generate_series(:ins, :ins + 199) g;
DELETE FROM t WHERE id BETWEEN :ins AND :ins + 99 AND n = 0;
INSERT INTO log VALUES (18000, :ins);
COMMIT;
SQL
cat >"$dir/read.sql" <<'SQL'
SELECT count(*) FROM t WHERE id <= 20000;
SQL
chown -R "$LS_PG_USER": "$dir"
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
P() { (cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -A -t -d postgres "$@" 2>&1); }
{
	P -c "CREATE EXTENSION leanstore" \
		-c "CREATE TABLE t (id int PRIMARY KEY, n int, pad text) USING leanstore" \
		-c "INSERT INTO t SELECT g, 0, repeat('a', 200) FROM generate_series(1, 20000) g" \
		-c "CREATE TABLE log (k int, ins int)" -c "CREATE SEQUENCE ins_seq"
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/pgbench" -n -c 4 -j 2 -T "$SECS" -f upd.sql postgres >"$dir/upd.log" 2>&1) &
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/pgbench" -n -c 1 -T "$SECS" -f read.sql postgres >"$dir/read.log" 2>&1) &
	wait
	grep -q "aborted" "$dir/upd.log" "$dir/read.log" && { echo "a client aborted:"; grep -h "error" "$dir/upd.log" "$dir/read.log" | head -5; }
	n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$dir/upd.log")
	[ "${n:-0}" -ge 4 ] && echo "transactions committed: at least 4" || echo "too few transactions: ${n:-0}"
	P -c "SELECT CASE WHEN (SELECT sum(n) FROM t WHERE id <= 20000) = (SELECT sum(k) FROM log) THEN 'counters: sum matches the log' ELSE 'counters: MISMATCH' END"
	P -c "SELECT CASE WHEN (SELECT count(*) FROM t WHERE id > 100000) = (SELECT count(*) * 100 FROM log) THEN 'inserts: every committed one there' ELSE 'inserts: MISMATCH' END"
	P -c "SELECT CASE WHEN count(*) = 20000 AND count(DISTINCT id) = 20000 THEN 'rows: none lost or doubled (seq scan)' ELSE 'rows: WRONG ' || count(*) END FROM t WHERE id <= 20000"
	P -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" \
		-c "SELECT CASE WHEN count(*) = 20000 THEN 'rows: index scan agrees' ELSE 'rows: index scan WRONG ' || count(*) END FROM t WHERE id BETWEEN 1 AND 20000"
	P -c "SELECT CASE WHEN writes_spilled > 0 THEN 'writes spilled to the cold tier' ELSE 'no write spilled: the test did not fill the tier' END FROM leanstore_stats()"
	# (once hung past test/run's 600 s limit under heavy load, not
	# reproduced since: bounded here, and what every backend waited for is
	# kept for the failure report)
	(sleep 90; P -c "SELECT pid, backend_type, state, wait_event_type, wait_event, left(query, 60) FROM pg_stat_activity" >"$dir/activity.txt") &
	watch=$!
	P -c "SET statement_timeout = '120s'" -c "VACUUM t" -c "SELECT 'verify: ' || leanstore_verify('t')"
	kill "$watch" 2>/dev/null
	wait "$watch" 2>/dev/null
} >"$out" 2>&1
cat "$out"
ls_cluster_stop "$dir"
expected="transactions committed: at least 4
counters: sum matches the log
inserts: every committed one there
rows: none lost or doubled (seq scan)
rows: index scan agrees
writes spilled to the cold tier
verify: true"
if [ "$(cat "$out")" = "$expected" ]; then
	echo "spill_concurrent: ok"
else
	echo "spill_concurrent: FAILED"
	echo "--- clients' errors (first 10)"
	grep -h -i "error\|abort" "$dir/upd.log" "$dir/read.log" | head -n 10
	echo "--- server log: errors and warnings (first 20)"
	grep -E "ERROR|WARNING|PANIC|FATAL|TRAP" "$dir/server.log" | head -n 20
	[ -s "$dir/activity.txt" ] && { echo "--- pg_stat_activity 90 s into VACUUM/verify"; cat "$dir/activity.txt"; }
	exit 1
fi
