#!/usr/bin/env bash
# test/hotfull/lock_levels.sh: while the hot tier is full, a delete or
# update of a cold row whose lock in the image another level of the same
# transaction took (a parent, or a subtransaction released into it) keeps
# that lock, as heap's multixact does.
# Session A fills the 32MB hot tier with its own versions, then in each
# case locks rows at one level and writes them at another (a savepoint, a
# PL/pgSQL exception block), rolls the write back or keeps it, and waits.
# Another session then probes the rows with NOWAIT locks: what blocks and
# what does not must be what the same steps give on a heap table in the
# same run (heap is the oracle).  Until session 29 the write failed with
# "leanstore hot tier is full" (the image held a lock that was not the
# writer's own), and a write over a multixact of a parent's lock and the
# writer's own wrote the parent's lock away (case c6: FOR UPDATE of the
# row then went through after the ROLLBACK TO).
# Case c9 also checks that FOR KEY SHARE goes through A's running no-key
# update in the image at once (it waited for A until session 29).
# Run by test/run (suite hotfull, as root); $1: output file.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin lock_levels
cp "$HERE/tier32.conf" "$dir/test.conf"
chown -R "$LS_PG_USER": "$dir"
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { (cd "$dir" && ls_as_pg timeout 300 "$LS_PG_BIN/psql" -X -q -At -d postgres "$@" 2>&1); }
q -c "CREATE EXTENSION leanstore" \
	-c "CREATE TABLE go (am text)" >/dev/null || exit 1
q -v ON_ERROR_STOP=1 <"$HERE/fill.sql" >/dev/null || exit 1
for am in heap leanstore; do
	# cold rows: past bulk_load_rows an insert goes to the cold tree
	q -c "SET leanstore.bulk_load_rows = 10" \
		-c "CREATE TABLE t_$am (id int PRIMARY KEY, n int, pad text) USING $am" \
		-c "INSERT INTO t_$am SELECT g, 0, repeat('x', 100) FROM generate_series(1, 300) g" >/dev/null
done
ls_expect "leanstore's rows are cold (the first 10 stay hot)" "10|290" \
	"$(q -c "SELECT hot_rows, cold_rows FROM leanstore_table_stats('t_leanstore')")"

probes="105:UPDATE 106:SHARE 115:UPDATE 116:SHARE 125:KEY_SHARE 126:SHARE
	135:UPDATE 136:SHARE 145:UPDATE 146:NO_KEY_UPDATE 155:UPDATE 156:SHARE
	165:KEY_SHARE 175:KEY_SHARE 176:SHARE 185:UPDATE 186:KEY_SHARE"
