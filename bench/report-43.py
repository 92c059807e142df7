#!/usr/bin/env python3
"""report-43.py - summary.md of bench/campaign-43.sh from its raw folder.

    report-43.py RAW [--rounds-planned N]

RAW holds grid.csv, kv.csv, tiles.csv, launch.csv (config,round + the
program's columns), train.md, kvswap.md (inproc_ab.py's tables), procs.csv,
stats/*.json (cubatch's statistics of the preloaded processes), env.txt.
Every time is the median over rounds of the per-process medians (µs); every
ratio is computed round by round between the processes of the same round and
shown as median (min-max) over rounds, `n=K` when fewer rounds paired than ran.
`~` marks a ratio no further from 1 than the cell's A/A ratio ever was over the
rounds (|ln r| <= max |ln plain2/plain|): within noise, not a result.
Standard library only.  Exit 0, or 1 when RAW holds nothing to report.
"""
import argparse
import csv
import glob
import json
import math
import os
import statistics
import sys


def load(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def by_cell(rows, key, value="median_us"):
    """{key(row): {config: {round: float}}}"""
    out = {}
    for r in rows:
        try:
            v = float(r[value])
        except (KeyError, TypeError, ValueError):
            continue
        out.setdefault(key(r), {}).setdefault(r["config"], {})[r["round"]] = v
    return out


def paired(a, b):
    """per-round a/b over the rounds both have"""
    return [a[k] / b[k] for k in a if k in b and b[k] > 0]


def med(v):
    return statistics.median(v) if v else None


class Fmt:
    def __init__(self, rounds):
        self.rounds = rounds

    def ratio(self, v, band=None):
        if not v:
            return "–"
        m = statistics.median(v)
        s = f"{m:.2f} ({min(v):.2f}–{max(v):.2f}"
        if len(v) < self.rounds:
            s += f", n={len(v)}"
        s += ")"
        if len(v) < 3:
            return "? " + s
        if band is not None and abs(math.log(m)) <= band:
            return "~" + s
        return s

    @staticmethod
    def us(d):
        return f"{statistics.median(d.values()):.1f}" if d else "–"


def aa_band(c, a="plain", b="plain2"):
    v = paired(c.get(b, {}), c.get(a, {}))
    return (max(abs(math.log(x)) for x in v), v) if v else (None, [])


def size_name(n):
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10} KiB"
    return f"{n} B"


def prev_note(rows, what, out):
    """True when --prev ran: its column's explanation goes out first."""
    prev = any(r["config"] == "prev" for r in rows)
    if prev:
        out.append(f"prev/cubatch: {what} under the earlier library (--prev) over {what} under this one "
                   "(> 1: this one faster; `~` inside the A/A).\n")
    return prev


