#!/usr/bin/env python3
"""Markdown tables from run-bench.sh's bench.csv (Python 3 standard library only).

    bench_report.py bench.csv [--stats bench-stats.jsonl] [--log bench.log] > bench.md

Every time is the median over rounds of the per-process medians (µs).  Every
ratio is computed round by round (the two processes of one round and CPU
setting), then summarised as median (min–max over rounds):
  loop/cubatch   plain loop time / the same loop under cubatch (> 1: cubatch faster)
  cubatch/hand   the loop under cubatch / the hand-written cuMemcpyBatchAsync of
                 the plain process (1: as good as rewriting by hand; < 1: better)
  batch/hand     the loop under CUBATCH_ENGINE=batch / the hand batch
  batch/loop     the same over the plain loop, where there is no hand batch
  kernel/loop    the loop under CUBATCH_ENGINE=kernel / the plain loop (< 1: faster)
  off/loop       the loop under CUBATCH_ENABLE=0 / the plain loop (the preload's own cost)
  A/A            plain2 / plain: two processes that do the same thing
Markers:
  ~        within noise: the ratio is no further from 1 than the cell's A/A ratio
           ever was (|ln r| <= max over rounds of |ln(plain2/plain)|; for ratios
           to the hand batch, the hand batch's own A/A counts too): not a result
  **bold** a miss: cubatch slower than the plain loop (loop/cubatch < 0.98) and
           outside the noise
  ?        fewer than 3 rounds paired: not a result
  n=K      the ratio has K rounds, fewer than the campaign's
"""
import argparse
import csv
import json
import math
import statistics
import sys
from collections import defaultdict

CPU_ORDER = ("unpinned", "one", "two")
CPU_NAME = {"unpinned": "unpinned", "one": "one core", "two": "two cores", "-": "(inside)"}
DIR_ORDER = ("h2d", "d2h", "d2d")
MISS = 0.98


def size_name(n):
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10} KiB"
    return f"{n} B"


def cell_name(d, c, s):
    return f"{d.upper()} {c} × {size_name(s)}"


def us(v):
    if v is None:
        return "–"
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


class Ratio:
    """Per-round ratios of one comparison, with the noise band to judge them by."""

    def __init__(self, values, noise):
        self.v = sorted(values)
        self.n = len(values)
        self.noise = noise
        self.med = statistics.median(values) if values else None

    @property
    def lo(self):
        return self.v[0]

    @property
    def hi(self):
        return self.v[-1]

    def few(self):
        return self.n < 3

    def within_noise(self):
        return self.noise is not None and abs(math.log(self.med)) <= self.noise

    def miss(self):
        """For a loop/cubatch ratio: cubatch slower by over 2%, outside the noise."""
        return self.med is not None and not self.few() and self.med < MISS \
            and not self.within_noise()

    def win(self):
        return self.med is not None and not self.few() and self.med > 1 \
            and not self.within_noise()


class Data:
    def __init__(self, path):
        self.t = defaultdict(lambda: defaultdict(dict))  # key -> config -> round -> µs
        self.x = defaultdict(lambda: defaultdict(dict))  # same for the extra column
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    key = (r["part"], r["cpu"], r["mode"], r["stream"], r["dir"],
                           int(r["count"]), int(r["size"]))
                    rnd = int(r["round"])
                    self.t[key][r["config"]][rnd] = float(r["median_us"])
                except (KeyError, ValueError, TypeError):
                    continue
                try:
                    self.x[key][r["config"]][rnd] = float(r["extra"])
                except (ValueError, TypeError):
                    pass
        self.rounds = max((len(v) for k in self.t for v in self.t[k].values()), default=0)

    def keys(self, part=None, mode=None, stream=None, cpu=None):
        return [k for k in self.t if (part is None or k[0] == part)
                and (mode is None or k[2] in mode) and (stream is None or k[3] in stream)
                and (cpu is None or k[1] == cpu)]

    def med(self, key, cfg, table=None):
        v = (table or self.t).get(key, {}).get(cfg)
        return statistics.median(v.values()) if v else None

    def spread(self, key, cfg, table=None):
        v = (table or self.t).get(key, {}).get(cfg)
        return (min(v.values()), max(v.values())) if v else None

    def per_round(self, ka, ca, kb, cb, table=None):
        t = table or self.t
        a, b = t.get(ka, {}).get(ca, {}), t.get(kb, {}).get(cb, {})
        return [a[r] / b[r] for r in sorted(a) if r in b and b[r] > 0 and a[r] > 0]

    def noise(self, key, table=None):
        """Largest |ln(plain2/plain)| over the rounds of this cell; None without A/A."""
        aa = self.per_round(key, "plain2", key, "plain", table)
        return max(abs(math.log(r)) for r in aa) if aa else None

    def ratio(self, ka, ca, kb, cb, noise_keys=None, table=None):
        vals = self.per_round(ka, ca, kb, cb, table)
        if not vals:
            return None
        nz = [self.noise(k, table) for k in (noise_keys or [kb])]
        nz = [z for z in nz if z is not None]
        return Ratio(vals, max(nz) if nz else None)


