#!/usr/bin/env bash
# test/recovery/crash_ddl_load.sh: kill -9 while DDL rewrites, truncates,
# creates and drops leanstore tables under concurrent writers.
#
# One throwaway cluster (synchronous_commit = on, a leanstore checkpoint
# every second, a 4MB buffer pool; every second round packs rows into the
# cold tier as soon as it can).  Each round runs, at the same time:
#  - a writer: each transaction inserts row n into the leanstore table dl
#    and into its heap mirror dh, adds 1 to row n-37 in both, and when n is
#    a multiple of 5 deletes row n-101 from both; it prints "ack n" after
#    COMMIT returned; every fourth transaction inserts -n and rolls back;
#  - a DDL session that rewrites dl over and over: VACUUM FULL, CLUSTER,
#    ALTER COLUMN TYPE there and back, a column with a volatile default
#    (a rewrite) added and dropped, SET TABLESPACE there and back, REINDEX,
#    VACUUM, CREATE INDEX CONCURRENTLY and DROP INDEX;
#  - a truncating session: each transaction truncates de and loads epoch e
#    into it (rows(e) of them, some above leanstore.bulk_load_rows, so the
#    load goes straight into the cold tree), then prints "epoch e";
#  - a session that creates table c_k with rows(k) rows in one transaction
#    ("created k"), then drops c_(k-2) ("dropped k-2").
# Then kills every process of the cluster at a random moment, starts it
# again and checks:
#  - dl and dh hold the same rows (a transaction over heap and leanstore is
#    atomic, whatever DDL ran on dl); every acknowledged n is there, unless
#    a committed transaction deleted it; no rolled-back row is visible;
#  - sequential and index scans of dl agree; amcheck's bt_index_check with
#    heapallindexed on dl's indexes; leanstore_verify on every table;
#  - de holds one epoch, whole, the last acknowledged one or the one after;
#  - every c_k that was acknowledged and whose drop was not issued is there
#    with its rows; no c_k whose drop was acknowledged is there; every c_k
#    that is there has its rows;
#  - no session got an ERROR before the kill.
# LS_CRASH_ROUNDS sets the number of kills (default 6).  Run by test/run (as
# root; the server runs as postgres).  Exits non-zero on any failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin crash_ddl_load
rounds=${LS_CRASH_ROUNDS:-6}
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '128MB'
leanstore.buffer_pool = '4MB'
leanstore.bulk_load_rows = 3000
leanstore.checkpoint_timeout = 1
synchronous_commit = on
autovacuum = off
restart_after_crash = off
EOF
mkdir -p "$dir/ts"
chown -R "$LS_PG_USER": "$dir"
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql postgres "$@"; }
q -c "CREATE EXTENSION leanstore" -c "CREATE EXTENSION amcheck" \
	-c "CREATE TABLESPACE ts LOCATION '$dir/ts'" \
	-c "CREATE TABLE dl (id int PRIMARY KEY, v int NOT NULL, pad text) USING leanstore" \
	-c "CREATE TABLE dh (id int PRIMARY KEY, v int NOT NULL, pad text) USING heap" \
	-c "CREATE TABLE de (e int, g int) USING leanstore" \
	-c "INSERT INTO dl SELECT g, 0, repeat('p', g % 300) FROM generate_series(-3000, 0) g" \
	-c "INSERT INTO dh SELECT * FROM dl" \
	-c "INSERT INTO de SELECT 0, g FROM generate_series(1, 500) g" >/dev/null || exit 1

# rows of epoch e and of table c_k
rows() { echo $((500 + ($1 % 3) * 2000)); }

check() {
	if [ "$2" != "ok" ]; then
		echo "$LS_TEST round $r: $1: $2"
		fail=1
	fi
}

# a psql of the test that runs FILE, stops at the first error, output to OUT
run_file() { (cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres -f "$1" >"$2" 2>&1); }

