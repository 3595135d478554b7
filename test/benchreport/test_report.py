"""Tests of bench/report.py: the client output parsers on real client logs
(fixtures/*.log, kept from pgbench 15, sysbench 1.0.20 and go-tpc v1.0.12
runs), and the report rendered from fixture results (fixtures/out/), whose
medians and ratios are worked out by hand below."""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(HERE, "fixtures")
REPORT = os.path.join(REPO, "bench", "report.py")
sys.path.insert(0, os.path.join(REPO, "bench"))

import report  # noqa: E402


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


def png_size(path):
    """(width, height) of a PNG, checking its signature and IHDR chunk."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise AssertionError("%s is not a PNG" % path)
    return struct.unpack(">II", head[16:24])


class ParsePgbench(unittest.TestCase):
    def test_select_only(self):
        self.assertAlmostEqual(report.parse_pgbench(fixture("pgbench-select.log")), 27522.825565)

    def test_tpcb(self):
        self.assertAlmostEqual(report.parse_pgbench(fixture("pgbench-tpcb.log")), 2449.294687)

    def test_custom_script(self):
        self.assertAlmostEqual(report.parse_pgbench(fixture("pgbench-ycsb.log")), 30821.16825)

    def test_aborted_run_is_a_failure_with_the_error(self):
        # the log has a tps line, but clients aborted on the full hot tier
        with self.assertRaises(report.ParseError) as cm:
            report.parse_pgbench(fixture("pgbench-hotfull.log"))
        self.assertIn("leanstore hot tier is full", str(cm.exception))

    def test_failed_transactions_are_a_failure(self):
        text = fixture("pgbench-tpcb.log").replace(
            "number of failed transactions: 0 (0.000%)", "number of failed transactions: 7 (0.160%)")
        with self.assertRaisesRegex(report.ParseError, "7 failed transactions"):
            report.parse_pgbench(text)

    def test_latency(self):
        self.assertAlmostEqual(report.parse_pgbench_latency(fixture("pgbench-tpcb.log")), 0.408)
        self.assertAlmostEqual(report.parse_pgbench_latency(fixture("pgbench-select.log")), 0.145)

    def test_latency_of_a_failed_run_is_a_failure(self):
        with self.assertRaisesRegex(report.ParseError, "hot tier is full"):
            report.parse_pgbench_latency(fixture("pgbench-hotfull.log"))

    def test_no_tps_line(self):
        with self.assertRaisesRegex(report.ParseError, "no tps line"):
            report.parse_pgbench("pgbench (15.20)\n")


class ParseSysbench(unittest.TestCase):
    def test_read_write(self):
        # transactions per second, not queries per second
        self.assertAlmostEqual(report.parse_sysbench(fixture("sysbench-read_write.log")), 1010.45)

    def test_point_select(self):
        self.assertAlmostEqual(report.parse_sysbench(fixture("sysbench-point_select.log")), 56968.90)

    def test_fatal(self):
        with self.assertRaises(report.ParseError) as cm:
            report.parse_sysbench(fixture("sysbench-fatal.log"))
        self.assertIn('relation "sbtest1" does not exist', str(cm.exception))


class ParseGoTpc(unittest.TestCase):
    def test_tpmc(self):
        self.assertAlmostEqual(report.parse_gotpc(fixture("gotpc-run.log")), 30978.6)
        self.assertAlmostEqual(report.parse_gotpc(fixture("gotpc-run-errors.log")), 10107.5)

    def test_errors(self):
        self.assertEqual(report.parse_gotpc_errors(fixture("gotpc-run.log")), 0)
        self.assertEqual(report.parse_gotpc_errors(fixture("gotpc-run-errors.log")), 476)

    def test_no_summary(self):
        with self.assertRaisesRegex(report.ParseError, "no tpmC line: Failed to init"):
            report.parse_gotpc("Failed to init work loader: dial tcp: connection refused\n")

    def test_check_ok(self):
        self.assertEqual(report.parse_gotpc_check(fixture("gotpc-check.log")), "ok")

    def test_check_failed(self):
        # go-tpc prints "Finished" and exits 0 after a failed condition
        with self.assertRaises(report.ParseError) as cm:
            report.parse_gotpc_check(fixture("gotpc-check-fail.log"))
        self.assertIn("condition 3.3.2.8", str(cm.exception))

    def test_check_that_checked_nothing(self):
        with self.assertRaisesRegex(report.ParseError, "checked nothing"):
            report.parse_gotpc_check("Finished\n")


class ParseCommandLine(unittest.TestCase):
    def run_parse(self, kind, name):
        return subprocess.run([sys.executable, REPORT, "parse", kind, os.path.join(FIX, name)],
                              capture_output=True, text=True)

    def test_value(self):
        p = self.run_parse("sysbench", "sysbench-read_write.log")
        self.assertEqual((p.returncode, p.stdout), (0, "1010.45\n"))

    def test_latency_keeps_its_digits(self):
        p = self.run_parse("pgbench-latency", "pgbench-tpcb.log")
        self.assertEqual((p.returncode, p.stdout), (0, "0.408\n"))

    def test_failure_exit_and_reason(self):
        p = self.run_parse("pgbench", "pgbench-hotfull.log")
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertIn("hot tier is full", p.stderr)

    def test_integer(self):
        p = self.run_parse("gotpc-errors", "gotpc-run-errors.log")
        self.assertEqual((p.returncode, p.stdout), (0, "476\n"))


class Stats(unittest.TestCase):
    def test_median_spread(self):
        st = report.Stat()
        st.values = [4.0, 1.0, 3.0, 2.0]
        self.assertEqual((st.med, st.lo, st.hi), (2.5, 1.0, 4.0))
        self.assertAlmostEqual(st.spread, 3.0 / 2.5)

    def test_failed_runs_do_not_count_but_are_kept(self):
        rows = [{"variant": "v", "engine": "heap", "metric": "tps", "value": v, "status": s, "note": n}
                for v, s, n in (("10", "ok", ""), ("NA", "FAIL", "boom"), ("30", "ok", ""))]
        st = report.collect(rows, "tps")[("v", "heap")]
        self.assertEqual((st.values, st.failures, st.n, st.med), ([10.0, 30.0], ["boom"], 3, 20.0))


class Render(unittest.TestCase):
    """The report of fixtures/out: every number below is worked out by hand
    from the fixture TSVs."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="benchreport-")
        cls.out = os.path.join(cls.tmp, "out")
        shutil.copytree(os.path.join(FIX, "out"), cls.out)
        p = subprocess.run([sys.executable, REPORT, "render", cls.out], capture_output=True, text=True)
        cls.rc, cls.stdout, cls.stderr = p.returncode, p.stdout, p.stderr
        with open(os.path.join(cls.out, "report.md")) as f:
            cls.md = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_exit_status(self):
        self.assertEqual(self.rc, 0, self.stderr)

    def test_result_lines(self):
        want = [
            "RESULT pgbench_select_ratio=1.100",        # 121 / 110 at 16 clients
            "RESULT pgbench_tpcb_ratio=1.050",          # median(99, 132) = 115.5 / 110
            "RESULT pgbench_tpcb_nodurable_ratio=1.455",     # median(160, 170, 150) / 110
            "RESULT pgbench_tpcb_async_ratio=1.481",    # median(200, 210, 190) / median(130, 140, 135)
            "RESULT pgbench_tpcb_ratio_c1=1.100",       # 121 / 110 at 1 client
            "RESULT pgbench_tpcb_latency_ratio_c1=0.500",   # 1.1 ms / 2.2 ms
            "RESULT pgbench_insert_latency_ratio_c1=0.480",  # 0.6 / median(1.0, 1.5) (a failed run)
            "RESULT sysbench_oltp_point_select_ratio=1.045",    # 1150 / 1100
            "RESULT sysbench_oltp_read_only_ratio=1.045",
            "RESULT sysbench_oltp_read_write_ratio=1.045",
            "RESULT sysbench_oltp_update_index_ratio=1.045",
            "RESULT sysbench_oltp_insert_ratio=1.045",
            "RESULT tpcc_tpmc_ratio=0.477",             # median(10000, 11000) / 22000
            "RESULT ycsb_ratio_4x=NA",                  # leanstore failed at 4x
            "RESULT bytes_per_row_ratio=1.500",         # 210 / 140 bytes per row
            "RESULT bytes_per_row_ratio_tpcc_stock=0.750",   # 300 / 400
            "RESULT load_copy_time_ratio=0.625",        # 7.5 s / 12 s
            "RESULT load_pgbench_init_time_ratio=1.455",     # 32 s / 22 s
            "RESULT recovery_time_ratio=0.600",         # scale 5: median(2, 4) / 5 s
            "RESULT recovery_time_ratio_s1=0.500",      # 1.25 s / 2.5 s
            "RESULT recovery_leanstore_replay_s=0.600",  # median(0.5, 0.7)
            "RESULT recovery_bytes_per_txn_ratio=0.500",     # median(5000, 6000) / 11000
        ]
        got = [l for l in self.stdout.splitlines() if l.startswith("RESULT ")]
        self.assertEqual(got, want)
        block = self.md.split("## Machine-readable results")[1]
        self.assertEqual([l for l in block.splitlines() if l.startswith("RESULT ")], want)
        self.assertIn("# ycsb_ratio_4x: leanstore failed: load to 4x (1000 rows) failed: "
                      "ERROR:  leanstore hot tier is full", block)

    def test_durability_note(self):
        self.assertIn("both engines run with **`synchronous_commit = on`**", self.md)
        self.assertNotIn("no log", self.md)

    def test_commit_latency(self):
        lat = self.md.split("### Commit latency at 1 client")[1].split("##")[0]
        self.assertIn("| tpcb | 1 | 2.200 | 2.000 | 2.400 | 18% | 3/3 | 1.100 | 1.000 | 1.200 | 18% | 3/3 | 0.500 |",
                      lat)
        # the failed heap run is counted, not a value
        self.assertIn("| insert | 1 | 1.250 | 1.000 | 1.500 | 40% | 2/3 | 0.600 | 0.500 | 0.700 | 33% | 3/3 | 0.480 |",
                      lat)

    def test_recovery(self):
        rec = self.md.split("## Crash recovery")[1].split("## Failures")[0]
        self.assertIn("| 1 | 2.50 | 2.00 | 3.00 | 40% | 3/3 | 1.25 | 1.00 | 1.50 | 40% | 3/3 | 0.500 |", rec)
        self.assertIn("| 5 | 5.00 | 4.00 | 6.00 | 40% | 3/3 | 3.00 | 2.00 | 4.00 | 67% | 2/3 | 0.600 |", rec)
        # scale, data MB, engine, restart, sync, redo, replay, records, log MB, WAL MB, txns,
        # B/txn, checks
        self.assertIn("| 5 | 80 | leanstore | 3.00 | 1.50 | 0.01 | 0.60 | 20,000 | 4.5 | 1.0 | 1,000 | 5,500 | 2/2 |", rec)
        self.assertIn("| 5 | 80 | heap | 5.00 | 3.00 | 0.20 | - | - | - | 11.0 | 1,000 | 11,000 | 3/3 |", rec)
        self.assertIn("| 1 | 23 | leanstore | 1.25 | 1.50 | 0.01 | 0.20 | 20,000 | 1.0 | 1.0 | 1,000 | 2,000 | 2/3 |", rec)
        fails = self.md.split("## Failures")[1]
        self.assertIn("| recovery | 5 | leanstore | 2 | restart_s | pgbench_accounts did not answer", fails)
        self.assertIn("| recovery | 1 | leanstore | 2 | check | after the restart: sum(abalance) differs", fails)

    def test_machine(self):
        self.assertIn("| kernel | Linux 6.1 |", self.md)
        self.assertIn("| commit | abc1234 |", self.md)

    def test_pgbench_table(self):
        # heap 100/120/110: spread 20/110; leanstore 99/132/121: spread 33/121
        self.assertIn("| select | 16 | 110 | 100 | 120 | 18% | 3/3 | 121 | 99.0 | 132 | 27% | 3/3 | 1.100 |",
                      self.md)
        # the failed run counts in "runs ok" and is not a value
        self.assertIn("| tpcb | 16 | 110 | 100 | 120 | 18% | 3/3 | 116 | 99.0 | 132 | 29% | 2/3 | 1.050 |",
                      self.md)

    def test_pgbench_ceiling(self):
        ceil = self.md.split("### Ceiling: heap without durability (tpcb-like, 16 clients)")[1].split("##")[0]
        self.assertIn("| heap, unlogged, synchronous_commit = off | 160 | 150 | 170 | 12% | 3/3 | 1.455 |", ceil)
        self.assertIn("| leanstore (synchronous_commit = on) | 116 | 99.0 | 132 | 29% | 2/3 | 1.050 |", ceil)
        self.assertIn("| heap, synchronous_commit = off | 135 | 130 | 140 | 7% | 3/3 | 1.227 |", ceil)
        self.assertIn("| leanstore, synchronous_commit = off | 200 | 190 | 210 | 10% | 3/3 | 1.818 |", ceil)
        self.assertIn("leanstore / heap = 1.481.", ceil)
        # the other engines stay out of the two-engine table
        for eng in ("heap_nodurable", "heap_async", "leanstore_async"):
            self.assertNotIn(eng, self.md.split("### Ceiling")[0].split("## pgbench")[1])

    def test_tpcc_checks(self):
        self.assertIn("| leanstore | 1/1 passed | 2/3 passed | 3 |", self.md)
        self.assertIn("| heap | 1/1 passed | 3/3 passed | 0 |", self.md)

    def test_ycsb_failures_are_in_the_table(self):
        self.assertIn("| B | 4x | 4.05 | 2,020 | 2,010 | 2,030 | 1% | 3/3 | FAIL |  |  |  | 0/1 | NA |",
                      self.md)

    def test_footprint(self):
        # 0 + 40 cold + 150 hot + 20 index = 210 bytes per row; heap 120 + 20
        self.assertIn("| pgbench_accounts | leanstore | 1,000 | 0.0 | 40.0 | 150 | 20.0 | 210 | 1.500 |",
                      self.md)
        self.assertIn("| pgbench_accounts | heap | 1,000 | 120 | 0.0 | 0.0 | 20.0 | 140 |  |", self.md)

    def test_failures_section(self):
        fails = self.md.split("## Failures")[1].split("## Machine-readable")[0]
        self.assertIn('| pgbench | tpcb:16 | leanstore | 3 | tps | pgbench: client 3 script 0 aborted', fails)
        self.assertIn("condition 3.3.2.8", fails)
        self.assertIn("| tpcc | tpcc | leanstore | 1 | errors | 3 transactions failed", fails)
        for r in ("4", "8"):
            for w in ("A", "B"):
                self.assertIn("| ycsb | %s:%s | leanstore | 0 | tps | load to %sx" % (w, r, r), fails)

    def test_core(self):
        self.assertIn("RESULT insert_ratio_bm_vs_inmem=0.800", self.md)

    def test_plots(self):
        for name in ("pgbench", "sysbench", "ycsb", "footprint", "recovery"):
            self.assertIn("![%s](plots/%s.png)" % (name, name), self.md)
            path = os.path.join(self.out, "plots", name + ".png")
            w, h = png_size(path)
            self.assertGreaterEqual(w, 600, name)
            self.assertGreaterEqual(h, 350, name)
            self.assertGreater(os.path.getsize(path), 10000, name)


