#!/usr/bin/env bash
# test/recovery/ckpt_terminate.sh: a leanstore checkpoint whose session is
# terminated (pg_terminate_backend: a FATAL, which runs no PG_CATCH) lets
# the next checkpoint run.  Until session 29 the running flag stayed set:
# leanstore_checkpoint() returned false, CHECKPOINT waited until canceled,
# and no checkpoint ran until a restart (the log grew past max_log_size).
# Run by test/run (suite crash, as root; the server runs as postgres).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin ckpt_terminate
ls_test_conf <<EOC
shared_preload_libraries = 'leanstore'
leanstore.checkpoint_timeout = '1h'
autovacuum = off
EOC
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
q() { (cd "$dir" && ls_as_pg timeout 60 "$LS_PG_BIN/psql" -X -q -At -d postgres "$@" 2>&1); }
q -c "CREATE EXTENSION leanstore" \
	-c "CREATE TABLE t (id int PRIMARY KEY, v int) USING leanstore" \
	-c "INSERT INTO t SELECT g, g FROM generate_series(1, 1000) g" >/dev/null || exit 1
before=$(q -c "SELECT checkpoints FROM leanstore_stats()")
# the checkpoint pauses 3 s inside; its session is terminated meanwhile
q -c "SET leanstore.debug_checkpoint_pause = 3000" -c "SELECT leanstore_checkpoint()" \
	>"$dir/c.out" 2>&1 &
cpid=$!
for _ in $(seq 1 100); do
	grep -q "leanstore pauses" "$dir/server.log" && break
	sleep 0.1
done
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE query LIKE '%leanstore_checkpoint()%' AND pid <> pg_backend_pid()" >/dev/null
wait "$cpid"
ls_expect "the checkpoint's session was terminated" "t" \
	"$(grep -q "terminating connection due to administrator command" "$dir/c.out" && echo t)"
ls_expect "the next checkpoint runs" "t" "$(q -c "SELECT leanstore_checkpoint()")"
ls_expect "CHECKPOINT does not wait" "CHECKPOINT" \
	"$(q -c "SET statement_timeout = '20s'" -c "CHECKPOINT" | grep -v '^SET$'; echo CHECKPOINT)"
ls_expect "both counted" "2" \
	"$(q -c "SELECT checkpoints - $before FROM leanstore_stats()")"
ls_expect "writes go on" "1000|500500|t" \
	"$(q -c "UPDATE t SET v = v WHERE id = 1" -c "SELECT count(*), sum(v), leanstore_verify('t') FROM t" | grep -v '^UPDATE')"
ls_test_verdict
