#!/usr/bin/env python3
"""Markdown tables with ratios from run-bench.sh's bench.csv.

    bench_report.py bench.csv > bench.md

Times are medians in µs.  Ratios are ratios of times:
  loop/batch    plain loop over hand-written cuMemcpyBatchAsync (> 1: batch API faster)
  cubatch/loop  the loop under cubatch over the plain loop (< 1: cubatch faster)
  cubatch/hand  the loop under cubatch over the hand-written batch (1: as good as by hand)
  all/loop      the same with CUBATCH_POLICY=all
  off/loop      CUBATCH_ENABLE=0 (the pass-through's own cost; should be 1.00)
  A/A           a second plain run over the first: the noise floor of every ratio
"""
import csv
import statistics
import sys
from collections import defaultdict

CONFIGS = ("plain", "cubatch", "cubatch_all", "enable0", "plain2")


def size_name(n):
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10} KiB"
    return f"{n} B"


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "–"


def us(v):
    return "–" if v is None else (f"{v:.1f}" if v < 1000 else f"{v:.0f}")


def flag_slower(r):
    """Mark cubatch/loop ratios that are worse than the plain loop by over 5%."""
    return f"**{r}**" if r != "–" and float(r) > 1.05 else r


def main(path):
    rows = list(csv.DictReader(open(path)))
    tl = defaultdict(list)   # (config, part, mode, dir, count, size) -> median_us per round
    el = defaultdict(list)   # same key -> extra column per round
    for r in rows:
        k = (r["config"], r["part"], r["mode"], r["dir"], int(r["count"]), int(r["size"]))
        tl[k].append(float(r["median_us"]))
        try:
            el[k].append(float(r["extra"]))
        except ValueError:
            pass
    t = {k: statistics.median(v) for k, v in tl.items()}
    extra = {k: f"{statistics.median(v):.1f}" for k, v in el.items()}
    rounds = max((len(v) for v in tl.values()), default=0)
    get = lambda cfg, part, mode, d, c, s: t.get((cfg, part, mode, d, c, s))
    out = []
    w = out.append
    w("# cubatch benchmark\n")
    w(__doc__.split("\n\n", 2)[2].strip() + "\n")
    w(f"Each time is the median over {rounds} round(s) of per-process medians.  "
      "Ratios in **bold**: cubatch slower than the plain loop by more than 5%; "
      "compare with the A/A column before reading anything into a ratio.\n")

    cells = sorted({(k[3], k[4], k[5]) for k in t if k[1] == "grid"},
                   key=lambda x: ("h2d d2h d2d".split().index(x[0]), x[2], x[1]))
    slower, gains = [], []
    for d in ("h2d", "d2h", "d2d"):
        mine = [c for c in cells if c[0] == d]
        if not mine:
            continue
        w(f"\n## {d.upper()}: loop of copies + sync vs batch\n")
        w("| copies | size | loop | batch | loop/batch | cubatch | cubatch/loop | cubatch/hand "
          "| all | all/loop | off/loop | A/A |")
        w("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for _, c, s in mine:
            lp = get("plain", "grid", "loop", d, c, s)
            bt = get("plain", "grid", "batch", d, c, s)
            cb = get("cubatch", "grid", "loop", d, c, s)
            al = get("cubatch_all", "grid", "loop", d, c, s)
            of = get("enable0", "grid", "loop", d, c, s)
            aa = get("plain2", "grid", "loop", d, c, s)
            r = ratio(cb, lp)
            if r != "–":
                (slower if float(r) > 1.05 else gains).append((float(r), d, c, s))
            w(f"| {c} | {size_name(s)} | {us(lp)} | {us(bt)} | {ratio(lp, bt)} | {us(cb)} | "
              f"{flag_slower(r)} | {ratio(cb, bt)} | {us(al)} | {flag_slower(ratio(al, lp))} | "
              f"{ratio(of, lp)} | {ratio(aa, lp)} |")

    if gains or slower:
        w("\n## Summary (default policy)\n")
        best = sorted(gains)[:5]
        w(f"- cells measured: {len(gains) + len(slower)}; slower than plain by > 5%: {len(slower)}")
        for r, d, c, s in sorted(slower, reverse=True):
            w(f"  - {d} {c} × {size_name(s)}: cubatch/loop {r:.2f}")
        w("- largest gains: " + ", ".join(f"{d} {c} × {size_name(s)} {1 / r:.2f}×"
                                          for r, d, c, s in best))

    def section(title, mode, head, fmt_extra=None):
        keys = sorted({(k[3], k[4], k[5]) for k in t if k[1] == "extras" and k[2] == mode},
                      key=lambda x: ("h2d d2h d2d".split().index(x[0]), x[1], x[2]))
        if not keys:
            return
        w(f"\n## {title}\n")
        w(head)
        w("| " + " | ".join(["---"] + ["---:"] * (head.count("|") - 2)) + " |")
        for d, c, s in keys:
            vals = [get(cfg, "extras", mode, d, c, s) for cfg in CONFIGS]
            if fmt_extra:
                ex = [extra.get((cfg, "extras", mode, d, c, s)) for cfg in CONFIGS]
                w(fmt_extra(d, c, s, vals, ex))
            else:
                w(f"| {d} {c} × {size_name(s)} | " + " | ".join(us(v) for v in vals) +
                  f" | {flag_slower(ratio(vals[1], vals[0]))} | {ratio(vals[3], vals[0])} |"
                  f" {ratio(vals[4], vals[0])} |")

    head = "| cell | plain | cubatch | all | off | plain2 | cubatch/plain | off/plain | A/A |"
    section("One copy + sync (µs)", "single", head)
    section("Copies, then CPU work as long as the copies, then sync (µs)", "overlap",
            "| cell | busy µs | plain | cubatch | all | off | plain2 | cubatch/plain | A/A |",
            lambda d, c, s, v, ex: f"| {d} {c} × {size_name(s)} | {ex[0] or '–'} | " +
            " | ".join(us(x) for x in v) + f" | {flag_slower(ratio(v[1], v[0]))} |"
            f" {ratio(v[4], v[0])} |")
    section("Enqueue cost per call, no sync (ns)", "enqueue",
            "| cell | plain | cubatch | all | off | plain2 | cubatch − plain |",
            lambda d, c, s, v, ex: f"| {d} {c} × {size_name(s)} | " + " | ".join(
                e or "–" for e in ex) + " | " + (
                f"{float(ex[1]) - float(ex[0]):+.0f}" if ex[0] and ex[1] else "–") + " |")

    kv = sorted({(k[2], k[4], k[5]) for k in t if k[1] == "kv"})
    if kv:
        w("\n## kv_swap: copy phase per step (µs, events), step wall time (µs)\n")
        w("| case | plain | cubatch | all | off | plain2 | cubatch/plain | all/plain | A/A "
          "| wall plain | wall cubatch |")
        w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for m, c, s in kv:
            d = "h2d" if m == "kv_in" else "d2h"
            v = [get(cfg, "kv", m, d, c, s) for cfg in CONFIGS]
            wall = [extra.get((cfg, "kv", m, d, c, s)) for cfg in ("plain", "cubatch")]
            w(f"| {m[3:]} {c} × {size_name(s)} | " + " | ".join(us(x) for x in v) +
              f" | {flag_slower(ratio(v[1], v[0]))} | {flag_slower(ratio(v[2], v[0]))} | "
              f"{ratio(v[4], v[0])} | {wall[0] or '–'} | {wall[1] or '–'} |")
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: bench_report.py bench.csv")
    main(sys.argv[1])
