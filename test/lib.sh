# Shared shell functions for test/run and bench/run (sourced, not executed).
#
#   ls_require_root            stop unless running as root
#   ls_install_packages P...   apt-get install the Debian packages that are missing
#   ls_build_install           make + make install (as root)
#   ls_scratch_dir NAME        a fresh directory owned by postgres, in $LS_SCRATCH
#   ls_as_pg CMD...            run a command as the unprivileged postgres user
#   ls_cluster_start DIR CONF  initdb + start a throwaway cluster in DIR (socket in DIR)
#   ls_cluster_stop DIR        stop it
#   ls_cleanup                 kill every server started from a scratch dir (trap)
#   ls_expect WHAT WANT GOT    one check of a scripted test ($LS_TEST), fail=1 if not met
#   ls_wait_up DIR             wait until DIR's server is back after its crash restart
#
# Every server this file starts lives under a scratch directory created by
# ls_scratch_dir; ls_cleanup stops exactly those (by the pid in postmaster.pid).

LS_PG_VERSION=15
LS_PG_BIN=/usr/lib/postgresql/$LS_PG_VERSION/bin
LS_PGXS_DIR=/usr/lib/postgresql/$LS_PG_VERSION/lib/pgxs
LS_PG_USER=postgres

# LS_PRIVATE_ROOT=DIR: install leanstore into a private copy of the
# PostgreSQL installation under DIR (created on first use) and run every
# server, pg_regress and client from there, instead of `make install` into
# /usr.  Two working trees can then test at the same time without replacing
# each other's library.  Unset (the default, and what CI does): the system
# installation.
if [ -n "${LS_PRIVATE_ROOT:-}" ]; then
	LS_PRIVATE_ROOT=$(realpath -m "$LS_PRIVATE_ROOT")
	LS_PG_BIN=$LS_PRIVATE_ROOT$LS_PG_BIN
	LS_PGXS_DIR=$LS_PRIVATE_ROOT$LS_PGXS_DIR
fi
LS_PG_REGRESS=$LS_PGXS_DIR/src/test/regress/pg_regress
LS_PG_ISOLATION_REGRESS=$LS_PGXS_DIR/src/test/isolation/pg_isolation_regress
LS_SCRATCH_DIRS=()
LS_JOBS=$(nproc 2>/dev/null || echo 2)

ls_log() { printf '==> %s\n' "$*"; }
ls_die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

ls_require_root() {
	[ "$(id -u)" -eq 0 ] || ls_die "run this as root (it installs packages and runs PostgreSQL as the postgres user)"
}

