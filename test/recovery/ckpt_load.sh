#!/usr/bin/env bash
# test/recovery/ckpt_load.sh: leanstore checkpoints under pgbench's
# contention, and none while idle.
#  - pgbench tpcb-like with 48 clients on scale 3 (three branch rows that
#    some session is always updating): checkpoints (leanstore.
#    checkpoint_timeout = 2) finish during the load and the log stays
#    bounded. (Before: a row a running transaction writes is logged again
#    once that transaction ended, and three rounds of 1 ms polls almost
#    never met a branch row between two writers: no checkpoint finished
#    under the load, "leanstore checkpoint skipped: N rows stayed busy"
#    every few hundred ms, and the log grew by gigabytes a minute past
#    max_log_size.)
#  - Idle afterwards, checkpoints stop: none is due while nothing was
#    logged, also when logging the hot rows again alone passes half of
#    leanstore.max_log_size (here 32MB against about 30MB of hot rows),
#    except the one or two that move the log past the load's records, so
#    that relfrozenxid may pass their xids (src/pg/log.c, "The oldest xid
#    replay may ask clog about").
#    (Before: every checkpoint made the next one due at once; they ran back
#    to back for as long as the server ran.)
#  - kill -9 at the end: pgbench's sums agree after recovery.
# Run by test/run as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin ckpt_load
ls_test_conf <<EOF
shared_preload_libraries = 'leanstore'
leanstore.hot_memory = '128MB'
leanstore.checkpoint_timeout = 2
leanstore.max_log_size = '32MB'
max_connections = 80
synchronous_commit = on
autovacuum = off
EOF
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { ls_test_psql postgres "$@"; }
checkpoints() { q -c "SELECT checkpoints FROM leanstore_stats()"; }
log_mb() { du -sm "$dir/data/pg_leanstore" | cut -f1; }
q -c "CREATE EXTENSION leanstore" >/dev/null
(cd "$dir" && ls_as_pg env PGOPTIONS='-c default_table_access_method=leanstore' \
	"$LS_PG_BIN/pgbench" -i -s 3 -q postgres >"$dir/init.log" 2>&1) || { cat "$dir/init.log"; exit 1; }
ls_expect "pgbench's tables are leanstore tables" "4" \
	"$(q -c "SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname LIKE 'pgbench_%' AND amname = 'leanstore'")"
q -c "SELECT leanstore_checkpoint()" >/dev/null
c0=$(checkpoints)
m0=$(log_mb)
(cd "$dir" && ls_as_pg "$LS_PG_BIN/pgbench" -c 48 -j 2 -T 20 postgres >"$dir/pgbench.log" 2>&1)
c1=$(checkpoints)
m1=$(log_mb)
grep -E "^tps|processed" "$dir/pgbench.log"
echo "ckpt_load: checkpoints during 20 s of load: $((c1 - c0)), log ${m0}MB -> ${m1}MB, skipped: $(grep -c "checkpoint skipped" "$dir/server.log")"
ls_expect "checkpoints finish under the load" yes "$([ $((c1 - c0)) -ge 2 ] && echo yes || echo no)"
ls_expect "the log stays bounded" yes "$([ "$m1" -lt 400 ] && echo yes || echo "no (${m1}MB)")"
sleep 2
c2=$(checkpoints)
sleep 6
c3=$(checkpoints)
ls_expect "idle: at most two checkpoints, to let the load's xids go" yes \
	"$([ $((c3 - c2)) -le 2 ] && echo yes || echo "no ($((c3 - c2)))")"
sleep 6
ls_expect "then no checkpoint while idle" "$c3" "$(checkpoints)"
sums() {
	q -c "SELECT (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT sum(bbalance) FROM pgbench_branches)
	         AND (SELECT sum(bbalance) FROM pgbench_branches) = (SELECT sum(tbalance) FROM pgbench_tellers)
	         AND (SELECT sum(tbalance) FROM pgbench_tellers) = (SELECT coalesce(sum(delta), 0) FROM pgbench_history)"
}
ls_expect "pgbench's sums agree" "t" "$(sums)"
ls_crash
ls_restart
ls_expect "pgbench's sums agree after kill -9" "t" "$(sums)"
ls_expect "leanstore_verify after kill -9" "t" "$(q -c "SELECT bool_and(leanstore_verify(c.oid)) FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE amname = 'leanstore'")"
if [ "$fail" != 0 ]; then
	tail -n 40 "$dir/server.log"
	echo "ckpt_load: FAILED"
	exit 1
fi
ls_cluster_stop "$dir"
echo "ckpt_load: ok"