class RenderPartial(unittest.TestCase):
    def test_nothing_yet(self):
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "results"))
            self.assertIn("No workload results yet", report.Report(d).render())

    def test_one_workload(self):
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "results"))
            shutil.copy(os.path.join(FIX, "out", "results", "sysbench.tsv"), os.path.join(d, "results"))
            r = report.Report(d)
            md = r.render()
            self.assertIn("## sysbench", md)
            self.assertNotIn("## pgbench", md)
            self.assertEqual([k for k, _ in r.results],
                             ["sysbench_%s_ratio" % w for w in report.SYSBENCH_WORKLOADS])
            self.assertTrue(os.path.exists(os.path.join(d, "plots", "sysbench.png")))


    def test_recovery_alone(self):
        # bench/run recovery (not part of all) on a fresh bench/out
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "results"))
            shutil.copy(os.path.join(FIX, "out", "results", "recovery.tsv"), os.path.join(d, "results"))
            r = report.Report(d)
            md = r.render()
            self.assertIn("## Crash recovery", md)
            self.assertNotIn("## pgbench", md)
            self.assertEqual([k for k, _ in r.results],
                             ["recovery_time_ratio", "recovery_time_ratio_s1",
                              "recovery_leanstore_replay_s", "recovery_bytes_per_txn_ratio"])
            self.assertTrue(os.path.exists(os.path.join(d, "plots", "recovery.png")))

if __name__ == "__main__":
    unittest.main()