# Installs the given Debian packages unless dpkg already has them.
# apt-get update runs only when something is missing.
ls_install_packages() {
	local missing=() p
	for p in "$@"; do
		if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
			missing+=("$p")
		fi
	done
	if [ ${#missing[@]} -eq 0 ]; then
		ls_log "packages: all present ($*)"
		return 0
	fi
	ls_log "packages: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q || return 1
	apt-get install -y -q --no-install-recommends "${missing[@]}" || return 1
}

# What both scripts need on a bare Debian 12.
LS_BASE_PACKAGES=(build-essential postgresql-15 postgresql-server-dev-15 postgresql-client-15
	liburing-dev libcmocka-dev)

# ls_build_install: make + install.  LS_BUILD_ASSERTS=1 builds the asserting
# flavour (LS_ASSERT in the core, Assert in the glue; test/run sets it);
# unset, the release flavour (bench/run).
ls_build_install() {
	local flavour=()
	[ -n "${LS_BUILD_ASSERTS:-}" ] && flavour=(LS_ASSERTS=1)
	# objects of the other flavour are rebuilt by the Makefile (its stamp)
	ls_log "build: make -j$LS_JOBS ${flavour[*]}"
	make -j"$LS_JOBS" "${flavour[@]}" || return 1
	if [ -n "${LS_PRIVATE_ROOT:-}" ]; then
		ls_private_root_prepare || return 1
		ls_log "install: make install DESTDIR=$LS_PRIVATE_ROOT"
		make install DESTDIR="$LS_PRIVATE_ROOT" "${flavour[@]}" || return 1
	else
		ls_log "install: make install"
		make install "${flavour[@]}" || return 1
	fi
}

# ls_check_flavours: after ls_build_install, make in the same flavour has
# no object to compile and make in the other flavour recompiles every one
# (dry runs: objects built with and without LS_ASSERTS never mix).
ls_check_flavours() {
	local same=() other=(LS_ASSERTS=1) all n_same n_other
	if [ -n "${LS_BUILD_ASSERTS:-}" ]; then
		same=(LS_ASSERTS=1)
		other=()
	fi
	all=$(find src -name '*.c' | wc -l)
	n_same=$(make -n "${same[@]}" 2>/dev/null | grep -cE -- '-c -o src/[a-z]+/[a-z_0-9]+\.o( |$)')
	n_other=$(make -n "${other[@]}" 2>/dev/null | grep -cE -- '-c -o src/[a-z]+/[a-z_0-9]+\.o( |$)')
	if [ "$n_same" -ne 0 ] || [ "$n_other" -ne "$all" ]; then
		echo "flavours: make would compile $n_same objects again and $n_other of $all in the other flavour"
		return 1
	fi
}

# ls_bench_setup NAME SKIP_BUILD: what every bench/ script starts with:
# root, the cleanup traps, $OUT (bench/out) and, unless SKIP_BUILD is 1,
# make + install with the log in $OUT/NAME-build.log.
ls_bench_setup() {
	local log
	ls_require_root
	trap ls_cleanup EXIT
	trap 'exit 130' INT TERM
	OUT=${OUT:-$REPO/bench/out}
	mkdir -p "$OUT"
	[ "${2:-0}" = 1 ] && return 0
	log=$OUT/$1-build.log
	ls_build_install >"$log" 2>&1 || { tail -n 40 "$log"; ls_die "build failed ($log)"; }
}

# The private copy of /usr/lib/postgresql/N and /usr/share/postgresql/N
# (relocatable: its pg_config, pg_regress and postgres find their own
# directories), made once.
ls_private_root_prepare() {
	local r=$LS_PRIVATE_ROOT
	[ -x "$LS_PG_BIN/postgres" ] && return 0
	ls_log "private root: copying the PostgreSQL installation into $r"
	mkdir -p "$r/usr/lib/postgresql" "$r/usr/share/postgresql" || return 1
	cp -a "/usr/lib/postgresql/$LS_PG_VERSION" "$r/usr/lib/postgresql/" || return 1
	cp -a "/usr/share/postgresql/$LS_PG_VERSION" "$r/usr/share/postgresql/" || return 1
	chmod 755 "$r"
}

# Arguments for `make installcheck*` so it uses the private root's
# pg_regress and server (nothing without LS_PRIVATE_ROOT).
ls_make_pg_config_args() {
	[ -n "${LS_PRIVATE_ROOT:-}" ] && echo "PG_CONFIG=$LS_PG_BIN/pg_config"
	return 0
}

# ls_scratch_dir NAME: creates an empty directory that the postgres user owns
# and sets LS_SCRATCH to it; ls_cleanup removes it. Call it in the main shell,
# not in $(...) or a pipeline: the directory must be registered there.
ls_scratch_dir() {
	local d
	d=$(mktemp -d /tmp/leanstore-"${1:-run}".XXXXXX) || return 1
	chown "$LS_PG_USER": "$d"
	chmod 755 "$d"
	LS_SCRATCH_DIRS+=("$d")
	LS_SCRATCH=$d
}

ls_as_pg() {
	runuser -u "$LS_PG_USER" -- env PATH="$LS_PG_BIN:$PATH" "$@"
}

# Kills the servers started under our scratch directories (pid from
# postmaster.pid), then removes the directories unless LS_KEEP_SCRATCH=1.
ls_cleanup() {
	local d pidfile pid
	for d in "${LS_SCRATCH_DIRS[@]}"; do
		[ -d "$d" ] || continue
		while IFS= read -r pidfile; do
			pid=$(head -n1 "$pidfile" 2>/dev/null)
			if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
				echo "cleanup: stopping leftover server $pid ($(dirname "$pidfile"))" >&2
				kill -QUIT "$pid" 2>/dev/null
				sleep 1
				kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
			fi
		done < <(find "$d" -name postmaster.pid 2>/dev/null)
		if [ "${LS_KEEP_SCRATCH:-0}" != 1 ]; then
			rm -rf "$d"
		else
			echo "cleanup: kept $d" >&2
		fi
	done
}

# Picks a TCP port nobody listens on (the server listens on a private socket
# directory only, but the port number names the socket and lock files).
ls_free_port() {
	local p
	for p in $(seq 55432 55532); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && [ ! -e "/tmp/.s.PGSQL.$p" ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# ls_cluster_start DIR CONF_FILE: initdb in DIR/data, append CONF_FILE to
# postgresql.conf, start with the socket in DIR. Sets PGHOST/PGPORT exports.
# LS_INITDB_ARGS adds initdb options (e.g. -k for data checksums).
ls_cluster_start() {
	local dir=$1 conf=$2 port
	port=$(ls_free_port) || ls_die "no free port"
	# shellcheck disable=SC2086
	ls_as_pg "$LS_PG_BIN/initdb" -D "$dir/data" --no-locale -E UTF8 -A trust ${LS_INITDB_ARGS:-} >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log"; return 1; }
	cat "$conf" >>"$dir/data/postgresql.conf"
	printf "listen_addresses = ''\nunix_socket_directories = '%s'\nport = %s\n" "$dir" "$port" >>"$dir/data/postgresql.conf"
	if ! ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 120 start >/dev/null; then
		tail -n 40 "$dir/server.log"
		return 1
	fi
	export PGHOST=$dir PGPORT=$port PGUSER=$LS_PG_USER
}

ls_cluster_stop() {
	ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$1/data" -m fast -w stop >/dev/null 2>&1 || true
}

# ls_test_begin NAME: what every scripted test in test/recovery starts with:
# root, the cleanup trap, LS_TEST=NAME, fail=0 (the verdict ls_expect sets)
# and a scratch directory, $dir.  Call it in the main shell.
ls_test_begin() {
	ls_require_root
	trap ls_cleanup EXIT
	LS_TEST=$1
	fail=0
	ls_scratch_dir "${1//_/-}" || exit 1
	dir=$LS_SCRATCH
}

# ls_test_conf: the server settings on stdin become $dir/test.conf (the
# scratch directory then belongs to the postgres user again).
ls_test_conf() {
	cat >"$dir/test.conf"
	chown -R "$LS_PG_USER": "$dir"
}

# ls_test_psql DB ARGS...: psql on the test's cluster in $dir, values
# unaligned, stopping at the first error, stderr with stdout.
ls_test_psql() {
	local db=$1
	shift
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@" 2>&1)
}

# ls_expect WHAT WANT GOT: one check of the scripted test $LS_TEST: prints
# "ok", or both values and sets fail=1 (the script's verdict).
ls_expect() {
	if [ "$3" != "$2" ]; then
		printf '%s: %s: want [%s] got [%s]\n' "$LS_TEST" "$1" "$2" "$3"
		fail=1
	else
		echo "$LS_TEST: $1: ok"
	fi
}

# ls_test_verdict: the scripted test's last line ("ok", or "FAILED" and the
# server log's tail) and its exit status.
ls_test_verdict() {
	if [ "$fail" = 0 ]; then
		echo "$LS_TEST: ok"
	else
		echo "$LS_TEST: FAILED"
		tail -n 30 "$dir/server.log"
	fi
	exit "$fail"
}

# ls_checksums_check: stop the test's cluster, then pg_checksums --check.
ls_checksums_check() {
	ls_pgctl -m fast stop || echo "$LS_TEST: stop failed"
	ls_as_pg "$LS_PG_BIN/pg_checksums" --check -D "$dir/data" >"$dir/checksums.log" 2>&1 ||
		{ echo "$LS_TEST: pg_checksums failed"; cat "$dir/checksums.log"; fail=1; }
}

# ls_kill9 DATA: kill -9 of the postmaster of the cluster in DATA and of
# its children at once (as a power loss would stop them), then wait until
# they are gone (20 s at most) and drop the stale pid file (a dead
# postmaster may linger as a zombie, and a start would refuse it).
ls_kill9() {
	local pm pids
	pm=$(head -n1 "$1/postmaster.pid" 2>/dev/null) || return 1
	pids=$(ps -o pid= --ppid "$pm" 2>/dev/null)
	# shellcheck disable=SC2086
	kill -KILL "$pm" $pids 2>/dev/null
	for _ in $(seq 1 200); do
		# shellcheck disable=SC2086
		kill -0 "$pm" $pids 2>/dev/null || break
		sleep 0.1
	done
	rm -f "$1/postmaster.pid"
}

# ls_pgctl ARGS...: pg_ctl on the test's cluster in $dir, quietly;
# ls_crash: an immediate shutdown (as kill -9: no clean shutdown of any
# process); ls_restart: start it again, or end the test with its log.
ls_pgctl() { (cd "$dir" && ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 120 "$@" >/dev/null 2>&1); }
ls_crash() { ls_pgctl -m immediate stop; }
ls_restart() { ls_pgctl start || { echo "$LS_TEST: start failed"; tail -n 30 "$dir/server.log"; exit 1; }; }

# ls_sessions_open NAME...: a psql per NAME that keeps its session, reading
# the fifo $dir/NAME.in, output in $dir/NAME.out (it stops at an error).
# ls_session NAME SQL: run SQL in that session and wait until it is done
# (30 s at most, else fail=1 and its output).  ls_sessions_close NAME...
ls_sessions_open() {
	local s
	for s in "$@"; do
		mkfifo "$dir/$s.in" && chown "$LS_PG_USER": "$dir/$s.in"
		(cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d postgres \
			-f "$dir/$s.in" >"$dir/$s.out" 2>&1 &)
		eval "exec {LS_SESSION_FD_$s}>\"\$dir/\$s.in\""
	done
}
ls_session() {
	local fdvar=LS_SESSION_FD_$1 tag=done-$RANDOM
	printf '%s\n\\echo %s\n' "$2" "$tag" >&"${!fdvar}"
	for _ in $(seq 1 600); do grep -q "$tag" "$dir/$1.out" && return 0; sleep 0.05; done
	echo "$LS_TEST: session $1 did not finish: $2"
	cat "$dir/$1.out"
	fail=1
}
ls_sessions_close() {
	local s
	for s in "$@"; do eval "exec {LS_SESSION_FD_$s}>&-"; done
}

# ls_ios_verdict TABLE VISIBLE: VACUUM TABLE (an int column id, the
# primary key), then "rows|index-only count|plan node": rows is the count of
# rows where VISIBLE holds (a sequential scan), the index-only count is
# count(*) WHERE id > 0 with sequential and bitmap scans off.  They differ
# when VACUUM set visibility map bits over index entries of lost rows.
ls_ios_verdict() {
	ls_test_psql postgres -c "VACUUM $1" -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" \
		-c "SELECT (SELECT count(*) FROM $1 x WHERE $2), count(*) FROM $1 WHERE id > 0" \
		-c "EXPLAIN (COSTS OFF) SELECT count(*) FROM $1 WHERE id > 0" |
		sed -n '1p;3p' | sed 's/^ *->  //; s/ using.*//' | paste -sd'|'
}

# ls_wait_up DIR: waits until the server of the cluster in DIR accepts
# connections again (after PostgreSQL's own crash restart); exits if not.
ls_wait_up() {
	for _ in $(seq 1 300); do
		(cd "$1" && ls_as_pg "$LS_PG_BIN/psql" -X -q -At -d postgres -c "SELECT 1") >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "$LS_TEST: server did not come back"
	tail -n 30 "$1/server.log"
	exit 1
}
