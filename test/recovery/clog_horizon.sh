#!/usr/bin/env bash
# test/recovery/clog_horizon.sh: PostgreSQL must not truncate clog below an
# xid that replay of leanstore's log may still ask clog about.
# Replay decides a record that no commit or abort record of the log decides
# (a CREATE, a bulk load's images, a delete made in the cold tier) by clog.
# PostgreSQL truncates clog below the oldest datfrozenxid; so leanstore
# holds relfrozenxid at or before the oldest such xid in the part of the
# log a crash replays (src/pg/log.c, "The oldest xid replay may ask clog
# about").  Each part starts at an xid just below a clog segment boundary
# (pg_resetwal -x), writes leanstore tables, passes the boundary, and
# freezes every database (template0 too), then kill -9:
#  1. every leanstore table was dropped: nothing holds clog, which drops
#     the segment; recovery takes the records clog no longer knows for
#     committed (what they made was dropped by later records), and new
#     tables work;
#  2. a table stays: clog keeps the segment, and the table recovers;
#  3. a bulk load, then nothing written: the timed checkpoints move the
#     log past its records (the second one runs although nothing was
#     logged since the first), VACUUM advances relfrozenxid again, clog
#     drops the segment, and a crash still recovers.  Until session 29 the
#     second checkpoint never came and relfrozenxid stayed behind.
# Until session 29 clog lost the segment in part 2 as well, and recovery
# failed in both at every start from then on ("could not access status of
# transaction"), leaving every leanstore table unusable.
# Run by test/run (suite crash, as root; the server runs as postgres).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin clog_horizon
ls_test_conf <<EOF
autovacuum = off
EOF
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql postgres "$@"; }
# jump SEGMENT: a clean stop, then the next xid 252 below the start of clog
# segment SEGMENT+1; SEGMENT's file exists, full of zeros where none of its
# xids was handed out
jump() {
	local seg=$1 file
	file=$(printf '%s/data/pg_xact/%04X' "$dir" "$seg")
	ls_pgctl -m fast stop
	[ -e "$file" ] || ls_as_pg touch "$file"
	ls_as_pg truncate -s 262144 "$file"
	ls_as_pg "$LS_PG_BIN/pg_resetwal" -x $(((seg + 1) * 1048576 - 252)) -D "$dir/data" \
		>"$dir/resetwal.log" 2>&1 || { cat "$dir/resetwal.log"; exit 1; }
	ls_restart
}
burn() {	# past the segment boundary
	for _ in $(seq 1 300); do echo "SELECT txid_current();"; done >"$dir/burn.sql"
	chmod a+r "$dir/burn.sql"
	q -f "$dir/burn.sql" >/dev/null
}
freeze_all() {
	q -c "ALTER DATABASE template0 ALLOW_CONNECTIONS true" >/dev/null
	ls_as_pg "$LS_PG_BIN/vacuumdb" -h "$dir" -p "$PGPORT" --all --freeze -q >"$dir/vacuumdb.log" 2>&1 ||
		cat "$dir/vacuumdb.log"
	q -c "ALTER DATABASE template0 ALLOW_CONNECTIONS false" >/dev/null
}
segment() {	# segment N: is clog's segment N still there?
	[ -e "$(printf '%s/data/pg_xact/%04X' "$dir" "$1")" ] && echo kept || echo gone
}
cat >>"$dir/data/postgresql.conf" <<EOF
shared_preload_libraries = 'leanstore'
leanstore.checkpoint_timeout = '1h'
restart_after_crash = on
EOF

# 1. every leanstore table dropped
jump 1
q -c "CREATE EXTENSION leanstore" \
	-c "CREATE TABLE gone (id int PRIMARY KEY, v int) USING leanstore" \
	-c "INSERT INTO gone SELECT g, g FROM generate_series(1, 100) g" \
	-c "SET leanstore.bulk_load_rows = 1" \
	-c "INSERT INTO gone SELECT g, g FROM generate_series(101, 300) g" \
	-c "DROP TABLE gone" >/dev/null || exit 1
burn
freeze_all
ls_expect "part 1: nothing holds clog: the segment goes" "gone" "$(segment 1)"
ls_kill9 "$dir/data"
ls_restart
ls_expect "part 1: after kill -9, recovery took the records clog no longer knows" "t" \
	"$(grep -q "hot memory, [1-9][0-9]* of xids clog no longer knows" "$dir/server.log" && echo t)"
ls_expect "part 1: new tables work" "1|t" \
	"$(q -c "CREATE TABLE later (id int) USING leanstore" -c "INSERT INTO later VALUES (1)" \
		-c "SELECT count(*), leanstore_verify('later') FROM later")"

# 2. a table stays
jump 2
q -c "CREATE TABLE keep (id int PRIMARY KEY, v int) USING leanstore" \
	-c "INSERT INTO keep SELECT g, g FROM generate_series(1, 100) g" \
	-c "SET leanstore.bulk_load_rows = 1" \
	-c "INSERT INTO keep SELECT g, g FROM generate_series(101, 300) g" \
	-c "CREATE TABLE h (id int PRIMARY KEY, v int)" \
	-c "INSERT INTO h SELECT g, g FROM generate_series(1, 300) g" >/dev/null || exit 1
first=$(q -c "SELECT min(xmin::text::bigint) FROM keep")
burn
freeze_all
ls_expect "part 2: the rows' xids are below the segment boundary" "t" \
	"$(q -c "SELECT $first BETWEEN 3145400 AND 3145727 AND txid_current() > 3145728")"
ls_expect "part 2: relfrozenxid stays at or before them" "t" \
	"$(q -c "SELECT relfrozenxid::text::bigint <= $first FROM pg_class WHERE relname = 'keep'")"
ls_expect "part 2: clog keeps their segment" "kept" "$(segment 2)"
ls_kill9 "$dir/data"
ls_restart
ls_expect "part 2: after kill -9, the table recovered" "300|45150|t" \
	"$(q -c "SELECT count(*), sum(v), leanstore_verify('keep') FROM keep")"

# 3. a bulk load, then nothing: timed checkpoints let its xid go
q -c "ALTER SYSTEM SET leanstore.checkpoint_timeout = '1s'" -c "SELECT pg_reload_conf()" >/dev/null
q -c "SET leanstore.bulk_load_rows = 1" \
	-c "INSERT INTO keep SELECT g, g FROM generate_series(301, 400) g" >/dev/null
load=$(q -c "SELECT max(xmin::text::bigint) FROM keep")
q -c "VACUUM FREEZE keep" >/dev/null
ls_expect "part 3: right after the load relfrozenxid stays at or before it" "t" \
	"$(q -c "SELECT relfrozenxid::text::bigint <= $load FROM pg_class WHERE relname = 'keep'")"
burn
advanced=
for _ in $(seq 1 60); do
	q -c "VACUUM FREEZE keep" >/dev/null
	advanced=$(q -c "SELECT relfrozenxid::text::bigint > $load FROM pg_class WHERE relname = 'keep'")
	[ "$advanced" = t ] && break
	sleep 0.5
done
ls_expect "part 3: once checkpoints ran, relfrozenxid passes it" "t" "$advanced"
freeze_all
ls_expect "part 3: clog drops the segment" "gone" "$(segment 2)"
ls_kill9 "$dir/data"
ls_restart
ls_expect "part 3: after another kill -9, the table recovered" "400|80200|t" \
	"$(q -c "SELECT count(*), sum(v), leanstore_verify('keep') FROM keep")"
ls_expect "heap's table too" "300|45150" "$(q -c "SELECT count(*), sum(v) FROM h")"
ls_test_verdict
