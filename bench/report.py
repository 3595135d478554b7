#!/usr/bin/env python3
"""bench/report.py: result parsing and the report of bench/run.

  report.py parse KIND FILE   print the number a client log reports, or exit 1
                              with the reason (KIND: pgbench, pgbench-latency,
                              sysbench, gotpc, gotpc-errors, gotpc-check)
  report.py render OUTDIR     write OUTDIR/report.md and OUTDIR/plots/*.png from
                              OUTDIR/results/*.tsv and *.meta (and core.txt)

bench/run writes one results/WORKLOAD.tsv per workload (a header, then one line
per measurement: workload, variant, engine, run, metric, value, status,
note) and results/WORKLOAD.meta (setting<TAB>value lines).  Medians, spreads
and ratios are computed here, from the runs whose status is "ok"; a run with
any other status is a failure and is listed as one.
"""

import csv
import math
import os
import re
import sys

ENGINES = ("heap", "leanstore")
SYSBENCH_WORKLOADS = ("oltp_point_select", "oltp_read_only", "oltp_read_write",
                      "oltp_update_index", "oltp_insert")
WORKLOAD_ORDER = ("pgbench", "sysbench", "tpcc", "ycsb", "footprint", "load", "recovery")
FOOTPRINT_PARTS = ("table_bytes", "cold_bytes", "hot_bytes", "index_bytes")


class ParseError(Exception):
    """A client log without the number we look for, or one that reports a failure."""


# ---------------------------------------------------------------------------
# Client output parsers
# ---------------------------------------------------------------------------

def parse_pgbench(text):
    """Transactions per second of a pgbench run (excluding connection time).

    A run in which a client aborted, or that reports failed transactions, is a
    failure: its tps would describe a shorter or different workload."""
    m = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)$", text, re.M)
    aborted = re.search(r"Run was aborted", text)
    err = re.search(r"^pgbench: error: (.*)$", text, re.M)
    if aborted or not m:
        why = err.group(1) if err else ("run was aborted" if aborted else "no tps line")
        raise ParseError("pgbench: " + why.strip())
    failed = re.search(r"^number of failed transactions: (\d+)", text, re.M)
    if failed and int(failed.group(1)) > 0:
        raise ParseError("pgbench: %s failed transactions" % failed.group(1))
    return float(m.group(1))


def parse_pgbench_latency(text):
    """Mean latency in milliseconds of a pgbench run ("latency average = X ms").

    The same failures as parse_pgbench count: a run that aborted or had
    failed transactions has no latency worth reporting."""
    parse_pgbench(text)
    m = re.search(r"^latency average = ([0-9.]+) ms$", text, re.M)
    if not m:
        raise ParseError("pgbench: no latency average line")
    return float(m.group(1))


def parse_sysbench(text):
    """Transactions per second of a sysbench run ("transactions: N (X per sec.)")."""
    fatal = re.search(r"^FATAL: (.*)$", text, re.M)
    if fatal:
        raise ParseError("sysbench: " + fatal.group(1).strip())
    m = re.search(r"^\s*transactions:\s+\d+\s+\(([0-9.]+) per sec\.\)", text, re.M)
    if not m:
        raise ParseError("sysbench: no transactions line")
    return float(m.group(1))


def parse_gotpc(text):
    """tpmC of a go-tpc tpcc run (the summary's "tpmC: X, ..." line)."""
    m = re.search(r"^tpmC: ([0-9.]+), tpmTotal: ([0-9.]+)", text, re.M)
    if not m:
        e = re.search(r"^(.*(?:failed|panic|error).*)$", text, re.M | re.I)
        raise ParseError("go-tpc: no tpmC line" + (": " + e.group(1).strip() if e else ""))
    return float(m.group(1))


def parse_gotpc_errors(text):
    """Failed transactions of a go-tpc run: the summed Count of the *_ERR summaries."""
    n = 0
    for m in re.finditer(r"^\[Summary\] \w+_ERR\s+- .*?Count: (\d+)", text, re.M):
        n += int(m.group(1))
    return n


def parse_gotpc_check(text):
    """go-tpc tpcc check: "ok", or ParseError naming the failed condition.

    go-tpc exits 0 even when a condition fails; it prints "execute check
    failed, err ..." instead."""
    m = re.search(r"^execute check failed, err (.*)$", text, re.M)
    if m:
        raise ParseError("go-tpc check: " + m.group(1).strip())
    if not re.search(r"^Finished$", text, re.M):
        raise ParseError("go-tpc check: did not finish")
    if not re.search(r"^begin to check warehouse", text, re.M):
        raise ParseError("go-tpc check: checked nothing")
    return "ok"


PARSERS = {
    "pgbench": parse_pgbench,
    "pgbench-latency": parse_pgbench_latency,
    "sysbench": parse_sysbench,
    "gotpc": parse_gotpc,
    "gotpc-errors": parse_gotpc_errors,
    "gotpc-check": parse_gotpc_check,
}


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------

