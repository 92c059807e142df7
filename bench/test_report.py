#!/usr/bin/env python3
"""Self-test of bench_report.py on a synthetic campaign (no GPU; standard library only).

    test_report.py [--keep DIR]

Writes a bench.csv, bench-stats.jsonl and bench.log of plausible, made-up
numbers (7 rounds, six configurations, three CPU settings, every part), with
planted cases: a miss (H2D 8 x 16 KiB, cubatch 10% slower), a noisy cell
(D2H 8 x 4 KiB, +-15% between processes, cubatch 5% faster), one plain2 process
12% slow (round 5, two cores: the miss is within the noise there), an overlap miss
pinned to one core, an enqueue cost over the target pinned to one core, the
kernel configuration in one round only in the two-core setting, a PyTorch
variant inside the noise, and a batch-engine process that launched the copy
kernel.  Runs the report and checks its markers and summary.  The numbers are
synthetic: never copy them into RESULTS.md.  Exit 0 when every check holds.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = ("plain", "plain2", "cubatch", "batch", "kernel", "off")
CPUS = ("unpinned", "one", "two")
ROUNDS = 7


def loop_us(d, n, s):
    per = {"h2d": 2.6, "d2h": 2.1, "d2d": 5.3}[d]
    return 8 + n * (per + s / 50000)


def hand_us(d, n, s):
    per = {"h2d": 1.5, "d2h": 0.6, "d2d": 5.0}[d]
    return 8 + n * (per + s / 50000)


def make(dirpath, seed=7):
    rnd = random.Random(seed)
    rows = []
    stats = []

    def noise(sigma):
        return math.exp(rnd.gauss(0, sigma))

    for r in range(1, ROUNDS + 1):
        for cpu in CPUS:
            for cfg in CONFIGS:
                if cfg == "kernel" and cpu == "two" and r > 1:
                    continue  # as if dropped after round 1
                proc = noise(0.01)
                if (r, cpu, cfg) == (5, "two", "plain2"):
                    proc *= 1.12  # a slow process: every A/A of the two-core setting is wide

                def add(mode, stream, d, n, s, t, extra):
                    rows.append((cfg, r, "copies", cpu, mode, stream, d, n, s, 5,
                                 round(t, 2), round(t * 0.97, 2), round(t * 1.05, 2), extra))

                for d in ("h2d", "d2h", "d2d"):
                    cells = [(n, s) for n in (8, 64, 256, 1024) for s in (4096, 16384)]
                    cells += [(256, 65536), (1024, 256)]
                    for n, s in cells:
                        lp = loop_us(d, n, s)
                        f = {"plain": 1, "plain2": 1, "off": 1.01,
                             "cubatch": 0.85 if n == 8 else 0.35,
                             "batch": 0.9 if n == 8 else 0.6,
                             "kernel": 0.8 if n == 8 else 0.25}[cfg]
                        sig = 0.01
                        if (d, n, s) == ("h2d", 8, 16384) and cfg == "cubatch":
                            f = 1.10  # the planted miss
                        if (d, n, s) == ("d2h", 8, 4096):
                            sig = 0.15  # the planted noisy cell
                            if cfg == "cubatch":
                                f = 0.95
                        t = lp * f * proc * noise(sig)
                        add("loop", "side", d, n, s, t, f"{n * s / t / 1e3:.3f}")
                        if cfg in ("plain", "plain2"):
                            th = hand_us(d, n, s) * proc * noise(0.01)
                            add("batch", "side", d, n, s, th, f"{n * s / th / 1e3:.3f}")
                    ts = 12 * proc * noise(0.02)
                    add("single", "side", d, 1, 4096, ts, "0.3")
                for d, n, busy in (("h2d", 64, 100), ("h2d", 256, 420), ("d2h", 64, 60)):
                    lp = loop_us(d, n, 4096)
                    t = (busy + 0.4 * lp if cfg in ("plain", "plain2", "off") else busy + 12)
                    if (d, cpu, cfg) == ("d2h", "one", "cubatch"):
                        t = (busy + 0.4 * lp) * 1.08  # the planted overlap miss
                    add("overlap", "side", d, n, 4096, t * proc * noise(0.01), f"{busy:.1f}")
                for d in ("h2d", "d2h"):
                    ns = {"h2d": 2500, "d2h": 2000}[d]
                    if cfg in ("cubatch", "batch", "kernel"):
                        ns = 140 if cpu == "one" else 60
                    ns *= proc * noise(0.02)
                    add("enqueue", "side", d, 1024, 4096, ns * 1024 / 1e3, f"{ns:.1f}")
                for stream in ("legacy", "ptds"):
                    for d, n in (("d2h", 64), ("h2d", 1024)):
                        lp = loop_us(d, n, 4096)
                        f = {"cubatch": 0.3, "kernel": 0.25}.get(cfg, 1.0)
                        if stream == "ptds" and cfg == "batch":
                            f = 0.6
                        add("loop", stream, d, n, 4096, lp * f * proc * noise(0.01), "1.0")
                        if stream == "ptds" and cfg in ("plain", "plain2"):
                            add("batch", stream, d, n, 4096,
                                hand_us(d, n, 4096) * proc * noise(0.01), "1.0")
                if cfg not in ("plain", "plain2"):
                    batch_kernel = 5 if (cfg == "batch" and r == 3 and cpu == "one") else 0
                    st = {"batching": cfg != "off", "reason": "ok" if cfg != "off" else
                          "CUBATCH_ENABLE=0",
                          "counters": {"copies": 60000, "deferred": 0 if cfg == "off" else 58000,
                                       "pass_first": 2000 if cfg != "off" else 0,
                                       "pass_disabled": 60000 if cfg == "off" else 0,
                                       "kernel_launches": (1500 if cfg in ("cubatch", "kernel")
                                                           else batch_kernel),
                                       "kernel_copies": 50000 if cfg in ("cubatch", "kernel")
                                       else 0,
                                       "batches": {"batch": 1500, "off": 0}.get(cfg, 20),
                                       "batched_copies": {"batch": 58000, "off": 0}.get(cfg,
                                                                                       400),
                                       "legacy_runs": 0 if cfg in ("batch", "off") else 80,
                                       "batch_errors": 0, "replay_errors": 0}}
                    stats.append({"config": cfg, "cpu": cpu, "part": "copies", "round": r,
                                  "rc": 0, "ms": 900, "stats": st})
        for cfg in ("plain", "plain2", "cubatch", "batch", "off"):
            proc = noise(0.06)
            for cpu in CPUS:
                for mode, base in (("foreach", 900.0), ("pyloop", 2100.0)):
                    for stream in ("default", "side"):
                        f = 1.0
                        if cfg == "cubatch" and mode == "foreach":
                            f = 0.75
                        t = base * f * proc * noise(0.03)
                        rows.append((cfg, r, "torch", cpu, mode, stream, "h2d", 256, 4096, 50,
                                     round(t, 2), round(t * 0.95, 2), round(t * 1.1, 2),
                                     f"{t * 0.9:.2f}"))
    with open(os.path.join(dirpath, "bench.csv"), "w") as f:
        f.write("config,round,part,cpu,mode,stream,dir,count,size,reps,median_us,p10_us,"
                "p90_us,extra\n")
        for row in rows:
            f.write(",".join(str(x) for x in row) + "\n")
    with open(os.path.join(dirpath, "bench-stats.jsonl"), "w") as f:
        for o in stats:
            f.write(json.dumps(o) + "\n")
    with open(os.path.join(dirpath, "bench.log"), "w") as f:
        f.write("# cubatch bench: synthetic\n"
                "DROPPED (budget: 1 ms needed, 0 ms left): the kernel configuration outside "
                "the one-core setting, from round 2\n")


def row_of(md, start, must):
    """The first table row after the heading START whose text contains every MUST."""
    i = md.index(start)
    for ln in md[i:].splitlines():
        if ln.startswith("|") and all(m in ln for m in must):
            return [c.strip() for c in ln.strip("|").split("|")]
    raise AssertionError(f"no row with {must} after {start!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="write the files and bench.md here and keep them")
    a = ap.parse_args()
    d = a.keep or tempfile.mkdtemp(prefix="bench-report-test.")
    os.makedirs(d, exist_ok=True)
    make(d)
    p = subprocess.run([sys.executable, os.path.join(HERE, "bench_report.py"),
                        os.path.join(d, "bench.csv"), "--stats",
                        os.path.join(d, "bench-stats.jsonl"), "--log",
                        os.path.join(d, "bench.log")], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
        return 1
    md = p.stdout
    with open(os.path.join(d, "bench.md"), "w") as f:
        f.write(md)
    summary = md[md.index("## Summary"):md.index("## Grid")]
    fails = []

    def check(what, cond):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            fails.append(what)

    for cpu in ("unpinned", "one core", "two cores"):
        r = row_of(md, f"### H2D, {cpu}\n", ["| 8 | 16 KiB |"])
        if cpu != "two cores":
            check(f"H2D 8 x 16 KiB {cpu}: loop/cubatch bold (a miss): {r[5]}",
                  r[5].startswith("**0.9"))
            check(f"H2D 8 x 16 KiB {cpu}: in the summary's misses",
                  f"**H2D 8 × 16 KiB, {cpu}**" in summary)
        else:
            check(f"H2D 8 x 16 KiB {cpu}: within the noise of the slow plain2: {r[5]}, "
                  f"A/A {r[10]}", r[5].startswith("~0.9") and "1.1" in r[10])
            check(f"H2D 8 x 16 KiB {cpu}: not in the summary's misses",
                  f"**H2D 8 × 16 KiB, {cpu}**" not in summary)
        r = row_of(md, f"### D2H, {cpu}\n", ["| 8 | 4 KiB |"])
        check(f"D2H 8 x 4 KiB {cpu}: loop/cubatch within noise: {r[5]}", r[5].startswith("~"))
        r = row_of(md, f"### D2H, {cpu}\n", ["| 1024 | 4 KiB |"])
        check(f"D2H 1024 x 4 KiB {cpu}: a clear win, no marker: {r[5]}",
              r[5][0].isdigit() and float(r[5].split()[0]) > 2)
        check(f"D2H 1024 x 4 KiB {cpu}: off/loop within noise: {r[9]}", r[9].startswith("~"))
    r = row_of(md, "### D2D, two cores\n", ["| 1024 | 4 KiB |"])
    check(f"kernel with one round (two cores): '?' and n=1: {r[8]}",
          r[8].startswith("?") and "n=1" in r[8])
    r = row_of(md, "## Copies, then CPU work", ["D2H 64 × 4 KiB", "one core"])
    check(f"overlap D2H 64 x 4 KiB one core: bold: {r[5]}", r[5].startswith("**"))
    check("overlap miss in the summary", "**overlap: D2H 64 × 4 KiB, one core**" in summary)
    r = row_of(md, "## Default streams", ["legacy stream", "D2H 64 × 4 KiB", "unpinned"])
    check(f"legacy stream: no hand batch: {r[3]}, {r[6]}", r[3] == "–" and r[6] == "–")
    r = row_of(md, "## Default streams", ["ptds stream", "H2D 1024 × 4 KiB", "unpinned"])
    check(f"ptds stream: a hand batch: {r[3]}", r[3] != "–")
    check("enqueue over the target pinned to one core", "one core 140 ns (over)" in summary
          or "(over)" in summary)
    check("enqueue under the target unpinned",
          "H2D 1024 × 4 KiB unpinned 6" in summary and "unpinned 60 ns (over)" not in summary)
    check("pinned to one core: H2D 256 x 4 KiB and D2H 1024 x 4 KiB",
          "H2D 256 × 4 KiB" in summary and "D2H 1024 × 4 KiB" in summary)
    check("worst cubatch/hand listed", "worst cubatch/hand" in summary)
    r = row_of(md, "## PyTorch", ["| pyloop | default | unpinned |"])
    check(f"PyTorch pyloop: within noise: {r[5]}", r[5].startswith("~"))
    r = row_of(md, "## PyTorch", ["| foreach | default | one core |"])
    check(f"PyTorch foreach: a win: {r[5]}", r[5][0].isdigit() and float(r[5].split()[0]) > 1.2)
    check("PyTorch default-stream speedup in the summary",
          "PyTorch on the default stream" in summary)
    r = row_of(md, "## Engines seen", ["| copies | batch |"])
    check(f"stats: copy kernel under ENGINE=batch flagged: {r[-1]}",
          "copy kernel under ENGINE=batch" in r[-1])
    r = row_of(md, "## Engines seen", ["| copies | cubatch |"])
    check(f"stats: cubatch ok: {r[-1]}", r[-1] == "ok")
    r = row_of(md, "## Engines seen", ["| copies | off |"])
    check(f"stats: off ok: {r[-1]}", r[-1] == "ok")
    check("log's DROPPED line in the summary", "DROPPED (budget" in summary)
    if fails or a.keep:
        print(f"{len(fails)} of the checks failed; files in {d}")
    else:
        for f in ("bench.csv", "bench-stats.jsonl", "bench.log", "bench.md"):
            os.remove(os.path.join(d, f))
        os.rmdir(d)
        print("all checks hold")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