next=1 epoch=1 k=1
for r in $(seq 1 "$rounds"); do
	eager=off
	[ $((r % 2)) = 0 ] && eager=on
	q -c "ALTER SYSTEM SET leanstore.pack_eager = $eager" -c "SELECT pg_reload_conf()" >/dev/null

	w="$dir/writer_$r.sql" d="$dir/ddl_$r.sql" t="$dir/trunc_$r.sql" c="$dir/create_$r.sql"
	for n in $(seq "$next" $((next + 2999))); do
		if [ $((n % 4)) = 0 ]; then
			printf 'BEGIN; INSERT INTO dl VALUES (-%d, 1, NULL); INSERT INTO dh VALUES (-%d, 1, NULL); UPDATE dl SET v = v + 1 WHERE id = %d; UPDATE dh SET v = v + 1 WHERE id = %d; ROLLBACK;\n' \
				$((1000000 + n)) $((1000000 + n)) $((n - 37)) $((n - 37))
		else
			del=
			[ $((n % 5)) = 0 ] && del="DELETE FROM dl WHERE id = $((n - 101)); DELETE FROM dh WHERE id = $((n - 101));"
			printf "BEGIN; INSERT INTO dl VALUES (%d, 0, repeat('p', %d)); INSERT INTO dh VALUES (%d, 0, repeat('p', %d)); UPDATE dl SET v = v + 1 WHERE id = %d; UPDATE dh SET v = v + 1 WHERE id = %d; %s COMMIT;\n\\\\echo ack %d\n" \
				"$n" $((n % 300)) "$n" $((n % 300)) $((n - 37)) $((n - 37)) "$del" "$n"
		fi
	done >"$w"
	next=$((next + 3000))
	{
		echo "DROP INDEX IF EXISTS dl_v;"
		for _ in $(seq 1 40); do
			for stmt in "VACUUM FULL dl" "CLUSTER dl USING dl_pkey" \
				"ALTER TABLE dl ALTER v TYPE bigint" "ALTER TABLE dl ALTER v TYPE int" \
				"ALTER TABLE dl ADD COLUMN IF NOT EXISTS r float8 DEFAULT random()" \
				"ALTER TABLE dl DROP COLUMN IF EXISTS r" \
				"ALTER TABLE dl SET TABLESPACE ts" "ALTER TABLE dl SET TABLESPACE pg_default" \
				"REINDEX TABLE dl" "VACUUM dl" "CREATE INDEX CONCURRENTLY dl_v ON dl (v)" "DROP INDEX dl_v"; do
				printf '%s;\n\\echo ddl\n' "$stmt"
			done
		done
	} >"$d"
	for e in $(seq "$epoch" $((epoch + 1999))); do
		printf 'BEGIN; TRUNCATE de; INSERT INTO de SELECT %d, g FROM generate_series(1, %d) g; COMMIT;\n\\echo epoch %d\n' \
			"$e" "$(rows "$e")" "$e"
	done >"$t"
	for i in $(seq "$k" $((k + 1999))); do
		printf "BEGIN; CREATE TABLE c_%d (id int PRIMARY KEY, v text) USING leanstore; INSERT INTO c_%d SELECT g, 'k' FROM generate_series(1, %d) g; COMMIT;\n\\\\echo created %d\n" \
			"$i" "$i" "$(rows "$i")" "$i"
		[ "$i" -gt 2 ] && printf '\\echo dropping %d\nDROP TABLE IF EXISTS c_%d;\n\\echo dropped %d\n' $((i - 2)) $((i - 2)) $((i - 2))
	done >"$c"
	chown "$LS_PG_USER": "$w" "$d" "$t" "$c"

	run_file "$w" "$dir/w_$r.out" &
	p1=$!
	run_file "$d" "$dir/d_$r.out" &
	p2=$!
	run_file "$t" "$dir/t_$r.out" &
	p3=$!
	run_file "$c" "$dir/c_$r.out" &
	p4=$!
	sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 1 + rand() * 4 }')"
	ls_kill9 "$dir/data"
	wait "$p1" "$p2" "$p3" "$p4" 2>/dev/null
	ls_restart

	for f in w d t c; do
		check "no error in session $f" "$(grep -q 'ERROR:' "$dir/${f}_$r.out" && grep 'ERROR:' "$dir/${f}_$r.out" | head -n 3 || echo ok)"
	done

	# the writer
	grep '^ack ' "$dir/w_$r.out" | awk '{ print $2 }' >"$dir/acked_$r.txt"
	chown "$LS_PG_USER": "$dir/acked_$r.txt"
	check "dl and dh agree" "$(q -At -c "
		SELECT CASE WHEN count(*) = 0 THEN 'ok' ELSE count(*) || ' rows differ' END
		FROM ((SELECT id, v, pad FROM dl EXCEPT ALL SELECT id, v, pad FROM dh)
		      UNION ALL
		      (SELECT id, v, pad FROM dh EXCEPT ALL SELECT id, v, pad FROM dl)) x" 2>&1)"
	check "acknowledged rows present" "$(q -At -c "CREATE TEMP TABLE acked (n int)" \
		-c "\\copy acked FROM '$dir/acked_$r.txt'" -c "
		SELECT CASE WHEN count(*) = 0 THEN 'ok' ELSE count(*) || ' acknowledged rows missing, e.g. ' || min(n) END
		FROM acked a
		WHERE NOT EXISTS (SELECT 1 FROM dl WHERE id = a.n)
		  AND NOT (a.n % 5 = 4 AND EXISTS (SELECT 1 FROM dh WHERE id = a.n + 101))" 2>&1)"
	check "rolled-back rows invisible" "$(q -At -c "
		SELECT CASE WHEN count(*) = 0 THEN 'ok' ELSE count(*) || ' rolled-back rows visible' END
		FROM dl WHERE id < -3000" 2>&1)"
	seq=$(q -At -c "SET enable_indexscan = off; SET enable_bitmapscan = off;
		SELECT count(*), sum(id), sum(v) FROM dl WHERE id > -10000000" 2>&1)
	idx=$(q -At -c "SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT count(*), sum(id), sum(v) FROM dl WHERE id > -10000000" 2>&1)
	check "sequential and index scans of dl agree" "$([ "$seq" = "$idx" ] && echo ok || echo "seq [$seq] index [$idx]")"
	check "bt_index_check of dl's indexes" "$(q -At -c "
		SELECT bt_index_check(i.indexrelid, true) FROM pg_index i
		WHERE i.indrelid = 'dl'::regclass AND i.indisvalid" -c "SELECT 'ok'" 2>&1 | grep -v '^$' | tail -n 1)"
	check "leanstore_verify" "$(q -At -c "
		SELECT CASE WHEN bool_and(leanstore_verify(c.oid)) THEN 'ok' ELSE 'failed' END
		FROM pg_class c JOIN pg_am a ON a.oid = c.relam
		WHERE a.amname = 'leanstore' AND c.relkind = 'r'" 2>&1)"

	# the truncating session
	last=$(grep '^epoch ' "$dir/t_$r.out" | tail -n 1 | awk '{ print $2 }')
	last=${last:-$((epoch - 1))}
	got=$(q -At -F ' ' -c "SELECT count(DISTINCT e), min(e), count(*) FROM de" 2>&1)
	set -- $got
	if [ "$#" = 3 ] && [ "$1" = 1 ] && { [ "$2" = "$last" ] || [ "$2" = $((last + 1)) ]; } &&
		[ "$3" = "$(rows "$2")" ]; then
		check "de holds one whole epoch" ok
	else
		check "de holds one whole epoch" "got [$got], last acknowledged epoch $last"
	fi
	[ "$#" = 3 ] && [ "$1" = 1 ] && last=$2
	epoch=$((last + 1))

	# the creating session
	created=$(grep '^created ' "$dir/c_$r.out" | awk '{ print $2 }' | tr '\n' ' ')
	dropping=" $(grep '^dropping ' "$dir/c_$r.out" | awk '{ print $2 }' | tr '\n' ' ')"
	dropped=" $(grep '^dropped ' "$dir/c_$r.out" | awk '{ print $2 }' | tr '\n' ' ')"
	bad=
	for i in $created; do
		case "$dropping" in *" $i "*) continue ;; esac
		[ "$(q -At -c "SELECT count(*) FROM c_$i" 2>&1)" = "$(rows "$i")" ] || bad="$bad c_$i(missing)"
	done
	for i in $dropped; do
		[ "$(q -At -c "SELECT to_regclass('c_$i') IS NULL")" = t ] || bad="$bad c_$i(not dropped)"
	done
	for rel in $(q -At -c "SELECT relname FROM pg_class WHERE relname ~ '^c_[0-9]+$' AND relkind = 'r'"); do
		i=${rel#c_}
		[ "$(q -At -c "SELECT count(*) FROM $rel" 2>&1)" = "$(rows "$i")" ] || bad="$bad $rel(rows)"
		[ "$i" -ge "$k" ] && k=$((i + 1))
	done
	check "created and dropped tables" "${bad:-ok}"
	[ -n "$created" ] && for i in $created; do [ "$i" -ge "$k" ] && k=$((i + 1)); done
	# tables of earlier rounds that are left are dropped now
	q -At -c "SELECT 'DROP TABLE ' || relname || ';' FROM pg_class WHERE relname ~ '^c_[0-9]+$' AND relkind = 'r'" |
		q >/dev/null

	echo "$LS_TEST round $r (pack_eager $eager): $(wc -l <"$dir/acked_$r.txt") acknowledged writes," \
		"$(grep -c '^epoch ' "$dir/t_$r.out") truncations, $(grep -c '^created ' "$dir/c_$r.out") tables created," \
		"$(grep -c '^ddl' "$dir/d_$r.out") DDL statements"
	[ "$fail" = 0 ] || break
done
ls_test_verdict