def read_results(resdir):
    """{workload: [row dict, ...]} and {workload: {key: value}} from resdir."""
    rows, meta = {}, {}
    if not os.path.isdir(resdir):
        return rows, meta
    for name in sorted(os.listdir(resdir)):
        path = os.path.join(resdir, name)
        if name.endswith(".tsv"):
            with open(path, newline="") as f:
                rd = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
                rows[name[:-4]] = [dict(r) for r in rd]
        elif name.endswith(".meta"):
            d = {}
            with open(path) as f:
                for line in f:
                    line = line.rstrip("\n")
                    if "\t" in line:
                        k, v = line.split("\t", 1)
                        d[k] = v
            meta[name[:-5]] = d
    return rows, meta


def median(vals):
    v = sorted(vals)
    n = len(v)
    if n == 0:
        return None
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


class Stat:
    """The ok runs of one (variant, engine, metric) and the failed ones."""

    def __init__(self):
        self.values = []
        self.failures = []      # notes of failed runs

    @property
    def n(self):
        return len(self.values) + len(self.failures)

    @property
    def med(self):
        return median(self.values)

    @property
    def lo(self):
        return min(self.values) if self.values else None

    @property
    def hi(self):
        return max(self.values) if self.values else None

    @property
    def spread(self):
        m = self.med
        if m is None or m == 0:
            return None
        return (self.hi - self.lo) / m


def collect(rows, metric):
    """{(variant, engine): Stat} for one metric, in the order rows have them."""
    out = {}
    for r in rows:
        if r["metric"] != metric:
            continue
        st = out.setdefault((r["variant"], r["engine"]), Stat())
        if r["status"] == "ok":
            try:
                st.values.append(float(r["value"]))
            except ValueError:
                st.failures.append("unparsable value %r" % r["value"])
        else:
            st.failures.append(r["note"] or r["status"])
    return out


def variants(rows, metric=None):
    seen = []
    for r in rows:
        if (metric is None or r["metric"] == metric) and r["variant"] not in seen:
            seen.append(r["variant"])
    return seen


def ratio(stats, variant, engine="leanstore"):
    """engine's median / heap median (engine: leanstore), or None."""
    return ratio_of(stats, variant, engine, "heap")


def ratio_of(stats, variant, engine, base):
    """engine's median / base's median, or None."""
    h = stats.get((variant, base))
    l = stats.get((variant, engine))
    if not h or not l or h.med is None or l.med is None or h.med == 0:
        return None
    return l.med / h.med


def fmt(v, digits=1):
    if v is None:
        return "FAIL"
    if isinstance(v, str):
        return v
    if abs(v) >= 100 or digits == 0:
        return "{:,.0f}".format(v)
    return "{:,.{d}f}".format(v, d=digits)


def fmt_ratio(v):
    return "NA" if v is None else "%.3f" % v


def fmt_pct(v):
    return "" if v is None else "%.0f%%" % (100 * v)


def stat_cells(st, digits=1):
    """median, min, max, spread, runs ok/total"""
    if st is None:
        return ["-", "-", "-", "-", "0/0"]
    ok = "%d/%d" % (len(st.values), st.n)
    if st.med is None:
        return ["FAIL", "", "", "", ok]
    return [fmt(st.med, digits), fmt(st.lo, digits), fmt(st.hi, digits), fmt_pct(st.spread), ok]


def md_table(header, body, align=None):
    align = align or (["l"] + ["r"] * (len(header) - 1))
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    for row in body:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------

COLORS = {"heap": "#4c72b0", "leanstore": "#dd8452"}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _errbars(sts):
    lo = [(s.med - s.lo) if s and s.med is not None else 0 for s in sts]
    hi = [(s.hi - s.med) if s and s.med is not None else 0 for s in sts]
    return [lo, hi]