for am in heap leanstore; do
	t=t_$am
	q -c "BEGIN" -c "CALL churn()" \
		-c "SAVEPOINT s1" -c "SELECT count(*) FROM (SELECT * FROM $t WHERE id BETWEEN 101 AND 110 FOR SHARE) s" \
		-c "RELEASE s1" \
		-c "SAVEPOINT x1" -c "UPDATE $t SET n = n + 1 WHERE id BETWEEN 101 AND 110" -c "ROLLBACK TO x1" \
		-c "SAVEPOINT s2" -c "SELECT count(*) FROM (SELECT * FROM $t WHERE id BETWEEN 111 AND 120 FOR SHARE) s" \
		-c "RELEASE s2" \
		-c "SAVEPOINT x2" -c "DELETE FROM $t WHERE id BETWEEN 111 AND 120" -c "ROLLBACK TO x2" \
		-c "SELECT count(*) FROM (SELECT * FROM $t WHERE id BETWEEN 121 AND 130 FOR UPDATE) s" \
		-c "SAVEPOINT x3" -c "UPDATE $t SET n = n + 1 WHERE id BETWEEN 121 AND 130" -c "ROLLBACK TO x3" \
		-c "SELECT count(*) FROM (SELECT * FROM $t WHERE id BETWEEN 131 AND 140 FOR SHARE) s" \
		-c "SAVEPOINT x4" -c "DELETE FROM $t WHERE id BETWEEN 131 AND 140" -c "ROLLBACK TO x4" \
		-c "SELECT count(*) FROM (SELECT * FROM $t WHERE id BETWEEN 141 AND 150 FOR KEY SHARE) s" \
		-c "SAVEPOINT x5" -c "UPDATE $t SET id = id + 1000 WHERE id BETWEEN 141 AND 150" -c "ROLLBACK TO x5" \
		-c "SELECT count(*) FROM (SELECT * FROM $t WHERE id BETWEEN 151 AND 160 FOR SHARE) s" \
		-c "SAVEPOINT x6" \
		-c "SELECT count(*) FROM (SELECT * FROM $t WHERE id BETWEEN 151 AND 160 FOR SHARE) s" \
		-c "DELETE FROM $t WHERE id BETWEEN 151 AND 160" -c "ROLLBACK TO x6" \
		-c "SELECT count(*) FROM (SELECT * FROM $t WHERE id BETWEEN 161 AND 170 FOR UPDATE) s" \
		-c "SAVEPOINT x7" -c "UPDATE $t SET n = n + 1 WHERE id BETWEEN 161 AND 170" -c "RELEASE x7" \
		-c "SELECT count(*) FROM (SELECT * FROM $t WHERE id BETWEEN 171 AND 180 FOR NO KEY UPDATE) s" \
		-c "DO \$\$ BEGIN
		      BEGIN
		        UPDATE $t SET n = n + 1 WHERE id BETWEEN 171 AND 180;
		        RAISE division_by_zero;
		      EXCEPTION WHEN division_by_zero THEN NULL;
		      END;
		    END \$\$" \
		-c "SAVEPOINT s9" \
		-c "SELECT count(*) FROM (SELECT * FROM $t WHERE id BETWEEN 181 AND 190 FOR KEY SHARE) s" \
		-c "RELEASE s9" \
		-c "UPDATE $t SET n = n + 1 WHERE id BETWEEN 181 AND 190" \
		-c "SELECT 'spilled ' || (writes_spilled > 0) FROM leanstore_stats()" \
		-c "SELECT 'ready'" \
		-c "DO \$\$ BEGIN
		      WHILE NOT EXISTS (SELECT FROM go WHERE am = '$am') LOOP
		        PERFORM pg_sleep(0.05);
		      END LOOP;
		    END \$\$" \
		-c "COMMIT" >"$dir/a.$am" 2>&1 &
	apid=$!
	for _ in $(seq 1 480); do
		grep -q "ready" "$dir/a.$am" && break
		sleep 0.25
	done
	ls_expect "$am: A's steps" "10 10 10 10 10 10 10 10 10 10 spilled true ready" \
		"$(grep -v '^CALL$' "$dir/a.$am" | tr '\n' ' ' | sed 's/ $//')"
	for p in $probes; do
		id=${p%%:*}
		mode=${p#*:}
		r=$(q -c "SELECT id FROM $t WHERE id = $id FOR ${mode//_/ } NOWAIT")
		case "$r" in
		*"could not obtain lock"*) r=blocked ;;
		"$id") r=locked ;;
		esac
		echo "$id ${mode//_/ }: $r"
	done >"$dir/probes.$am"
	q -c "INSERT INTO go VALUES ('$am')" >/dev/null
	wait "$apid"
	q -c "SELECT count(*), sum(n), sum(id) FROM $t" >"$dir/final.$am"
	q -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" \
		-c "SELECT count(*), sum(n), sum(id) FROM $t WHERE id > 0" >>"$dir/final.$am"
done
ls_expect "heap's probes: share locks held, rolled-back writes gone" \
	"105 UPDATE: blocked|106 SHARE: locked|115 UPDATE: blocked|116 SHARE: locked|125 KEY SHARE: blocked|126 SHARE: blocked|135 UPDATE: blocked|136 SHARE: locked|145 UPDATE: blocked|146 NO KEY UPDATE: locked|155 UPDATE: blocked|156 SHARE: locked|165 KEY SHARE: blocked|175 KEY SHARE: locked|176 SHARE: blocked|185 UPDATE: blocked|186 KEY SHARE: locked" \
	"$(tr '\n' '|' <"$dir/probes.heap" | sed 's/|$//')"
ls_expect "leanstore's probes are heap's" "$(cat "$dir/probes.heap")" "$(cat "$dir/probes.leanstore")"
ls_expect "leanstore's rows are heap's, by scan and by index" \
	"$(cat "$dir/final.heap")" "$(cat "$dir/final.leanstore")"
q -c "VACUUM t_leanstore" >/dev/null
ls_expect "leanstore_verify" "t" "$(q -c "SELECT leanstore_verify('t_leanstore')")"
ls_test_verdict
