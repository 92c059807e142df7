#!/usr/bin/env python3
"""load_report.py LOAD.CSV - the table of bench/run-load.sh.

For each load and cell: the plain loop's copy time (median over rounds), then for
each other configuration the speedup plain/config (median of the per-round
ratios, with their min-max), the A/A column plain/plain2 the same way, and the
load's own time under each configuration against plain (config/plain).  A
speedup inside the A/A spread is marked ~ (not a result)."""
import csv, statistics, sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
t = defaultdict(dict)   # (load, cell, config) -> {round: (copy, compute)}
bad = [r for r in rows if r["ok"] != "1"]
for r in rows:
    t[(r["load"], r["cell"], r["config"])][r["round"]] = (float(r["copy_us"]), float(r["compute_us"]))
configs = [c for c in ("cubatch", "prev", "batch", "overlap", "overlap-rec", "plain-rec", "kernel", "fixed", "prevfixed", "off")
           if any(k[2] == c for k in t)]
keys = sorted({(k[0], k[1]) for k in t}, key=lambda k: (["none", "short", "room", "fill", "gemm"].index(k[0]), k[1]))

def ratios(a, b, idx):
    rs = [a[x][idx] / b[x][idx] for x in a if x in b and b[x][idx] > 0]
    return rs

def fmt(rs):
    return "-" if not rs else "%.2f (%.2f-%.2f)" % (statistics.median(rs), min(rs), max(rs))

print("| load | cell | plain us | A/A | " + " | ".join(f"{c} speedup" for c in configs) +
      " | " + " | ".join(f"compute {c}/plain" for c in configs) + " |")
print("|" + " --- |" * (4 + 2 * len(configs)))
for load, cell in keys:
    plain = t.get((load, cell, "plain"), {})
    if not plain:
        continue
    aa = ratios(plain, t.get((load, cell, "plain2"), {}), 0)
    lo, hi = (min(aa), max(aa)) if aa else (1, 1)
    cols = []
    for c in configs:
        rs = ratios(plain, t.get((load, cell, c), {}), 0)
        m = statistics.median(rs) if rs else None
        mark = "~" if m is not None and lo <= m <= hi else ""
        cols.append(mark + fmt(rs))
    comp = []
    for c in configs:
        rs = ratios(t.get((load, cell, c), {}), plain, 1) if load != "none" else []
        comp.append(fmt(rs))
    print(f"| {load} | {cell} | {statistics.median(v[0] for v in plain.values()):.1f} | {fmt(aa)} | " +
          " | ".join(cols) + " | " + " | ".join(comp) + " |")
if bad:
    print(f"\nWRONG BYTES in {len(bad)} rows: " + ", ".join(f"{r['config']}/{r['load']}/{r['cell']}" for r in bad[:10]))