def plot_pgbench(stats, modes, clients, path):
    plt = _plt()
    fig, axes = plt.subplots(1, len(modes), figsize=(5.2 * len(modes), 4), squeeze=False)
    for ax, mode in zip(axes[0], modes):
        for eng in ENGINES:
            xs, sts = [], []
            for c in clients:
                st = stats.get(("%s:%s" % (mode, c), eng))
                if st and st.med is not None:
                    xs.append(c)
                    sts.append(st)
            if xs:
                ax.errorbar(xs, [s.med for s in sts], yerr=_errbars(sts), marker="o", capsize=4,
                            color=COLORS[eng], label=eng)
            failed = [c for c in clients
                      if (stats.get(("%s:%s" % (mode, c), eng)) or Stat()).failures]
            if failed:
                ax.plot(failed, [0] * len(failed), "x", color="red", markersize=10,
                        label="%s: failed runs" % eng)
        ax.set_xscale("log", base=2)
        ax.set_xticks(clients)
        ax.set_xticklabels([str(c) for c in clients])
        ax.set_xlabel("clients (pgbench -c)")
        ax.set_ylabel("throughput [transactions/s]")
        ax.set_ylim(bottom=0)
        ax.set_title("pgbench %s" % ("select-only (-S)" if mode == "select" else "tpcb-like"))
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle("pgbench: median of runs, bars = min..max", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_sysbench(stats, workloads, path):
    plt = _plt()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    x = list(range(len(workloads)))
    w = 0.38
    for i, eng in enumerate(ENGINES):
        sts = [stats.get((wl, eng)) for wl in workloads]
        meds = [s.med if s and s.med is not None else 0 for s in sts]
        pos = [p + (i - 0.5) * w for p in x]
        ax.bar(pos, meds, w, yerr=_errbars(sts), capsize=3, color=COLORS[eng], label=eng)
        for p, s in zip(pos, sts):
            if not s or s.med is None:
                ax.text(p, 1, "FAIL", color="red", ha="center", va="bottom", rotation=90)
    ax.set_xticks(x)
    ax.set_xticklabels([wl.replace("oltp_", "") for wl in workloads], rotation=20)
    ax.set_yscale("log")
    ax.set_ylabel("throughput [transactions/s], log scale")
    ax.set_title("sysbench oltp_*: median, bars = min..max")
    ax.legend()
    ax.grid(True, axis="y", alpha=0.3)
    rs = [ratio(stats, wl) for wl in workloads]
    ax2.bar(x, [r if r is not None else 0 for r in rs], 0.6, color=COLORS["leanstore"])
    for p, r in zip(x, rs):
        ax2.text(p, (r or 0), "FAIL" if r is None else "%.2f" % r, ha="center", va="bottom",
                 color="red" if r is None else "black")
    ax2.axhline(1.0, color="black", linewidth=1, linestyle="--", label="heap = 1")
    ax2.set_xticks(x)
    ax2.set_xticklabels([wl.replace("oltp_", "") for wl in workloads], rotation=20)
    ax2.set_ylabel("leanstore / heap (throughput ratio)")
    ax2.set_title("ratio of medians (> 1: leanstore faster)")
    ax2.set_ylim(0, max([1.0] + [r for r in rs if r is not None]) * 1.2)
    ax2.legend(loc="upper right")
    ax2.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_ycsb(stats, xpos, wls, ratios, cap_label, path):
    plt = _plt()
    fig, axes = plt.subplots(1, len(wls), figsize=(5.4 * len(wls), 4.2), squeeze=False)
    for ax, wl in zip(axes[0], wls):
        for eng in ENGINES:
            xs, sts, fails = [], [], []
            for r in ratios:
                st = stats.get(("%s:%s" % (wl, r), eng))
                if st and st.med is not None:
                    xs.append(xpos.get((r, eng), float(r)))
                    sts.append(st)
                elif st:
                    fails.append(float(r))
            if xs:
                ax.errorbar(xs, [s.med for s in sts], yerr=_errbars(sts), marker="o", capsize=4,
                            color=COLORS[eng], label=eng)
            if fails:
                ax.plot(fails, [0] * len(fails), "X", color=COLORS[eng], markeredgecolor="red",
                        markersize=11, linestyle="none", clip_on=False, label="%s: FAILED" % eng)
        ax.set_xscale("log", base=2)
        ticks = sorted({float(r) for r in ratios})
        ax.set_xticks(ticks)
        ax.set_xticklabels(["%gx" % t for t in ticks])
        ax.axvline(1.0, color="gray", linewidth=1, linestyle=":")
        ax.set_xlabel("data size / memory cap (%s)" % cap_label)
        ax.set_ylabel("throughput [transactions/s]")
        ax.set_ylim(bottom=0)
        ax.set_title("YCSB-like workload %s (%s)" %
                     (wl, "95% reads, 5% updates" if wl == "B" else "50% reads, 50% updates"))
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle("zipfian (s = 1.1) keys scrambled by permute(); median of runs, bars = min..max; "
                 "X at 0 = failed", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_footprint(parts, shapes, path):
    plt = _plt()
    comps = [("table_bytes", "relation files (table, TOAST, maps)"),
             ("cold_bytes", "cold tier pages"), ("hot_bytes", "hot tier memory"),
             ("index_bytes", "indexes")]
    fig, ax = plt.subplots(figsize=(7, 4))
    x = list(range(len(shapes)))
    w = 0.38
    hatches = {"table_bytes": "", "cold_bytes": "xx", "hot_bytes": "//", "index_bytes": ".."}
    shades = {"table_bytes": 1.0, "cold_bytes": 0.85, "hot_bytes": 0.7, "index_bytes": 0.5}
    for i, eng in enumerate(ENGINES):
        pos = [p + (i - 0.5) * w for p in x]
        bottom = [0.0] * len(shapes)
        for key, label in comps:
            vals = [parts.get((s, eng), {}).get(key, 0.0) for s in shapes]
            if not any(vals):
                continue
            ax.bar(pos, vals, w, bottom=bottom, color=COLORS[eng], alpha=shades[key],
                   hatch=hatches[key], edgecolor="black", linewidth=0.5,
                   label="%s: %s" % (eng, label))
            bottom = [b + v for b, v in zip(bottom, vals)]
        for p, b in zip(pos, bottom):
            ax.text(p, b, "%.0f" % b, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels(shapes)
    ax.set_ylabel("bytes per row")
    ax.set_title("footprint: bytes per row (lower is better)")
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_recovery(restart, written, scales, path):
    """restart: {(scale, engine): Stat}; written: {engine: [(MB written, restart s)]}."""
    plt = _plt()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for eng in ENGINES:
        xs, sts = [], []
        for sc in scales:
            st = restart.get((sc, eng))
            if st and st.med is not None:
                xs.append(float(sc))
                sts.append(st)
        if xs:
            ax.errorbar(xs, [s.med for s in sts], yerr=_errbars(sts), marker="o", capsize=4,
                        color=COLORS[eng], label=eng)
        pts = written.get(eng, [])
        if pts:
            ax2.plot([p[0] for p in pts], [p[1] for p in pts], "o", color=COLORS[eng],
                     label=eng + (": leanstore log + WAL" if eng == "leanstore" else ": WAL"))
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks([float(sc) for sc in scales])
    ax.set_xticklabels(scales)
    ax.set_xlabel("pgbench scale (100000 accounts each)")
    ax.set_ylabel("restart until pgbench_accounts answers [s]")
    ax.set_ylim(bottom=0)
    ax.set_title("recovery time against data size")
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax2.set_xlabel("written since the clean start, before the kill [MB]")
    ax2.set_ylabel("restart until pgbench_accounts answers [s]")
    ax2.set_ylim(bottom=0)
    ax2.set_xlim(left=0)
    ax2.set_title("recovery time against log size (every run)")
    ax2.grid(True, alpha=0.3)
    ax2.legend()
    fig.suptitle("kill -9 under pgbench tpcb-like; median of runs, bars = min..max", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------

def meta_table(meta):
    if not meta:
        return ""
    return md_table(["setting", "value"], [[k, "`%s`" % v] for k, v in meta.items()], ["l", "l"])


def engine_table(stats, variants_, label, first_cols, digits=1):
    """One row per variant: its label columns, heap and leanstore stats, ratio."""
    header = first_cols + ["heap median", "min", "max", "spread", "runs ok",
                           "leanstore median", "min", "max", "spread", "runs ok",
                           "ratio l/h"]
    body = []
    for v in variants_:
        body.append(label(v) + stat_cells(stats.get((v, "heap")), digits) +
                    stat_cells(stats.get((v, "leanstore")), digits) +
                    [fmt_ratio(ratio(stats, v))])
    return md_table(header, body)


class Report:
    def __init__(self, outdir):
        self.outdir = outdir
        self.plotdir = os.path.join(outdir, "plots")
        self.rows, self.meta = read_results(os.path.join(outdir, "results"))
        self.results = []       # (key, value string)
        self.failures = []      # (workload, variant, engine, run, note)
        self.parts = []
        self.notes = []         # comments after the RESULT lines

    def result(self, key, v):
        self.results.append((key, fmt_ratio(v) if not isinstance(v, str) else v))

    def add(self, text):
        self.parts.append(text)

    def note_failures(self, wl):
        for r in self.rows.get(wl, []):
            if r["status"] != "ok":
                self.failures.append((wl, r["variant"], r["engine"], r["run"], r["metric"],
                                      r["note"] or r["status"]))

    def plot(self, name, fn, *args):
        os.makedirs(self.plotdir, exist_ok=True)
        path = os.path.join(self.plotdir, name)
        fn(*args, path)
        return "![%s](plots/%s)" % (name[:-4], name)

    # -- header ------------------------------------------------------------
    def header(self):
        m = self.meta.get("machine", {})
        self.add("# leanstore vs heap: benchmark report\n")
        self.add("Written by `bench/report.py` from `bench/out/results/` (%s mode%s).\n" % (
            m.get("mode", "?"), ", generated " + m["date"] if "date" in m else ""))
        self.add("**Durability:** both engines run with **`synchronous_commit = on`** "
                 "(PostgreSQL's default): a commit is acknowledged once it is on disk, heap's "
                 "in PostgreSQL's WAL; leanstore's rows go into PostgreSQL's WAL too, before its "
                 "commit record, and PostgreSQL's one flush makes them durable (leanstore's own "
                 "log takes them later; large transactions, storage changes and servers without "
                 "the replication slot wait for leanstore's log instead). A workload with "
                 "other settings lists them in its settings table.\n")
        self.add("How to read it: every number is the median of the runs (runs of the two "
                 "engines interleaved: heap, leanstore, heap, ...), with min, max and spread = "
                 "(max - min) / median. *ratio l/h* = leanstore median / heap median: above 1 "
                 "leanstore is faster (for bytes per row and load time, see the section). A run "
                 "that failed is counted in *runs ok* and listed under Failures, never dropped "
                 "silently; a cell reads FAIL when no run succeeded.\n")
        self.add("## Machine\n")
        keys = ["cpu", "cores", "memory", "kernel", "os", "postgresql", "commit", "clients"]
        self.add(md_table(["", ""], [[k, m[k]] for k in keys if k in m], ["l", "l"]) + "\n")

    # -- workloads ---------------------------------------------------------
    def sec_pgbench(self):
        rows = self.rows["pgbench"]
        stats = collect(rows, "tps")
        vs = variants(rows, "tps")
        modes = [m for m in ("select", "tpcb") if any(v.startswith(m + ":") for v in vs)]
        clients = sorted({int(v.split(":")[1]) for v in vs})
        self.add("## pgbench\n")
        self.add("Built-in scripts of pgbench on its own tables: select-only (`-S`: one "
                 "primary-key lookup per transaction) and tpcb-like (three updates, a select and "
                 "an insert). Throughput in transactions/s.\n")
        self.add(meta_table(self.meta.get("pgbench", {})) + "\n")
        self.add(engine_table(stats, vs, lambda v: [v.split(":")[0], v.split(":")[1]],
                              ["script", "clients"]) + "\n")
        self.add(self.plot("pgbench.png", plot_pgbench, stats, modes, clients) + "\n")
        lat = collect(rows, "latency_ms")
        one = min(clients) if clients else None
        lvs = [v for v in ("tpcb:%s" % one, "insert:%s" % one) if (v, "heap") in lat or (v, "leanstore") in lat]
        if lvs:
            self.add("### Commit latency at %s client%s\n" % (one, "" if one == 1 else "s"))
            self.add("pgbench's *latency average* in milliseconds (lower is better) of tpcb-like and "
                     "of a one-row INSERT per transaction (table `bench_insert`, no index): with one "
                     "client a transaction's latency is mostly its commit's wait for the disk. "
                     "*ratio l/h* = leanstore ms / heap ms (below 1: leanstore commits faster).\n")
            self.add(engine_table(lat, lvs, lambda v: [v.split(":")[0], v.split(":")[1]],
                                  ["script", "clients"], 3) + "\n")
        top = max(clients) if clients else None
        top_tpcb = "tpcb:%s" % top
        self.pgbench_ceiling(stats, top_tpcb)
        for m, key in (("select", "pgbench_select_ratio"), ("tpcb", "pgbench_tpcb_ratio")):
            self.result(key, ratio(stats, "%s:%s" % (m, top)))
        if (top_tpcb, "heap_nodurable") in stats:
            self.result("pgbench_tpcb_nodurable_ratio", ratio(stats, top_tpcb, "heap_nodurable"))
        if (top_tpcb, "heap_async") in stats and (top_tpcb, "leanstore_async") in stats:
            self.result("pgbench_tpcb_async_ratio", ratio_of(stats, top_tpcb, "leanstore_async", "heap_async"))
        for c in clients:
            if c != top and ("tpcb:%s" % c, "heap") in stats:
                self.result("pgbench_tpcb_ratio_c%s" % c, ratio(stats, "tpcb:%s" % c))
        for v in lvs:
            self.result("pgbench_%s_latency_ratio_c%s" % tuple(v.split(":")), ratio(lat, v))
        self.note_failures("pgbench")

    def pgbench_ceiling(self, stats, v):
        """heap_nodurable runs (tpcb-like at the most clients): what heap
        reaches with no durability cost at all, the bound of a durable
        engine that only makes commits cheaper."""
        free = stats.get((v, "heap_nodurable"))
        if free is None:
            return
        self.add("### Ceiling: heap without durability (tpcb-like, %s clients)\n" % v.split(":")[1])
        self.add("The same script on a third database whose pgbench tables are **unlogged** heap "
                 "tables, with `synchronous_commit = off`: no WAL for the rows, no wait at commit, "
                 "nothing survives a crash. Its runs are interleaved with the two engines'. "
                 "*ratio to heap* = median / heap's median: the first row's ratio is what an "
                 "engine would reach whose durability cost nothing and whose rows cost what "
                 "heap's do; leanstore's row is the ratio above.\n")
        body = [["heap, unlogged, synchronous_commit = off"] + stat_cells(free) +
                [fmt_ratio(ratio(stats, v, "heap_nodurable"))],
                ["leanstore (synchronous_commit = on)"] + stat_cells(stats.get((v, "leanstore"))) +
                [fmt_ratio(ratio(stats, v))]]
        for eng, label in (("heap_async", "heap, synchronous_commit = off"),
                           ("leanstore_async", "leanstore, synchronous_commit = off")):
            if (v, eng) in stats:
                body.append([label] + stat_cells(stats[(v, eng)]) + [fmt_ratio(ratio(stats, v, eng))])
        self.add(md_table(["", "median", "min", "max", "spread", "runs ok", "ratio to heap"], body) + "\n")
        if (v, "heap_async") in stats and (v, "leanstore_async") in stats:
            self.add("With `synchronous_commit = off` on both (no commit waits for a flush; "
                     "a crash may lose the last commits, each as a whole): leanstore / heap = "
                     "%s.\n" % fmt_ratio(ratio_of(stats, v, "leanstore_async", "heap_async")))

    def sec_sysbench(self):
        rows = self.rows["sysbench"]
        stats = collect(rows, "tps")
        vs = [w for w in SYSBENCH_WORKLOADS if w in variants(rows, "tps")]
        vs += [w for w in variants(rows, "tps") if w not in vs]
        self.add("## sysbench\n")
        self.add("sysbench's oltp_* Lua workloads with the pgsql driver on `sbtest*` tables "
                 "(one secondary index each). Throughput in transactions/s (a transaction is "
                 "one query for point_select, update_index and insert; 14-18 queries in a "
                 "transaction for read_only and read_write).\n")
        self.add(meta_table(self.meta.get("sysbench", {})) + "\n")
        self.add(engine_table(stats, vs, lambda v: [v], ["workload"]) + "\n")
        self.add(self.plot("sysbench.png", plot_sysbench, stats, vs) + "\n")
        for w in vs:
            self.result("sysbench_%s_ratio" % w, ratio(stats, w))
        self.note_failures("sysbench")

    def sec_tpcc(self):
        rows = self.rows["tpcc"]
        stats = collect(rows, "tpmC")
        self.add("## TPC-C (go-tpc)\n")
        self.add("go-tpc's TPC-C over TCP on 127.0.0.1 (no keying or thinking time). tpmC = "
                 "New-Order transactions per minute. After each run go-tpc's consistency "
                 "check (`tpcc check`, TPC-C 3.3.2) runs on that engine's database; a failed "
                 "check makes the run a failure.\n")
        self.add(meta_table(self.meta.get("tpcc", {})) + "\n")
        self.add(engine_table(stats, ["tpcc"], lambda v: ["tpmC"], ["metric"]) + "\n")
        body = []
        for eng in ENGINES:
            def passed(metric):
                chk = [r for r in rows if r["metric"] == metric and r["engine"] == eng]
                return "%d/%d passed" % (sum(1 for r in chk if r["status"] == "ok"), len(chk))
            errs = [int(r["value"]) for r in rows
                    if r["metric"] == "errors" and r["engine"] == eng and r["value"].isdigit()]
            body.append([eng, passed("check_load"), passed("check"),
                         fmt(sum(errs), 0) if errs else "-"])
        self.add(md_table(["engine", "check after load", "checks after runs",
                           "failed transactions (all runs)"], body) + "\n")
        self.result("tpcc_tpmc_ratio", ratio(stats, "tpcc"))
        self.note_failures("tpcc")

    def sec_ycsb(self):
        rows = self.rows["ycsb"]
        meta = self.meta.get("ycsb", {})
        stats = collect(rows, "tps")
        data = collect(rows, "data_ratio")
        vs = variants(rows, "tps")
        wls = [w for w in ("B", "A") if any(v.startswith(w + ":") for v in vs)]
        ratios = sorted({v.split(":")[1] for v in vs}, key=float)
        xpos = {}
        for (v, eng), st in data.items():
            if st.med is not None:
                xpos[(v, eng)] = st.med
        # the x position of a point: the data/memory the heap table really had
        hx = {r: xpos.get((r, "heap"), float(r)) for r in ratios}
        xp = {(r, e): hx[r] for r in ratios for e in ENGINES}
        cap = meta.get("memory cap (cgroup)", "?")
        self.add("## YCSB-like, data larger than memory\n")
        self.add("A pgbench custom script (`bench/ycsb.sql`): keys drawn by "
                 "`random_zipfian(s = 1.1)` and scrambled over the table by `permute()`, so "
                 "hot keys are spread over the whole table; workload B = 95%% reads / 5%% "
                 "updates, A = 50/50. Each engine's cluster runs inside a memory cgroup of %s "
                 "(page cache included); the table grows from the smallest to the largest "
                 "data/memory ratio. *data/mem* is the heap table's size (table + index) "
                 "divided by the cap. A failure (e.g. leanstore's hot tier full, while it has "
                 "no cold tier) is reported as such.\n" % cap)
        self.add(meta_table(meta) + "\n")
        self.add(engine_table(stats, vs, lambda v: [v.split(":")[0], v.split(":")[1] + "x",
                                                   fmt(hx.get(v.split(":")[1]), 2)],
                              ["workload", "target", "data/mem"]) + "\n")
        self.add(self.plot("ycsb.png", plot_ycsb, stats, xp, wls, ratios, cap) + "\n")
        self.result("ycsb_ratio_4x", ratio(stats, "B:4"))
        st = stats.get(("B:4", "leanstore"))
        if st and st.med is None and st.failures:
            self.notes.append("ycsb_ratio_4x: leanstore failed: %s" % st.failures[0])
        self.note_failures("ycsb")

    def sec_footprint(self):
        rows = self.rows["footprint"]
        self.add("## Footprint: bytes per row\n")
        self.add("The same rows loaded into a heap and a leanstore table, then VACUUM. heap: "
                 "`pg_table_size` (table, TOAST, free space and visibility maps) + "
                 "`pg_indexes_size`. leanstore: its hot-tier memory "
                 "(`leanstore_table_stats().hot_bytes`) + its cold tier's pages "
                 "(`cold_pages` x 8 kB, in the buffer pool or the main fork) + the other "
                 "relation files (`pg_table_size` without the main fork: TOAST, maps) + "
                 "`pg_indexes_size`. *ratio l/h* = leanstore bytes / heap bytes (below 1: "
                 "leanstore smaller).\n")
        self.add(meta_table(self.meta.get("footprint", {})) + "\n")
        parts = {}
        shapes = []
        for r in rows:
            if r["status"] != "ok":
                continue
            if r["variant"] not in shapes:
                shapes.append(r["variant"])
            parts.setdefault((r["variant"], r["engine"]), {})[r["metric"]] = float(r["value"])
        body = []
        per_row = {}
        for s in shapes:
            for eng in ENGINES:
                p = parts.get((s, eng), {})
                n = p.get("rows")
                if not n:
                    body.append([s, eng, "FAIL", "", "", "", "", "", ""])
                    continue
                tot = sum(p.get(k, 0) for k in FOOTPRINT_PARTS)
                per_row[(s, eng)] = tot / n
                body.append([s, eng, fmt(n, 0)] + [fmt(p.get(k, 0) / n) for k in FOOTPRINT_PARTS] +
                            [fmt(tot / n), ""])
            h, l = per_row.get((s, "heap")), per_row.get((s, "leanstore"))
            if h and l:
                body[-1][-1] = "%.3f" % (l / h)
        self.add(md_table(["shape", "engine", "rows", "relation B/row", "cold tier B/row",
                           "hot tier B/row", "index B/row", "total B/row", "ratio l/h"],
                          body) + "\n")
        bpr = {}
        for s in shapes:
            for eng in ENGINES:
                p = parts.get((s, eng), {})
                if p.get("rows"):
                    bpr[(s, eng)] = {k: p.get(k, 0) / p["rows"] for k in FOOTPRINT_PARTS}
        if bpr:
            self.add(self.plot("footprint.png", plot_footprint, bpr, shapes) + "\n")
        for s in shapes:
            h, l = per_row.get((s, "heap")), per_row.get((s, "leanstore"))
            key = "bytes_per_row_ratio" if s == "pgbench_accounts" else "bytes_per_row_ratio_" + s
            self.result(key, l / h if h and l else None)
        self.note_failures("footprint")

    def sec_load(self):
        rows = self.rows["load"]
        stats = collect(rows, "seconds")
        vs = variants(rows, "seconds")
        self.add("## Load\n")
        self.add("Wall-clock seconds (lower is better) of `COPY ... FROM` a file into an empty "
                 "table without indexes, and of `pgbench -i` (create, generate, vacuum, primary "
                 "keys). *ratio l/h* here = leanstore seconds / heap seconds (below 1: "
                 "leanstore loads faster).\n")
        self.add(meta_table(self.meta.get("load", {})) + "\n")
        self.add(engine_table(stats, vs, lambda v: [v], ["load"], 2) + "\n")
        for v in vs:
            self.result("load_%s_time_ratio" % v, ratio(stats, v))
        self.note_failures("load")

    def sec_recovery(self):
        rows = self.rows["recovery"]
        meta = self.meta.get("recovery", {})
        restart = collect(rows, "restart_s")
        scales = sorted(variants(rows, "restart_s"), key=float)
        self.add("## Crash recovery\n")
        self.add("`bench/recovery.sh`: per engine and pgbench scale a cluster of its own; each run "
                 "starts it cleanly, runs pgbench tpcb-like, kills every server process with "
                 "`kill -9` while pgbench runs, starts it again and measures the seconds until "
                 "`SELECT ... FROM pgbench_accounts` answers (*restart*: PostgreSQL's redo and "
                 "end-of-recovery checkpoint, and for leanstore also the replay of its own log, "
                 "which sessions wait for). *ratio l/h* = leanstore seconds / heap seconds (below "
                 "1: leanstore is back sooner). After each restart pgbench's balances must agree "
                 "(accounts, branches, tellers, history); a difference fails the run.\n")
        self.add(meta_table(meta) + "\n")
        self.add(engine_table(restart, scales, lambda v: [v], ["scale"], 2) + "\n")
        # per run: what the crash left to replay
        per = {}
        for r in rows:
            if r["status"] == "ok" and r["run"] != "0":
                try:
                    per.setdefault((r["variant"], r["engine"], r["run"]), {})[r["metric"]] = float(r["value"])
                except ValueError:
                    pass
        derived = {}
        written = {}
        for (sc, eng, run), m in per.items():
            wb = m.get("wal_bytes", 0) + m.get("log_bytes", 0)
            if m.get("txns"):
                derived.setdefault((sc, eng, "bytes_per_txn"), Stat()).values.append(wb / m["txns"])
            if "restart_s" in m:
                written.setdefault(eng, []).append((wb / 1e6, m["restart_s"]))
        body = []
        data = collect(rows, "data_bytes")
        for sc in scales:
            for eng in ENGINES:
                def med(metric, scale=1.0, digits=1):
                    st = collect(rows, metric).get((sc, eng))
                    return fmt(st.med / scale, digits) if st and st.med is not None else "-"
                chk = [r for r in rows if r["metric"] == "check" and r["variant"] == sc and r["engine"] == eng]
                bpt = derived.get((sc, eng, "bytes_per_txn"))
                d = data.get((sc, "heap"))
                body.append([sc, fmt(d.med / 1e6, 0) if d and d.med else "-", eng,
                             med("restart_s", digits=2), med("sync_s", digits=2), med("redo_s", digits=2),
                             med("ls_recovery_s", digits=2) if eng == "leanstore" else "-",
                             med("ls_records", digits=0) if eng == "leanstore" else "-",
                             med("log_bytes", 1e6) if eng == "leanstore" else "-",
                             med("wal_bytes", 1e6), med("txns", digits=0),
                             fmt(bpt.med, 0) if bpt and bpt.med is not None else "-",
                             "%d/%d" % (sum(1 for r in chk if r["status"] == "ok"), len(chk))])
        self.add("Medians per scale and engine: *data* = heap's database after `pgbench -i` (MB); "
                 "*sync* = PostgreSQL's fsync of the whole data directory after a crash, before "
                 "its redo (`recovery_init_sync_method = fsync`; from \"was interrupted\" to "
                 "\"automatic recovery in progress\" in the server log); "
                 "*redo* = PostgreSQL's own redo (`redo done ... elapsed` of the server log); "
                 "*replay* and *records* = leanstore's recovery (`leanstore_stats()`: "
                 "`recovery_us`, `recovery_records`); *log* = how much leanstore's log grew in the "
                 "run (MB); *WAL* = PostgreSQL's WAL written in the run (MB); *txns* = committed "
                 "transactions of the run (new `pgbench_history` rows after the restart); *B/txn* "
                 "= (log + WAL) bytes per committed transaction.\n")
        self.add(md_table(["scale", "data MB", "engine", "restart s", "sync s", "redo s", "replay s", "records",
                           "log MB", "WAL MB", "txns", "B/txn", "checks ok"], body) + "\n")
        if scales:
            self.add(self.plot("recovery.png", plot_recovery, restart, written, scales) + "\n")
        top = scales[-1] if scales else None
        self.result("recovery_time_ratio", ratio(restart, top))
        for sc in scales[:-1]:
            self.result("recovery_time_ratio_s%s" % sc, ratio(restart, sc))
        rep = collect(rows, "ls_recovery_s").get((top, "leanstore"))
        self.result("recovery_leanstore_replay_s", "%.3f" % rep.med if rep and rep.med is not None else "NA")
        h, l = derived.get((top, "heap", "bytes_per_txn")), derived.get((top, "leanstore", "bytes_per_txn"))
        self.result("recovery_bytes_per_txn_ratio",
                    l.med / h.med if h and l and h.med and l.med is not None else None)
        self.note_failures("recovery")

    def sec_core(self):
        path = os.path.join(self.outdir, "core.txt")
        if not os.path.exists(path):
            return
        with open(path) as f:
            lines = []
            for l in f:
                if l.startswith("RESULT ") and l.strip() not in lines:
                    lines.append(l.strip())
        self.add("## Core benchmark (`make bench-core`)\n")
        self.add("The buffer-managed B+-tree against an in-memory tree of the same layout "
                 "(bench/README.md). Its RESULT lines:\n")
        self.add("```\n" + ("\n".join(lines) if lines else "(no RESULT lines: failed?)") + "\n```\n")

    def sec_failures(self):
        self.add("## Failures\n")
        if not self.failures:
            self.add("None: every run of every workload succeeded.\n")
            return
        body = [[wl, v, e, run, m, note.replace("|", "\\|")[:240]]
                for wl, v, e, run, m, note in self.failures]
        self.add(md_table(["workload", "variant", "engine", "run", "metric", "what happened"],
                          body, ["l"] * 6) + "\n")

    def render(self):
        self.header()
        present = [w for w in WORKLOAD_ORDER if self.rows.get(w)]
        if not present:
            self.add("No workload results yet: run `bench/run`.\n")
        for w in present:
            getattr(self, "sec_" + w)()
        self.sec_core()
        self.sec_failures()
        self.add("## Machine-readable results\n")
        self.add("```\n" + "\n".join("RESULT %s=%s" % kv for kv in self.results) +
                 "".join("\n# " + n for n in self.notes) + "\n```\n")
        text = "\n".join(self.parts)
        with open(os.path.join(self.outdir, "report.md"), "w") as f:
            f.write(text)
        return text


def main(argv):
    if len(argv) == 4 and argv[1] == "parse" and argv[2] in PARSERS:
        with open(argv[3], errors="replace") as f:
            text = f.read()
        try:
            v = PARSERS[argv[2]](text)
        except ParseError as e:
            print(str(e), file=sys.stderr)
            return 1
        digits = 3 if argv[2] == "pgbench-latency" else 2
        print(v if isinstance(v, str) or isinstance(v, int) else "%.*f" % (digits, v))
        return 0
    if len(argv) == 3 and argv[1] == "render":
        rep = Report(argv[2])
        rep.render()
        for k, v in rep.results:
            print("RESULT %s=%s" % (k, v))
        for n in rep.notes:
            print("# " + n)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