def fmt(r, rounds, speedup=False, marks=True):
    """median (min–max) with the markers; speedup: a loop/cubatch ratio (bold misses)."""
    if r is None:
        return "–"
    body = f"{r.med:.2f} ({r.lo:.2f}–{r.hi:.2f}"
    body += f", n={r.n})" if r.n < rounds else ")"
    if not marks:
        return body
    if r.few():
        return "?" + body
    if speedup and r.miss():
        return f"**{r.med:.2f}** " + body[body.index("("):]
    if r.within_noise():
        return "~" + body
    return body


def aa_fmt(d, key, rounds, table=None):
    vals = d.per_round(key, "plain2", key, "plain", table)
    return fmt(Ratio(vals, None), rounds, marks=False) if vals else "–"


def cpu_rank(c):
    return CPU_ORDER.index(c) if c in CPU_ORDER else len(CPU_ORDER)


def cpu_sorted(cpus):
    return sorted(cpus, key=cpu_rank)


def main():
    ap = argparse.ArgumentParser(description="markdown tables from bench.csv")
    ap.add_argument("csv")
    ap.add_argument("--stats", help="bench-stats.jsonl")
    ap.add_argument("--log", help="bench.log: its DROPPED, SKIPPED and FAILED lines are listed")
    a = ap.parse_args()
    d = Data(a.csv)
    R = d.rounds
    out = []
    w = out.append
    misses, wins, noisy, total = [], [], [], [0]

    def judge(where, r):
        if r is None:
            return
        total[0] += 1
        if r.miss():
            misses.append((where, r))
        elif r.win():
            wins.append((where, r))
        elif not r.few():
            noisy.append((where, r))

    body = []
    b = body.append

    # --- the grid: side stream, loop and hand batch ------------------------------
    grid = [k for k in d.keys(part="copies", mode=("loop",), stream=("side",)) if k[5] > 1]
    cpus = cpu_sorted({k[1] for k in d.t})
    worst_hand = {}
    for dr in DIR_ORDER:
        for cpu in cpus:
            rows = sorted((k for k in grid if k[4] == dr and k[1] == cpu),
                          key=lambda k: (k[6], k[5]))
            if not rows:
                continue
            b(f"\n### {dr.upper()}, {CPU_NAME.get(cpu, cpu)}\n")
            b("| copies | size | loop | hand | cubatch | loop/cubatch | cubatch/hand "
              "| batch/hand | kernel/loop | off/loop | A/A |")
            b("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            for k in rows:
                kh = k[:2] + ("batch",) + k[3:]
                lc = d.ratio(k, "plain", k, "cubatch")
                ch = d.ratio(k, "cubatch", kh, "plain", noise_keys=[k, kh])
                bh = d.ratio(k, "batch", kh, "plain", noise_keys=[k, kh])
                kl = d.ratio(k, "kernel", k, "plain")
                ol = d.ratio(k, "off", k, "plain")
                judge(f"{cell_name(dr, k[5], k[6])}, {CPU_NAME.get(cpu, cpu)}", lc)
                if ch is not None and k[5] >= 256 and not ch.few():
                    if cpu not in worst_hand or ch.med > worst_hand[cpu][1].med:
                        worst_hand[cpu] = (cell_name(dr, k[5], k[6]), ch)
                b(f"| {k[5]} | {size_name(k[6])} | {us(d.med(k, 'plain'))} | "
                  f"{us(d.med(kh, 'plain'))} | {us(d.med(k, 'cubatch'))} | "
                  f"{fmt(lc, R, True)} | {fmt(ch, R)} | {fmt(bh, R)} | {fmt(kl, R)} | "
                  f"{fmt(ol, R)} | {aa_fmt(d, k, R)} |")

    # --- extras ------------------------------------------------------------------
    def simple_table(title, label, keys, note, show_busy=False, hand=False, side_ref=False):
        if not keys:
            return
        b(f"\n## {title}\n")
        if note:
            b(note + "\n")
        head = ["cell", "cpu"]
        if show_busy:
            head.append("busy µs")
        head += ["loop", "hand"] if hand else ["loop"]
        head += ["cubatch", "loop/cubatch"]
        head += ["cubatch/hand"] if hand else []
        head += ["batch/loop", "kernel/loop", "off/loop", "A/A"]
        head += ["side stream: loop/cubatch"] if side_ref else []
        b("| " + " | ".join(head) + " |")
        b("| --- | --- |" + " ---: |" * (len(head) - 2))
        for k in keys:
            where = f"{cell_name(k[4], k[5], k[6])}"
            if k[3] not in ("side",):
                where += f" ({k[3]} stream)"
            lc = d.ratio(k, "plain", k, "cubatch")
            judge(f"{label}: {where}, {CPU_NAME.get(k[1], k[1])}", lc)
            cells = [where, CPU_NAME.get(k[1], k[1])]
            if show_busy:
                bu = d.med(k, "plain", d.x)
                cells.append("–" if bu is None else f"{bu:.0f}")
            cells.append(us(d.med(k, "plain")))
            if hand:
                kh = k[:2] + ("batch",) + k[3:]
                cells.append(us(d.med(kh, "plain")))
            cells += [us(d.med(k, "cubatch")), fmt(lc, R, True)]
            if hand:
                cells.append(fmt(d.ratio(k, "cubatch", kh, "plain", noise_keys=[k, kh]), R)
                             if d.med(kh, "plain") is not None else "–")
            cells += [fmt(d.ratio(k, c, k, "plain"), R) for c in ("batch", "kernel", "off")]
            cells.append(aa_fmt(d, k, R))
            if side_ref:
                ks = k[:3] + ("side",) + k[4:]
                cells.append(fmt(d.ratio(ks, "plain", ks, "cubatch"), R, True))
            b("| " + " | ".join(cells) + " |")

    def order(keys):
        return sorted(keys, key=lambda k: (DIR_ORDER.index(k[4]) if k[4] in DIR_ORDER else 9,
                                           k[3], k[5], k[6], cpu_rank(k[1])))

    simple_table("One copy + sync (µs)", "single", order(d.keys(part="copies", mode=("single",))),
                 "The first copy of a burst is never deferred: this is the cost of the "
                 "preload on a lone copy.")
    simple_table("Copies, then CPU work, then sync (µs)", "overlap",
                 order(d.keys(part="copies", mode=("overlap",))),
                 "The loop of copies, a CPU busy loop of a fixed time, then the sync; the "
                 "ideal is max(copies, busy).  This must never be slower than the plain loop.",
                 show_busy=True)

    simple_table("Copies with event records, then sync (µs)", "events",
                 order(d.keys(part="copies", mode=("events1", "events2"))),
                 "The loop with one (`events1`, 1024 × 4 KiB) or two (`events2`, 256 × 4 KiB) "
                 "cuEventRecord after each copy, each copy its own events: the records join "
                 "the run as markers (rule 11).  Targets: ≥ 8× and ≥ 5×.")

    # enqueue: ns per call (extra column), plus the time ratio
    enq = order(d.keys(part="copies", mode=("enqueue",)))
    enq_summary = []
    if enq:
        b("\n## Enqueue cost: ns per call, no sync in the timed part\n")
        b("The calls alone, timed without the sync; ns per call = the median time / "
          "the count.  Target under cubatch: < 100 ns per deferred copy (every copy of "
          "these runs but the first is deferred).\n")
        cfgs = ("plain", "cubatch", "batch", "kernel", "off", "plain2")
        b("| cell | cpu | " + " | ".join(f"{c} ns" for c in cfgs) +
          " | cubatch ns (min–max) | loop/cubatch | A/A |")
        b("| --- | --- |" + " ---: |" * (len(cfgs) + 3))
        for k in enq:
            ns = [d.med(k, c, d.x) for c in cfgs]
            sp = d.spread(k, "cubatch", d.x)
            lc = d.ratio(k, "plain", k, "cubatch")
            judge(f"enqueue: {cell_name(k[4], k[5], k[6])}, {CPU_NAME.get(k[1], k[1])}", lc)
            if ns[1] is not None:
                enq_summary.append((k, ns[1], sp))
            b(f"| {cell_name(k[4], k[5], k[6])} | {CPU_NAME.get(k[1], k[1])} | " +
              " | ".join("–" if v is None else f"{v:.0f}" for v in ns) + " | " +
              ("–" if sp is None else f"{sp[0]:.0f}–{sp[1]:.0f}") +
              f" | {fmt(lc, R, True)} | {aa_fmt(d, k, R)} |")

    streams = order([k for k in d.keys(part="copies", mode=("loop",))
                     if k[3] not in ("side",)])
    simple_table("Default streams: the loop on the legacy and per-thread streams (µs)", "stream",
                 streams,
                 "`legacy` = CU_STREAM_LEGACY (the batch API cannot run there: no hand "
                 "batch, and CUBATCH_ENGINE=batch defers nothing), `null` = the NULL handle, "
                 "`ptds` = CU_STREAM_PER_THREAD, `blocking` = a created stream with flags 0.  "
                 "The last column is the same cell on the non-blocking side stream (grid).",
                 hand=True, side_ref=True)

    # --- PyTorch -------------------------------------------------------------------
    tk = sorted(d.keys(part="torch"), key=lambda k: (k[2], k[3], cpu_rank(k[1])))
    torch_summary = []
    if tk:
        b("\n## PyTorch: 256 × 4 KiB pinned → GPU, then torch.cuda.synchronize() (µs)\n")
        b("`foreach` = torch._foreach_copy_(dsts, srcs, non_blocking=True); `pyloop` = a "
          "Python loop of dst.copy_(src, non_blocking=True); `default` = PyTorch's default "
          "(legacy) stream, `side` = a torch.cuda.Stream().  Median of the iterations in "
          "each process, median over rounds; enqueue = the copies alone, before the sync.  "
          "One process per configuration and round; the CPU settings are applied inside it "
          "(every thread pinned).  The A/A noise of PyTorch loops is large: read the ~.\n")
        b("| variant | stream | cpu | plain | cubatch | loop/cubatch | batch/loop | off/loop "
          "| A/A | enqueue plain | enqueue cubatch |")
        b("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for k in tk:
            lc = d.ratio(k, "plain", k, "cubatch")
            judge(f"PyTorch {k[2]} {k[3]} stream, {CPU_NAME.get(k[1], k[1])}", lc)
            if k[3] == "default":
                torch_summary.append((k, lc))
            b(f"| {k[2]} | {k[3]} | {CPU_NAME.get(k[1], k[1])} | {us(d.med(k, 'plain'))} | "
              f"{us(d.med(k, 'cubatch'))} | {fmt(lc, R, True)} | "
              f"{fmt(d.ratio(k, 'batch', k, 'plain'), R)} | "
              f"{fmt(d.ratio(k, 'off', k, 'plain'), R)} | {aa_fmt(d, k, R)} | "
              f"{us(d.med(k, 'plain', d.x))} | {us(d.med(k, 'cubatch', d.x))} |")

    kv = order(d.keys(part="kv"))
    simple_table("kv_swap: copy phase per step (µs, events)", "kv_swap", kv, "")

    # --- engines seen (bench-stats.jsonl) ---------------------------------------------
    if a.stats:
        stats_section(a.stats, b)

    # --- the summary at the top -----------------------------------------------------
    w("# cubatch benchmark\n")
    w("```\n" + __doc__.split("\n\n", 2)[2].strip() + "\n```\n")
    rounds_by_part = defaultdict(int)
    for k, v in d.t.items():
        for cfg in v.values():
            rounds_by_part[k[0]] = max(rounds_by_part[k[0]], len(cfg))
    configs = sorted({c for v in d.t.values() for c in v})
    w("## Summary\n")
    if not d.t:
        w("- no measurements in the CSV (see bench.log)")
    w(f"- rounds: {', '.join(f'{p} {n}' for p, n in sorted(rounds_by_part.items()))}; "
      f"configurations: {', '.join(configs)}; CPU settings: "
      f"{', '.join(CPU_NAME.get(c, c) for c in cpus if c != '-')}")
    if d.t and "plain2" not in configs:
        w("- **no plain2 (A/A) process was measured**: no ratio can be told from noise here")
    w(f"- loop/cubatch judged in {total[0]} cells: {len(wins)} faster outside the noise, "
      f"{len(noisy)} within the noise, {len(misses)} misses (loop/cubatch < {MISS} "
      "outside the noise)" + (":" if misses else ""))
    for where, r in sorted(misses, key=lambda m: m[1].med):
        w(f"  - **{where}**: {fmt(r, R, True)}, A/A noise ±{100 * (math.exp(r.noise) - 1):.0f}%"
          if r.noise is not None else f"  - **{where}**: {fmt(r, R, True)}")
    if worst_hand:
        w("- worst cubatch/hand for runs of 256 copies or more (> 1: slower than "
          "the hand-written batch): " + "; ".join(
              f"{CPU_NAME.get(c, c)}: {n} {fmt(r, R)}"
              for c, (n, r) in sorted(worst_hand.items(), key=lambda x: cpu_rank(x[0]))))
    picks = []
    for dr, c, s in (("h2d", 256, 4096), ("d2h", 1024, 4096)):
        k = ("copies", "one", "loop", "side", dr, c, s)
        if k in d.t:
            picks.append(f"{cell_name(dr, c, s)} {fmt(d.ratio(k, 'plain', k, 'cubatch'), R, True)}")
    if picks:
        w("- loop/cubatch pinned to one core: " + "; ".join(picks))
    if enq_summary:
        w("- enqueue, ns per call under cubatch (target < 100 ns per deferred copy): " +
          "; ".join(f"{cell_name(k[4], k[5], k[6])} {CPU_NAME.get(k[1], k[1])} {v:.0f} ns"
                    f"{'' if v < 100 else ' (over)'}" for k, v, _ in enq_summary))
    if torch_summary:
        w("- PyTorch on the default stream, loop/cubatch (speedup): " + "; ".join(
            f"{k[2]} {CPU_NAME.get(k[1], k[1])} {fmt(r, R, True)}" for k, r in torch_summary))
    if a.log:
        left = []
        try:
            with open(a.log) as f:
                left = [ln.rstrip() for ln in f
                        if ln.startswith(("DROPPED", "SKIPPED", "FAILED", "# BENCH_SIM"))]
        except OSError as e:
            left = [f"(bench.log unreadable: {e})"]
        if left:
            w(f"- left out, failed or simulated ({len(left)}):")
            for ln in left[:30]:
                w(f"  - {ln}")
            if len(left) > 30:
                w(f"  - … {len(left) - 30} more in bench.log")
    w("\n## Grid: the loop of copies + sync on a non-blocking stream (µs)")
    out.extend(body)
    print("\n".join(out))


STAT_COLS = ("copies", "deferred", "kernel_launches", "kernel_copies", "batches",
             "batched_copies", "legacy_runs", "singles", "batch_errors", "replayed")


def stats_section(path, b):
    agg = defaultdict(lambda: defaultdict(int))
    procs = defaultdict(int)
    off_reasons = defaultdict(set)
    try:
        with open(path) as f:
            for ln in f:
                try:
                    o = json.loads(ln)
                except ValueError:
                    continue
                key = (o.get("part", "?"), o.get("config", "?"))
                st = o.get("stats", {})
                procs[key] += 1
                for name, v in st.get("counters", {}).items():
                    if isinstance(v, int):
                        agg[key][name] += v
                if not st.get("batching", True):
                    off_reasons[key].add(st.get("reason", "?"))
    except OSError as e:
        b(f"\n(statistics unreadable: {e})")
        return
    if not procs:
        return
    b("\n## Engines seen: cubatch's counters, summed over the preloaded processes\n")
    b("From bench-stats.jsonl (CUBATCH_STATS=json).  `pass` lists the reasons copies "
      "passed through; `check` says what does not match the configuration.\n")
    b("| part | config | processes | " + " | ".join(STAT_COLS) + " | pass | check |")
    b("| --- | --- |" + " ---: |" * (len(STAT_COLS) + 1) + " --- | --- |")
    for key in sorted(procs):
        c = agg[key]
        passes = ", ".join(f"{n[5:]} {v}" for n, v in sorted(c.items())
                           if n.startswith("pass_") and v)
        check, note = [], []
        cfg = key[1]
        if off_reasons[key] and cfg != "off":
            check.append("batching off: " + ", ".join(sorted(off_reasons[key])))
        if cfg == "off" and (c["deferred"] or c["batches"] or c["kernel_launches"]):
            check.append("deferred or submitted under CUBATCH_ENABLE=0")
        if cfg in ("cubatch", "batch", "kernel") and not c["deferred"]:
            check.append("nothing deferred")
        if cfg == "batch" and c["kernel_launches"]:
            check.append("copy kernel under ENGINE=batch")
        if cfg == "kernel" and c["batches"]:
            note.append(f"{c['batches']} batch-API calls too (copies the kernel cannot take)")
        if c["batch_errors"] or c["replay_errors"]:
            check.append(f"errors: {c['batch_errors']} refused, {c['replay_errors']} replays failed")
        check = ["**" + x + "**" for x in check] + note
        b(f"| {key[0]} | {cfg} | {procs[key]} | " + " | ".join(str(c[n]) for n in STAT_COLS) +
          f" | {passes or '–'} | {'; '.join(check) or 'ok'} |")


if __name__ == "__main__":
    main()
