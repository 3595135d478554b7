#!/usr/bin/env bash
# test/recovery/verify_corrupt.sh: leanstore_verify(regclass) on a table
# whose cold B+-tree (its main fork) was damaged on disk while the server
# was down reports it: ERRCODE_DATA_CORRUPTED naming the table, the detail
# saying what, never a crash or a hang; a full read of the table fails with
# an error naming the table too, an intact table beside it verifies, the
# server stays up.
# Two kinds of damage, one table each: bytes flipped in a tree page (its
# checksum no longer matches), and a node claiming another level under a
# valid checksum (only the tree's own checks can see it).  Run by test/run
# (suite restart) as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin verify_corrupt
q() { ls_test_psql postgres "$@"; }
# errors with their SQLSTATE; psql goes on after them
qe() { (cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -At -v VERBOSITY=verbose -d postgres "$@" 2>&1); }
printf "shared_preload_libraries = 'leanstore'\nleanstore.hot_memory = '64MB'\nleanstore.buffer_pool = '4MB'\nautovacuum = off\n" | ls_test_conf
ls_cluster_start "$dir" "$dir/test.conf" || exit 1

q -c "CREATE EXTENSION leanstore" >/dev/null || { echo "$LS_TEST: setup failed"; exit 1; }
for t in t1 t2 ok; do
	q -c "CREATE TABLE $t (id int PRIMARY KEY, v text) USING leanstore" \
		-c "INSERT INTO $t SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, 20000) g" \
		>/dev/null || { echo "$LS_TEST: setup failed"; exit 1; }
	ls_expect "$t verifies before the damage" t "$(q -c "SELECT leanstore_verify('$t')")"
done
f1=$dir/data/$(q -c "SELECT pg_relation_filepath('t1')")
f2=$dir/data/$(q -c "SELECT pg_relation_filepath('t2')")

# flip FILE BLOCK: invert 64 bytes in the middle of the block
flip() {
	local off=$(($2 * 8192 + 4000)) bytes
	bytes=$(od -An -v -t x1 -j "$off" -N 64 "$1" | tr -s ' \n' ' ')
	for b in $bytes; do printf '\\x%02x' $((0xff ^ 0x$b)); done | xargs -0 printf >"$dir/flip.bin"
	dd if="$dir/flip.bin" of="$1" bs=1 seek="$off" conv=notrunc status=none
}
# relevel FILE BLOCK: the B+-tree node in the block claims level 7, and the
# page checksum (CRC32C with both checksum fields zero; src/buffer/bm.c
# page_crc) is made valid again.  Page header 48 bytes (buffer.h
# ls_page_header: pg_checksum at 8, checksum at 24), then the node
# (btree.h ls_node_hdr: upper u64, level u16 at 56).  No data checksums on
# this cluster: pg_checksum stays 0.
relevel() {
	perl -e '
		my ($f, $blk) = @ARGV;
		open(my $h, "+<:raw", $f) or die "$f: $!";
		seek($h, $blk * 8192, 0); read($h, my $p, 8192) == 8192 or die "short read";
		substr($p, 56, 2) = pack("v", 7);
		substr($p, 8, 2) = "\0\0"; substr($p, 24, 4) = "\0\0\0\0";
		my @t; for my $i (0 .. 255) { my $c = $i;
			for (1 .. 8) { $c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) } $t[$i] = $c }
		my $crc = 0xFFFFFFFF;
		$crc = $t[($crc ^ $_) & 0xff] ^ ($crc >> 8) for unpack("C*", $p);
		substr($p, 24, 4) = pack("V", $crc ^ 0xFFFFFFFF);
		seek($h, $blk * 8192, 0); print $h $p; close($h) or die;' "$1" "$2"
}
blocks() { echo $(($(stat -c %s "$1") / 8192)); }

# a clean stop writes every row into the trees; damage them; start
ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || echo "stop failed"
b1=$(blocks "$f1")
b2=$(blocks "$f2")
ls_expect "the trees have several pages" yes "$([ "$b1" -gt 4 ] && [ "$b2" -gt 4 ] && echo yes || echo no)"
flip "$f1" $((b1 / 2))
relevel "$f2" $((b2 / 2))
ls_as_pg "$LS_PG_BIN/pg_ctl" -D "$dir/data" -w -t 120 start -l "$dir/server.log" >/dev/null 2>&1 || echo "start failed"

# check WHAT TABLE PATTERN: verify fails with XX001 naming the table and
# PATTERN in the detail; a full read fails with an error; nothing crashed
check() {
	local out
	out=$(qe -c "SELECT leanstore_verify('$2')")
	echo "$out" | sed 's/^/    /'
	ls_expect "$1: verify reports it (XX001, the table named)" 1 \
		"$(grep -c "^ERROR:  XX001: leanstore_verify found [0-9]* problems\? in table \"$2\"" <<<"$out")"
	ls_expect "$1: the detail says what" 1 "$(grep -c "^DETAIL:  cold tree: .*$3" <<<"$out")"
	out=$(qe -c "SELECT count(*), sum(length(v)) FROM $2")
	echo "$out" | sed 's/^/    /'
	ls_expect "$1: a full read fails with an error" 1 "$(grep -c '^ERROR:  XX' <<<"$out")"
	ls_expect "$1: the read error names the table" 1 "$(grep -c "^CONTEXT:  leanstore table \"$2\"" <<<"$out")"
	ls_expect "$1: the server is up" 1 "$(q -c "SELECT 1")"
	ls_expect "$1: no backend crashed" 0 "$(grep -c 'terminated by signal\|TRAP:\|PANIC' "$dir/server.log")"
}
check "flipped bytes" t1 "page checksum mismatch"
check "wrong level, valid checksum" t2 "corrupt"
ls_expect "an intact table verifies" t "$(q -c "SELECT leanstore_verify('ok')")"
ls_expect "and reads whole" 20000 "$(q -c "SELECT count(*) FROM ok")"
ls_cluster_stop "$dir"
ls_test_verdict