def grid_section(rows, F, out):
    if not rows:
        return
    cells = by_cell(rows, lambda r: (r["mode"], r["dir"], int(r["count"]), int(r["size"]),
                                     r.get("layout", "contiguous").split(":")[0]))
    out.append("## Copy grid: contiguous and scattered layouts side by side (bench_copies -l)\n")
    out.append("Plain loop µs; A/A = plain2/plain; loop/cubatch = the plain loop over the loop under "
               "cubatch (> 1: cubatch faster); cubatch/hand = the loop under cubatch over the plain "
               "process's hand-written cuMemcpyBatchAsync (1: as good as rewriting by hand).  "
               "Scattered: independent random permutations of the blocks in source and destination "
               "(seed 43), nothing adjacent.\n")
    prev = prev_note(rows, "the loop", out)
    pc = " prev/cubatch |" if prev else ""
    out.append("| cell | contiguous µs | A/A | loop/cubatch | cubatch/hand |" + pc + " scattered µs | A/A | "
               "loop/cubatch | cubatch/hand |" + pc + " cubatch scattered/contiguous |")
    out.append("| --- | ---: | --- | --- | --- |" + (" --- |" if prev else "") + " ---: | --- | --- | --- |" +
               (" --- |" if prev else "") + " --- |")
    keys = sorted({(d, n, s) for (m, d, n, s, _) in cells if m == "loop"},
                  key=lambda k: (["h2d", "d2h", "d2d"].index(k[0]) if k[0] in ("h2d", "d2h", "d2d") else 9,
                                 k[2], k[1]))
    for d, n, s in keys:
        row = [f"{d} {n} × {size_name(s)}"]
        cb = {}
        for lay in ("contiguous", "scattered"):
            c = cells.get(("loop", d, n, s, lay), {})
            h = cells.get(("batch", d, n, s, lay), {})
            band, aa = aa_band(c)
            hband, _ = aa_band(h)
            hb = max(x for x in (band, hband) if x is not None) if (band is not None or hband is not None) else None
            cb[lay] = c.get("cubatch", {})
            row += [F.us(c.get("plain", {})), F.ratio(aa),
                    F.ratio(paired(c.get("plain", {}), c.get("cubatch", {})), band),
                    F.ratio(paired(c.get("cubatch", {}), h.get("plain", {})), hb)]
            if prev:
                row.append(F.ratio(paired(c.get("prev", {}), c.get("cubatch", {})), band))
        row.append(F.ratio(paired(cb["scattered"], cb["contiguous"])))
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    # the reference: one 4 MiB copy in the same process
    out.append("### Against one 4 MiB copy in the same process (issue 43's target: merged contiguous "
               "copies at >= 80% of its bandwidth)\n")
    out.append("GB/s are medians over rounds; the fractions are per process (the loop's or hand "
               "batch's GB/s over that process's one 4 MiB copy), median (min–max) over rounds.\n")
    out.append("| cell | layout | one 4 MiB copy GB/s (plain) | plain loop / 4 MiB | hand batch / 4 MiB | "
               "cubatch loop / 4 MiB | cubatch loop GB/s | target 0.80 |")
    out.append("| --- | --- | ---: | --- | --- | --- | ---: | --- |")
    gbs = by_cell(rows, lambda r: (r["mode"], r["dir"], int(r["count"]), int(r["size"]),
                                   r.get("layout", "contiguous").split(":")[0]), value="extra")
    for d, n, s in (("h2d", 1024, 4096), ("h2d", 256, 16384), ("d2h", 1024, 4096)):
        ref = gbs.get(("single", d, 1, 4 << 20, "contiguous"), {})
        for lay in ("contiguous", "scattered"):
            lp = gbs.get(("loop", d, n, s, lay), {})
            bt = gbs.get(("batch", d, n, s, lay), {})
            if not lp:
                continue
            fr = paired(lp.get("cubatch", {}), ref.get("cubatch", {}))
            hit = "–" if not fr else ("met" if statistics.median(fr) >= 0.80 else "not met")
            cbg = lp.get("cubatch", {})
            out.append(f"| {d} {n} × {size_name(s)} | {lay} | {F.us(ref.get('plain', {}))} | "
                       f"{F.ratio(paired(lp.get('plain', {}), ref.get('plain', {})))} | "
                       f"{F.ratio(paired(bt.get('plain', {}), ref.get('plain', {})))} | {F.ratio(fr)} | "
                       f"{F.us(cbg)} | {hit} |")
    out.append("")


def kv_section(rows, F, out):
    if not rows:
        return
    cells = by_cell(rows, lambda r: (r["mode"], r["dir"], int(r["count"]), int(r["size"]), int(r.get("run") or 1)))
    walls = by_cell(rows, lambda r: (r["mode"], r["dir"], int(r["count"]), int(r["size"]), int(r.get("run") or 1)),
                    value="extra")
    out.append("## KV-cache swap with block ids in runs (kv_swap -a driver -R 1,4,16,all)\n")
    out.append("Copy phase per step (µs, CUDA events around the copies on the side stream).  loop: one "
               "cuMemcpy{HtoD,DtoH}Async per block; merged: one copy per run of blocks adjacent on both "
               "sides (merged by hand: the ideal of a library that merges); batch: one hand-written "
               "cuMemcpyBatchAsync.  loop/cubatch > 1: cubatch faster; loop/merged: what merging can gain "
               "(plain processes); cubatch/merged: how far cubatch is from it (1 = there).\n")
    prev = prev_note(rows, "the copy phase", out)
    out.append("| case | run | plain loop µs | A/A | loop/cubatch | loop/merged | loop/batch | cubatch/merged "
               + ("| prev/cubatch " if prev else "") + "| step wall µs plain / cubatch |")
    out.append("| --- | ---: | ---: | --- | --- | --- | --- | --- |" + (" --- |" if prev else "") + " --- |")
    keys = sorted({(m, d, n, s, r) for (m, d, n, s, r) in cells if not m.endswith(("_merged", "_batch"))},
                  key=lambda k: (k[1], k[2], k[3], k[4]))
    for m, d, n, s, r in keys:
        c = cells[(m, d, n, s, r)]
        mg = cells.get((m + "_merged", d, n, s, r), {})
        bt = cells.get((m + "_batch", d, n, s, r), {})
        band, aa = aa_band(c)
        w = walls.get((m, d, n, s, r), {})
        out.append(f"| {d} {n} × {size_name(s)} | {'all' if r == n else r} | {F.us(c.get('plain', {}))} | "
                   f"{F.ratio(aa)} | {F.ratio(paired(c.get('plain', {}), c.get('cubatch', {})), band)} | "
                   f"{F.ratio(paired(c.get('plain', {}), mg.get('plain', {})))} | "
                   f"{F.ratio(paired(c.get('plain', {}), bt.get('plain', {})))} | "
                   f"{F.ratio(paired(c.get('cubatch', {}), mg.get('plain', {})))} | "
                   + (f"{F.ratio(paired(c.get('prev', {}), c.get('cubatch', {})), band)} | " if prev else "")
                   + f"{F.us(w.get('plain', {}))} / {F.us(w.get('cubatch', {}))} |")
    out.append("")


