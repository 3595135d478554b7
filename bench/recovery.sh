#!/usr/bin/env bash
# bench/recovery.sh: crash recovery of leanstore against heap (bench/run
# recovery runs it; as root).
#
# Per pgbench scale and engine one throwaway cluster (the settings of
# bench/run's shared clusters: synchronous_commit = on, no checkpoint of
# either engine during a run), loaded once with pgbench -i into database bench (for leanstore its
# default_table_access_method is leanstore, so all four pgbench tables are
# leanstore tables). Then RUNS rounds, heap and leanstore interleaved, each:
#   1. start the cluster cleanly (a clean shutdown before: heap's redo and
#      leanstore's log both start at the round's beginning);
#   2. pgbench tpcb-like with RC_CLIENTS clients for RC_SECONDS seconds;
#      just before the kill: the bytes leanstore's log grew by in the run
#      (leanstore_stats().log_end then minus at the start) and the WAL
#      written since the start (pg_current_wal_insert_lsn());
#   3. kill -9 of the postmaster and every child (pgbench still running);
#   4. pg_ctl start, and the seconds until the first
#      SELECT abalance FROM pgbench_accounts WHERE aid = 1 succeeds
#      (restart_s: PostgreSQL's redo, and for leanstore its log replay,
#      which sessions wait for);
#   5. from the server log: PostgreSQL's fsync of the data directory
#      before its redo (sync_s: "was interrupted" to "automatic recovery
#      in progress") and its "redo done ... elapsed" (redo_s);
#      leanstore's recovery_us / records / rows from leanstore_stats(),
#      the committed transactions of the round (new pgbench_history rows)
#      and pgbench's invariant (sum of abalance equal in accounts,
#      branches, tellers and history): a difference is a failed round;
#   6. clean shutdown.
# Results: bench/out/results/recovery.tsv (.meta), rendered by
# bench/report.py into bench/out/report.md; logs in bench/out/logs/recovery/.
#
# Environment (full / BENCH_QUICK=1): RC_SECONDS (300 / 30), RC_SCALES
# ("10 50" / "1 5"), RC_RUNS (BENCH_RUNS, else 3 / 2), RC_CLIENTS (4),
# RC_TIMEOUT (900: seconds a restart may take before it counts as failed),
# BENCH_SHARED_BUFFERS (1GB), BENCH_HOT_MEMORY (4GB), RC_NO_BUILD=1 (skip
# make install), RC_NO_REPORT=1 (do not render the report), LS_PRIVATE_ROOT.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
OUT=${OUT:-$REPO/bench/out}
# shellcheck source=test/lib.sh
. "$REPO/test/lib.sh"
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

QUICK=${BENCH_QUICK:-0}
q() { if [ "$QUICK" = 1 ]; then echo "$2"; else echo "$1"; fi; }	# q FULL QUICK
SECONDS_RUN=${RC_SECONDS:-$(q 300 30)}
SCALES=${RC_SCALES:-$(q "10 50" "1 5")}
RUNS=${RC_RUNS:-${BENCH_RUNS:-$(q 3 2)}}
CLIENTS=${RC_CLIENTS:-4}
TIMEOUT=${RC_TIMEOUT:-900}
SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-1GB}
HOT_MEMORY=${BENCH_HOT_MEMORY:-4GB}
L=$OUT/logs/recovery

ls_bench_setup recovery "${RC_NO_BUILD:-0}"
trap bench_cleanup EXIT
mkdir -p "$L"
bench_results_reset recovery

CONF=$L/cluster.conf
cat >"$CONF" <<EOF
shared_preload_libraries = 'leanstore'
shared_buffers = '$SHARED_BUFFERS'
leanstore.hot_memory = '$HOT_MEMORY'
synchronous_commit = on
max_connections = 100
max_wal_size = '4GB'
checkpoint_timeout = '30min'
leanstore.checkpoint_timeout = '30min'
leanstore.max_log_size = '4GB'
autovacuum = off
EOF
bench_meta recovery "cluster settings" "$(grep -v '^#' "$CONF" | sed 's/ = /=/' | paste -sd ' ') (one cluster per engine and scale)"
bench_meta recovery "load before the crash" "pgbench tpcb-like, -c $CLIENTS -j $((CLIENTS < 2 ? CLIENTS : 2)), ${SECONDS_RUN}s after a clean start, then kill -9 of every server process while it runs"
bench_meta recovery "restart_s" "pg_ctl start until the first SELECT abalance FROM pgbench_accounts WHERE aid = 1 succeeds (polled every 0.05 s); includes PostgreSQL's redo and, for leanstore, its log replay"
bench_meta recovery "checkpoints" "none during a run (checkpoint_timeout and leanstore.checkpoint_timeout 30min, max_wal_size and leanstore.max_log_size 4GB): heap's redo and leanstore's replay both start at the clean start"
bench_meta recovery "scales" "$SCALES"
bench_meta recovery "runs per engine" "$RUNS (interleaved heap, leanstore, heap, ...)"

declare -A DIR=() PORT=()
# rsql ENGINE ARGS...: psql on that engine's cluster, database bench
rsql() { local e=$1; shift; bench_psql "${DIR[$e]}" "${PORT[$e]}" bench "$@"; }

