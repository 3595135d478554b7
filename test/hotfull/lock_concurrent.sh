#!/usr/bin/env bash
# test/hotfull/lock_concurrent.sh: a row lock that went into a cold row's
# image (the hot tier was full) holds against other transactions.
# Session A fills the 32MB hot tier with its own versions, then locks cold
# rows FOR UPDATE (into their images) and keeps the transaction open;
# session B then must not change those rows -- it waits, or is told the
# tier is full, never succeeds -- while it may change other rows and reads
# the locked ones; once A commits, B's update goes through and no change is
# lost; another session's UPDATE without a lock timeout waits for A (it
# cannot migrate the row either) and then updates A's new version. Meanwhile four clients race INSERT ... ON CONFLICT DO NOTHING on the
# same new keys (one key per 10 ms): their speculative inserts go into the
# cold tree with their tokens, losers of a race kill theirs (super-delete)
# and skip the key; no key may end up twice.
# Run by test/run (suite hotfull, as root); $1: output file.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
ls_test_begin lock_concurrent
out=${1:-$(mktemp)}
cp "$HERE/tier32.conf" "$dir/test.conf"
chown -R "$LS_PG_USER": "$dir"
ls_cluster_start "$dir" "$dir/test.conf" || exit 1
P() { (cd "$dir" && ls_as_pg "$LS_PG_BIN/psql" -X -q -A -t -d postgres "$@" 2>&1); }
{
	P -c "CREATE EXTENSION leanstore" \
		-c "CREATE TABLE t (id int PRIMARY KEY, n int, pad text) USING leanstore" \
		-c "INSERT INTO t SELECT g, 0, repeat('c', 200) FROM generate_series(1, 100000) g" \
		-c "CREATE TABLE f (id int PRIMARY KEY, pad text) USING leanstore" \
		-c "INSERT INTO f SELECT g, repeat('a', 200) FROM generate_series(1, 20000) g" \
		-c "CREATE TABLE u (id bigint PRIMARY KEY, c int) USING leanstore" \
		-c "CREATE TABLE lt (id int PRIMARY KEY, n int, pad text) USING leanstore" \
		-c "ALTER TABLE lt ALTER pad SET STORAGE PLAIN" \
		-c "SET leanstore.bulk_load_rows = 10" \
		-c "INSERT INTO lt SELECT g, 0, repeat(chr(97 + g % 26), 2000) FROM generate_series(1, 200) g"
	# A: fill the tier, lock rows 50001..50100 in their images, hold 8 s
	P -c "BEGIN" \
		-c "SELECT 'A key-shared hot ' || count(*) FROM (SELECT id FROM t WHERE id BETWEEN 80001 AND 80100 FOR KEY SHARE) l" \
		-c "DO \$\$ BEGIN FOR i IN 1 .. 10 LOOP UPDATE f SET pad = repeat(chr(98 + i), 200); END LOOP; END \$\$" \
		-c "SELECT 'A locked ' || count(*) FROM (SELECT id FROM t WHERE id BETWEEN 50001 AND 50100 FOR UPDATE) l" \
		-c "SELECT 'A shared ' || count(*) FROM (SELECT id FROM t WHERE id BETWEEN 60001 AND 60100 FOR SHARE) l" \
		-c "SELECT 'A key-shared ' || count(*) FROM (SELECT id FROM t WHERE id BETWEEN 70001 AND 70100 FOR KEY SHARE) l" \
		-c "SELECT 'A key-shared long ' || count(*) FROM (SELECT id FROM lt WHERE id BETWEEN 171 AND 180 FOR KEY SHARE) l" \
		-c "SELECT 'A spilled: ' || (writes_spilled > 0) FROM leanstore_stats()" \
		-c "SELECT pg_sleep(30)" -c "UPDATE t SET n = n + 10 WHERE id BETWEEN 50001 AND 50100" \
		-c "COMMIT" >"$dir/a.log" 2>&1 &
	a=$!
	for _ in $(seq 1 120); do
		grep -q "A spilled" "$dir/a.log" 2>/dev/null && break
		sleep 0.5
	done
	# B while A holds the locks: the locked rows refuse (lock timeout or a
	# full tier), other cold rows and reads work
	r=$(P -c "SET lock_timeout = '1s'" -c "UPDATE t SET n = n + 1 WHERE id = 50050")
	case "$r" in
	*"lock timeout"* | *"hot tier is full"*) echo "B: update of a locked row refused" ;;
	*) echo "B: update of a locked row NOT refused: $r" ;;
	esac
	r=$(P -c "SET lock_timeout = '1s'" -c "SELECT id FROM t WHERE id = 50051 FOR SHARE NOWAIT")
	case "$r" in
	*"could not obtain lock"* | *"hot tier is full"*) echo "B: FOR SHARE NOWAIT of a locked row refused" ;;
	*) echo "B: FOR SHARE NOWAIT of a locked row NOT refused: $r" ;;
	esac
	P -c "SELECT 'B reads ' || count(*) FROM t WHERE id BETWEEN 50001 AND 50100"
	# share locks in the images share, as heap's do through a multixact:
	# B's FOR SHARE and KEY SHARE of rows A holds FOR SHARE do not wait
	# (NOWAIT), an update of one does
	P -c "SELECT 'B shares ' || count(*) FROM (SELECT id FROM t WHERE id BETWEEN 60001 AND 60100 FOR SHARE NOWAIT) s"
	P -c "BEGIN" -c "SELECT 'B key-shares ' || count(*) FROM (SELECT id FROM t WHERE id BETWEEN 60001 AND 60100 FOR KEY SHARE NOWAIT) s" \
		-c "SELECT 'B shares again ' || count(*) FROM (SELECT id FROM t WHERE id BETWEEN 60041 AND 60060 FOR SHARE NOWAIT) s" -c "COMMIT"
	r=$(P -c "SET lock_timeout = '1s'" -c "UPDATE t SET n = n + 1 WHERE id = 60050")
	case "$r" in
	*"lock timeout"* | *"hot tier is full"*) echo "B: update of a share-locked row refused" ;;
	*) echo "B: update of a share-locked row NOT refused: $r" ;;
	esac
	# no-key updates of rows A holds FOR KEY SHARE go through at once, as on
	# heap (a foreign key's check beside an update of the referenced row's
	# other columns): the update's lock joins A's in the image (a
	# multixact), and the new version, written into the cold tree at a new
	# rowid, carries A's lock
	r=$(P -c "SET lock_timeout = '1s'" -c "UPDATE t SET n = n + 1 WHERE id BETWEEN 70001 AND 70020")
	case "$r" in
	"") echo "B: no-key update of key-share-locked rows goes through" ;;
	*) echo "B: no-key update of key-share-locked rows: $r" ;;
	esac
	# ... but a key update or a delete of them (the new versions now) still
	# waits for A, as heap's new tuple keeps the locker in its xmax
	r=$(P -c "SET lock_timeout = '1s'" -c "UPDATE t SET id = -id WHERE id = 70010")
	case "$r" in
	*"lock timeout"*) echo "C: key update of an updated key-share-locked row waits" ;;
	*) echo "C: key update of an updated key-share-locked row: ${r:-went through}" ;;
	esac
	r=$(P -c "SET lock_timeout = '1s'" -c "DELETE FROM t WHERE id = 70011")
	case "$r" in
	*"lock timeout"*) echo "C: delete of an updated key-share-locked row waits" ;;
	*) echo "C: delete of an updated key-share-locked row: ${r:-went through}" ;;
	esac
	r=$(P -c "SET lock_timeout = '1s'" -c "UPDATE t SET id = -id WHERE id = 70090")
	case "$r" in
	*"lock timeout"*) echo "C: key update of a key-share-locked row waits" ;;
	*) echo "C: key update of a key-share-locked row: ${r:-went through}" ;;
	esac
	# another no-key update of the new versions goes through too
	r=$(P -c "SET lock_timeout = '1s'" -c "UPDATE t SET n = n + 1 WHERE id BETWEEN 70001 AND 70005")
	case "$r" in
	"") echo "B: second no-key update goes through" ;;
	*) echo "B: second no-key update: $r" ;;
	esac
	# the same for rows A locked before the tier filled up (hot rows): the
	# new versions go into the cold tree, carrying A's lock
	r=$(P -c "SET lock_timeout = '1s'" -c "UPDATE t SET n = n + 1 WHERE id BETWEEN 80001 AND 80010")
	case "$r" in
	"") echo "B: no-key update of key-share-locked hot rows goes through" ;;
	*) echo "B: no-key update of key-share-locked hot rows: $r" ;;
	esac
	r=$(P -c "SET lock_timeout = '1s'" -c "UPDATE t SET id = -id WHERE id = 80005")
	case "$r" in
	*"lock timeout"*) echo "C: key update of an updated key-share-locked hot row waits" ;;
	*) echo "C: key update of an updated key-share-locked hot row: ${r:-went through}" ;;
	esac
	# cold rows of more than one chunk (2 kB, stored plain) take locks,
	# deletes, updates and speculative inserts in their images too (an
	# empty xmax slot in their first chunk), as rows of one chunk do
	P -v ON_ERROR_STOP=1 -c "SELECT count(*) FROM (SELECT id FROM lt WHERE id BETWEEN 101 AND 120 FOR UPDATE) l" \
		-c "UPDATE lt SET n = n + 1 WHERE id BETWEEN 121 AND 140" \
		-c "DELETE FROM lt WHERE id BETWEEN 141 AND 150" \
		-c "INSERT INTO lt VALUES (160, 0, repeat('y', 2000)) ON CONFLICT (id) DO UPDATE SET n = lt.n + 100" \
		-c "INSERT INTO lt VALUES (1000, 7, repeat('z', 5000)) ON CONFLICT (id) DO NOTHING" \
		-c "INSERT INTO lt VALUES (1000, 8, 'dup') ON CONFLICT (id) DO NOTHING" \
		-c "UPDATE lt SET n = n + 1 WHERE id BETWEEN 171 AND 175" \
		-c "SELECT 'B: long rows written'" 2>&1 | grep -v "^20\$"
	r=$(P -c "SET lock_timeout = '1s'" -c "UPDATE lt SET id = -id WHERE id = 173")
	case "$r" in
	*"lock timeout"*) echo "C: key update of an updated key-share-locked long row waits" ;;
	*) echo "C: key update of an updated key-share-locked long row: ${r:-went through}" ;;
	esac
	# F's FOR KEY SHARE of rows E holds FOR NO KEY UPDATE goes in at once (as
	# on heap), and E's update of them then carries F's lock to the new
	# versions: G's key update of one waits for F
	(P -c "BEGIN" -c "SELECT count(*) FROM (SELECT id FROM t WHERE id BETWEEN 90001 AND 90010 FOR NO KEY UPDATE) l" \
		-c "SELECT pg_sleep(2)" -c "UPDATE t SET n = n + 1 WHERE id BETWEEN 90001 AND 90010" \
		-c "COMMIT" >"$dir/e.log" 2>&1) &
	e=$!
	sleep 1
	(P -c "BEGIN" -c "SELECT 'F: key-shares ' || count(*) || ' rows held for no key update' FROM (SELECT id FROM t WHERE id BETWEEN 90001 AND 90010 FOR KEY SHARE NOWAIT) l" \
		-c "SELECT pg_sleep(3)" -c "COMMIT" >"$dir/f.log" 2>&1) &
	f=$!
	wait "$e"
	grep -i "error" "$dir/e.log" | sed 's/^/E: /'
	r=$(P -c "SET lock_timeout = '1s'" -c "UPDATE t SET id = -id WHERE id = 90005")
	case "$r" in
	*"lock timeout"*) echo "G: key update of a row updated beside a key-share lock waits" ;;
	*) echo "G: key update of a row updated beside a key-share lock: ${r:-went through}" ;;
	esac
	wait "$f"
	grep -v "^BEGIN\|^COMMIT\|^\$" "$dir/f.log"
	# H's FOR SHARE of a row A holds FOR KEY SHARE (all along) and J FOR NO
	# KEY UPDATE (briefly) waits for J, whose lock conflicts with it, not
	# for A: once J commits it shares the row with A's lock
	(P -c "BEGIN" -c "SELECT count(*) FROM (SELECT id FROM t WHERE id = 70095 FOR NO KEY UPDATE) l" \
		-c "SELECT pg_sleep(2)" -c "COMMIT" >"$dir/j.log" 2>&1) &
	j=$!
	sleep 0.5
	P -c "SET lock_timeout = '6s'" \
		-c "SELECT 'H: waited for J only, shares with A: ' || count(*) FROM (SELECT id FROM t WHERE id = 70095 FOR SHARE) l"
	wait "$j"
	grep -i "error" "$dir/j.log" | sed 's/^/J: /'
	# D's update of a row B3 updates beside A's lock waits for B3 (the
	# updater in the image's multixact), then follows B3's committed update
	# to the new version and updates that (READ COMMITTED)
	(P -c "BEGIN" -c "UPDATE t SET n = n + 1 WHERE id BETWEEN 70031 AND 70035" \
		-c "SELECT pg_sleep(2)" -c "COMMIT" >"$dir/b3.log" 2>&1) &
	b3=$!
	sleep 1
	P -v ON_ERROR_STOP=1 -c "UPDATE t SET n = n + 1000 WHERE id = 70033" \
		-c "SELECT 'D: waited for the updater, then updated its version'"
	wait "$b3"
	grep -i "error" "$dir/b3.log" | sed 's/^/B3: /'
	# VACUUM while A's lock keeps the old images' multixacts running
	P -c "VACUUM t" -c "SELECT 'verify while locked: ' || leanstore_verify('t')"
	# B2 without a lock timeout: waits for A (no room to migrate the row),
	# then updates the version A's update made
	(P -v ON_ERROR_STOP=1 -c "UPDATE t SET n = n + 100 WHERE id = 50099" \
		-c "SELECT 'B2: waited, then updated'" >"$dir/b2.log" 2>&1) &
	b2=$!
	echo "INSERT INTO u SELECT (extract(epoch FROM clock_timestamp()) * 100)::bigint, :client_id ON CONFLICT DO NOTHING;" >"$dir/ups.sql"
	chown "$LS_PG_USER": "$dir/ups.sql"
	(cd "$dir" && ls_as_pg "$LS_PG_BIN/pgbench" -n -c 4 -j 2 -T 6 -f ups.sql postgres >"$dir/ups.log" 2>&1)
	grep -q "aborted\|ERROR" "$dir/ups.log" && { echo "upserts: a client failed"; grep -h "ERROR" "$dir/ups.log" | head -3; }
	P -c "SELECT CASE WHEN count(*) = count(DISTINCT id) AND count(*) > 10 THEN 'upserts: every key once' ELSE 'upserts: WRONG ' || count(*) || ' rows, ' || count(DISTINCT id) || ' keys' END FROM u"
	# how many went cold depends on what pack freed meanwhile: reported, not checked
	P -c "SELECT 'upserts: ' || cold_rows || ' images in the cold tree for ' || (SELECT count(*) FROM u) || ' rows (killed inserts stay until VACUUM)' FROM leanstore_table_stats('u')" >"$dir/ups.note"
	wait "$a"
	wait "$b2"
	cat "$dir/b2.log"
	cat "$dir/a.log" | grep -E "^A " | sed 's/^/  /'
	grep -i "error" "$dir/a.log" | sed 's/^/A: /'
	# after A's commit B changes the rows it could not change before
	P -c "UPDATE t SET n = n + 1 WHERE id BETWEEN 50001 AND 50100"
	# A's lock is gone with A: the key update and delete go through now
	P -c "UPDATE t SET id = -id WHERE id = 70010" -c "UPDATE t SET id = -id WHERE id = -70010" \
		-c "DELETE FROM t WHERE id = 70011" -c "INSERT INTO t VALUES (70011, 1, 'x')"
	P -c "SELECT 'sum ' || sum(n) || ' rows ' || count(*) FROM t"
	P -c "SET enable_seqscan = off" -c "SELECT 'index sum ' || sum(n) FROM t WHERE id BETWEEN 1 AND 100000"
	P -c "SET enable_seqscan = off" -c "SELECT 'upserts: index sees ' || (count(*) = (SELECT count(*) FROM u)) FROM u WHERE id > 0"
	P -c "SELECT 'long rows ' || count(*) || ' ' || sum(n) || ' ' || sum(length(pad)) FROM lt"
	P -c "SET enable_seqscan = off" -c "SELECT 'long rows by index ' || count(*) || ' ' || sum(n) || ' ' || sum(length(pad)) FROM lt WHERE id > 0"
	P -c "VACUUM t" -c "VACUUM u" -c "VACUUM lt" \
		-c "SELECT 'verify: ' || leanstore_verify('t') || ' ' || leanstore_verify('u') || ' ' || leanstore_verify('lt')"
} >"$out" 2>&1
cat "$out"
cat "$dir/ups.note"
ls_cluster_stop "$dir"
expected="B: update of a locked row refused
B: FOR SHARE NOWAIT of a locked row refused
B reads 100
B shares 100
B key-shares 100
B shares again 20
B: update of a share-locked row refused
B: no-key update of key-share-locked rows goes through
C: key update of an updated key-share-locked row waits
C: delete of an updated key-share-locked row waits
C: key update of a key-share-locked row waits
B: second no-key update goes through
B: no-key update of key-share-locked hot rows goes through
C: key update of an updated key-share-locked hot row waits
B: long rows written
C: key update of an updated key-share-locked long row waits
G: key update of a row updated beside a key-share lock waits
F: key-shares 10 rows held for no key update
H: waited for J only, shares with A: 1
D: waited for the updater, then updated its version
verify while locked: true
upserts: every key once
B2: waited, then updated
  A key-shared hot 100
  A locked 100
  A shared 100
  A key-shared 100
  A key-shared long 10
  A spilled: true
sum 2250 rows 100000
index sum 2250
upserts: index sees true
long rows 191 132 385000
long rows by index 191 132 385000
verify: true true true"
if [ "$(cat "$out")" = "$expected" ]; then
	echo "lock_concurrent: ok"
else
	echo "lock_concurrent: FAILED"
	grep -E "ERROR|PANIC|TRAP" "$dir/server.log" | head -n 20
	exit 1
fi