def tiles_section(rows, F, out):
    if not rows:
        return
    cells = by_cell(rows, lambda r: (r["mode"], r["dir"]))
    tile = rows[0].get("tile", "?")
    n = rows[0].get("count", "?")
    out.append(f"## 2D tiles: {n} tiles of {tile.replace('x', ' rows × ')} B, pitched device and pinned host "
               "buffers (bench_tiles)\n")
    out.append("loop2d: a cuMemcpy2DAsync per tile; batch3d: one hand-written cuMemcpy3DBatchAsync; rows: "
               "each tile as 1D row copies (what cubatch batches today); rowbatch: those rows as one "
               "cuMemcpyBatchAsync; whole: one 2D copy of the region.  plain/cubatch > 1: cubatch "
               "faster; loop2d/X: X's gain over the loop of 2D copies (plain processes).\n")
    out.append("cubatch/batch3d: the loop of 2D copies under cubatch over the plain process's hand-written "
               "cuMemcpy3DBatchAsync (< 1: cubatch faster; issue 43's target: loop2d at >= 5x its plain loop, "
               "and no slower than batch3d).\n")
    out.append("| dir | mode | plain µs | A/A | plain/cubatch | loop2d/mode (plain) | cubatch µs | cubatch/batch3d |")
    out.append("| --- | --- | ---: | --- | --- | --- | ---: | --- |")
    order = ["loop2d", "batch3d", "rows", "rowbatch", "whole"]
    for d in ("h2d", "d2h"):
        base = cells.get(("loop2d", d), {})
        b3 = cells.get(("batch3d", d), {})
        for m in order:
            c = cells.get((m, d))
            if not c:
                continue
            band, aa = aa_band(c)
            out.append(f"| {d} | {m} | {F.us(c.get('plain', {}))} | {F.ratio(aa)} | "
                       f"{F.ratio(paired(c.get('plain', {}), c.get('cubatch', {})), band)} | "
                       f"{F.ratio(paired(base.get('plain', {}), c.get('plain', {})))} | "
                       f"{F.us(c.get('cubatch', {}))} | "
                       f"{F.ratio(paired(c.get('cubatch', {}), b3.get('plain', {}))) if m == 'loop2d' else ''} |")
    out.append("")


def launch_section(rows, F, out):
    if not rows:
        return
    cells = by_cell(rows, lambda r: (r["mode"], r["stream"], r["launches"]))
    out.append("## Launch-bound program: tiny kernel launches, no copies (bench_launch)\n")
    out.append("step: the launches and a synchronize; enqueue: the launch calls alone.  cubatch/plain "
               "and off/plain < 1.02 or `~`: the preload costs nothing measurable; ns per launch = the "
               "median step over the launches, and the difference to plain per round.\n")
    out.append("| mode | stream | launches | plain µs | A/A | cubatch/plain | off/plain | ns/launch plain | "
               "cubatch − plain ns/launch |")
    out.append("| --- | --- | ---: | ---: | --- | --- | --- | ---: | --- |")
    for (m, s, n), c in sorted(cells.items()):
        p = c.get("plain", {})
        band, aa = aa_band(c)
        nn = int(n)
        diff = [(c["cubatch"][k] - p[k]) * 1e3 / nn for k in p if k in c.get("cubatch", {})]
        dtxt = (f"{statistics.median(diff):+.1f} ({min(diff):+.1f} to {max(diff):+.1f})" if diff else "–")
        out.append(f"| {m} | {s} | {n} | {F.us(p)} | {F.ratio(aa)} | "
                   f"{F.ratio(paired(c.get('cubatch', {}), p), band)} | {F.ratio(paired(c.get('off', {}), p), band)} | "
                   f"{(statistics.median(p.values()) * 1e3 / nn) if p else float('nan'):.1f} | {dtxt} |")
    out.append("")