start_clean() {	# ENGINE
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "${DIR[$1]}/data" -l "${DIR[$1]}/server.log" -w -t 600 start >/dev/null
}

# kill -9 of the postmaster and its children at once, until they are gone
kill_cluster() {	# ENGINE
	ls_kill9 "${DIR[$1]}/data"
}

# the pgbench invariant: "ok" or what differs
sums_check() {	# ENGINE
	rsql "$1" -At -c "SELECT CASE WHEN a = b AND b = t AND t = h THEN 'ok'
		ELSE format('sum(abalance) differs: accounts %s branches %s tellers %s history %s', a, b, t, h) END
		FROM (SELECT (SELECT sum(abalance) FROM pgbench_accounts) a, (SELECT sum(bbalance) FROM pgbench_branches) b,
		             (SELECT sum(tbalance) FROM pgbench_tellers) t, (SELECT coalesce(sum(delta), 0) FROM pgbench_history) h) s" 2>&1
}

# one round: RUN ENGINE SCALE
round() {
	local i=$1 e=$2 s=$3 v="$3" d=${DIR[$2]} log h0 lsn0 le0 pre bench off t0 t1 ok rs chk h1 redo sync wal logb rsec rrec rrows what
	log=$L/s$s-$e-$i
	start_clean "$e" || { bench_record recovery "$v" "$e" "$i" restart_s NA FAIL "clean start failed: $(bench_first_error "$d/server.log")"; return 1; }
	h0=$(rsql "$e" -At -c "SELECT count(*) FROM pgbench_history") || return 1
	lsn0=$(rsql "$e" -At -c "SELECT pg_current_wal_insert_lsn()") || return 1
	# leanstore's log: its end position (bytes) now and before the kill
	# (leanstore_stats().log_bytes stays 0: it adds a header length that
	# the append does not fill in)
	le0=0
	[ "$e" = leanstore ] && { le0=$(rsql "$e" -At -c "SELECT log_end FROM leanstore_stats()") || return 1; }
	ls_as_pg "$LS_PG_BIN/pgbench" -h "$d" -p "${PORT[$e]}" -n -c "$CLIENTS" -j "$((CLIENTS < 2 ? CLIENTS : 2))" \
		-T "$((SECONDS_RUN + 600))" bench >"$log-pgbench.log" 2>&1 &
	bench=$!
	sleep "$SECONDS_RUN"
	# what the run wrote, read just before the kill (pgbench still running)
	if [ "$e" = leanstore ]; then
		pre=$(rsql "$e" -At -F ' ' -c "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn0'), log_end - $le0, log_records, log_commits FROM leanstore_stats()")
	else
		pre=$(rsql "$e" -At -F ' ' -c "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn0')")
	fi
	kill_cluster "$e"
	wait "$bench" 2>/dev/null
	# the kill makes pgbench's clients fail with connection errors; an SQL
	# ERROR before it is a failure of the engine under load
	if grep -q 'ERROR:' "$log-pgbench.log"; then
		bench_record recovery "$v" "$e" "$i" load NA FAIL "pgbench before the kill: $(grep -m1 'ERROR:' "$log-pgbench.log" | cut -c1-240)"
	fi
	if [ -z "$pre" ]; then
		bench_record recovery "$v" "$e" "$i" restart_s NA FAIL "the server did not answer before the kill: $(bench_first_error "$d/server.log")"
		return 1
	fi
	off=$(stat -c %s "$d/server.log")
	t0=$(date +%s.%N)
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$d/data" -l "$d/server.log" -W start >/dev/null 2>&1
	ok=
	while :; do
		# (a session waits while leanstore replays its log: bounded too)
		if timeout "$TIMEOUT" runuser -u "$LS_PG_USER" -- "$LS_PG_BIN/psql" -X -q -At -h "$d" -p "${PORT[$e]}" -d bench \
			-c "SELECT abalance FROM pgbench_accounts WHERE aid = 1" >/dev/null 2>&1; then
			ok=1
			break
		fi
		[ "$(awk -v a="$t0" -v b="$(date +%s.%N)" -v m="$TIMEOUT" 'BEGIN { print (b - a > m) }')" = 1 ] && break
		sleep 0.05
	done
	t1=$(date +%s.%N)
	tail -c +"$((off + 1))" "$d/server.log" >"$log-server.log"
	if [ -z "$ok" ]; then
		bench_record recovery "$v" "$e" "$i" restart_s NA FAIL "pgbench_accounts did not answer within ${TIMEOUT}s of the restart: $(bench_first_error "$log-server.log")"
		return 1
	fi
	rs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	bench_record recovery "$v" "$e" "$i" restart_s "$rs" ok ""
	read -r wal logb _ <<<"$pre"
	bench_record recovery "$v" "$e" "$i" wal_bytes "$wal" ok ""
	redo=$(sed -n 's/.*redo done at .*elapsed: \([0-9.]*\) s.*/\1/p' "$log-server.log" | tail -n1)
	# PostgreSQL fsyncs the whole data directory after a crash, before its
	# redo (recovery_init_sync_method = fsync): the seconds from "was
	# interrupted" to "automatic recovery in progress"
	sync=$(awk '/database system was interrupted/ { a = $2 } /automatic recovery in progress/ { b = $2 }
		function sec(t, x) { split(t, x, ":"); return x[1] * 3600 + x[2] * 60 + x[3] }
		END { if (a != "" && b != "") { d = sec(b) - sec(a); if (d < 0) d += 86400; printf "%.3f", d } }' "$log-server.log")
	if [ -n "$sync" ]; then
		bench_record recovery "$v" "$e" "$i" sync_s "$sync" ok ""
	fi
	if [ -n "$redo" ]; then
		bench_record recovery "$v" "$e" "$i" redo_s "$redo" ok ""
	else
		bench_record recovery "$v" "$e" "$i" redo_s NA FAIL "no 'redo done' line in the server log after the crash"
	fi
	what=
	if [ "$e" = leanstore ]; then
		bench_record recovery "$v" "$e" "$i" log_bytes "$logb" ok ""
		read -r rsec rrec rrows _ <<<"$(rsql "$e" -At -F ' ' -c "SELECT round(recovery_us / 1e6, 3), recovery_records, recovery_rows, recovery_tables FROM leanstore_stats()")"
		if [ -n "${rrec:-}" ] && grep -q 'leanstore recovery replayed' "$log-server.log"; then
			bench_record recovery "$v" "$e" "$i" ls_recovery_s "$rsec" ok ""
			bench_record recovery "$v" "$e" "$i" ls_records "$rrec" ok ""
			bench_record recovery "$v" "$e" "$i" ls_rows "$rrows" ok ""
		else
			bench_record recovery "$v" "$e" "$i" ls_recovery_s NA FAIL "no leanstore recovery after the crash (no 'leanstore recovery replayed' line, or leanstore_stats() failed)"
		fi
		what="replay ${rsec:-?}s of ${rrec:-?} records, log $logb B,"
	fi
	h1=$(rsql "$e" -At -c "SELECT count(*) FROM pgbench_history")
	bench_record recovery "$v" "$e" "$i" txns "$((h1 - h0))" ok ""
	chk=$(sums_check "$e")
	if [ "$chk" = ok ]; then
		bench_record recovery "$v" "$e" "$i" check NA ok ""
	else
		bench_record recovery "$v" "$e" "$i" check NA FAIL "after the restart: $chk"
	fi
	printf '  recovery scale %-3s %-9s run %s: restart %ss (data directory sync %ss, redo %ss) %s WAL %s B, %s transactions; check %s\n' \
		"$s" "$e" "$i" "$rs" "${sync:-?}" "${redo:-?}" "$what" "$wal" "$((h1 - h0))" "$chk"
	bench_cluster_stop "$d"
}

STATUS=0
T0=$(date +%s)
for s in $SCALES; do
	for e in heap leanstore; do
		bench_cluster_start "recovery-$e-s$s" "$CONF" || ls_die "the $e cluster did not start"
		DIR[$e]=$BC_DIR PORT[$e]=$BC_PORT
		bench_psql "$BC_DIR" "$BC_PORT" postgres -c "CREATE DATABASE bench" || exit 1
		if [ "$e" = leanstore ]; then
			rsql "$e" -c "CREATE EXTENSION leanstore" -c "ALTER DATABASE bench SET default_table_access_method = leanstore" || exit 1
		fi
		ls_log "recovery: pgbench -i -s $s into the $e cluster"
		ls_as_pg "$LS_PG_BIN/pgbench" -h "$BC_DIR" -p "$BC_PORT" -i -q -s "$s" bench >"$L/init-$e-s$s.log" 2>&1 ||
			{ tail "$L/init-$e-s$s.log"; exit 1; }
		[ "$(rsql "$e" -At -c "SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
			WHERE c.relname LIKE 'pgbench\_%' AND c.relkind = 'r' AND a.amname = '$e'")" = 4 ] ||
			ls_die "the pgbench tables of the $e cluster are not $e tables"
		# the data size: heap's database after the load (leanstore's
		# files lag behind its memory until a clean shutdown)
		[ "$e" = heap ] && bench_record recovery "$s" "$e" 0 data_bytes "$(rsql "$e" -At -c "SELECT pg_database_size(current_database())")" ok ""
		bench_cluster_stop "$BC_DIR"
	done
	for i in $(seq 1 "$RUNS"); do
		for e in heap leanstore; do
			round "$i" "$e" "$s" || { STATUS=1; bench_cluster_stop "${DIR[$e]}"; }
		done
	done
	for e in heap leanstore; do
		bench_cluster_stop "${DIR[$e]}"
		rm -rf "${DIR[$e]:?}/data"
	done
done
if [ "${RC_NO_REPORT:-0}" != 1 ]; then
	# (under bench/run, its run_job records the job time)
	bench_meta recovery "job time" "$(( $(date +%s) - T0 ))s"
	"$BENCH_PY" "$REPO/bench/report.py" render "$OUT" | grep -E '^(RESULT recovery|# recovery)'
fi
exit $STATUS