def inproc_section(raw, out):
    for what, title in (("train", "PyTorch training step, in one process (inproc_ab.py train)"),
                        ("kvswap", "PyTorch KV swap as users write it, in one process (inproc_ab.py kvswap)")):
        p = os.path.join(raw, what + ".md")
        if not os.path.exists(p):
            continue
        out.append(f"## {title}\n")
        out.append("on = cubatch_set_enabled(1), off/off2 = 0, in rotating order each round; off/on > 1: "
                   "cubatch faster; off/off2 is the A/A.\n")
        text = open(p).read().strip()
        out.append(text if text else "(no output: see campaign.log and raw/err/)")
        out.append("")


def stats_section(raw, out):
    files = sorted(glob.glob(os.path.join(raw, "stats", "*.json")))
    if not files:
        return
    keys = ("copies", "deferred", "batched_copies", "kernel_copies", "kernel_launches", "batches", "pass_first",
            "pass_size", "pass_slow", "pass_chosen")
    sums = {}
    for f in files:
        base = os.path.basename(f).split(".")
        group = ".".join(base[:2])  # part.config
        try:
            j = json.load(open(f))
        except (OSError, ValueError):
            sums.setdefault(group, {}).setdefault("unreadable", 0)
            sums[group]["unreadable"] += 1
            continue
        c = j.get("counters", j)
        g = sums.setdefault(group, {"processes": 0})
        g["processes"] = g.get("processes", 0) + 1
        for k in keys:
            v = c.get(k, 0)
            if isinstance(v, (int, float)):
                g[k] = g.get(k, 0) + v
    out.append("## What cubatch did (its counters, summed per part and configuration)\n")
    out.append("| part.config | processes | " + " | ".join(keys) + " |")
    out.append("| --- | ---: | " + " | ".join("---:" for _ in keys) + " |")
    for g, v in sorted(sums.items()):
        out.append(f"| {g} | {v.get('processes', 0)} | " + " | ".join(str(int(v.get(k, 0))) for k in keys) + " |")
    out.append("")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw")
    ap.add_argument("--rounds-planned", type=int, default=0)
    a = ap.parse_args()
    raw = a.raw
    procs = load(os.path.join(raw, "procs.csv"))
    rounds = sorted({int(p["round"]) for p in procs if p.get("config") != "inproc"} or {0})
    nrounds = len(rounds) if procs else 0
    failed = [p for p in procs if p.get("exit") not in ("0", None)]
    F = Fmt(nrounds)
    out = ["# Issue 43 campaign: summary\n"]
    env = os.path.join(raw, "env.txt")
    if os.path.exists(env):
        out.append("```\n" + open(env).read().strip() + "\n```\n")
    out.append(f"Process-level rounds run: {nrounds}" +
               (f" of {a.rounds_planned} planned" if a.rounds_planned else "") +
               f"; processes: {len(procs)}; failed or not run: {len(failed)}" +
               ("".join(f"\n- {p['part']} {p['config']} round {p['round']}: exit {p['exit']}" for p in failed)) + "\n")
    n0 = len(out)
    grid_section(load(os.path.join(raw, "grid.csv")), F, out)
    kv_section(load(os.path.join(raw, "kv.csv")), F, out)
    tiles_section(load(os.path.join(raw, "tiles.csv")), F, out)
    launch_section(load(os.path.join(raw, "launch.csv")), F, out)
    inproc_section(raw, out)
    stats_section(raw, out)
    print("\n".join(out))
    return 0 if len(out) > n0 else 1


if __name__ == "__main__":
    sys.exit(main())
