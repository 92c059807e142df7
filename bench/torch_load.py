#!/usr/bin/env python3
"""torch_load.py - PyTorch copies on a side stream beside cuBLAS matrix products
on the default stream (rule 12), the prefetch pattern of offloading and serving
stacks.

Each round launches bf16 N x N x N matrix products on the default stream, lets
them take the GPU, then times a set of copies on a side stream (from the first
call to the end of the side stream's synchronize); the products' own time is
read from CUDA events around them.  Cases: _foreach_copy_ of 256 pinned 4 KiB
tensors host to device and device to host, of 64 x 64 KiB host to device, and a
Python loop of copy_(non_blocking=True), 256 x 4 KiB host to device, and
_foreach_copy_ of 1024 x 16 KiB host to device; each with the GPU idle too.
Every pinned tensor is its own allocation, as PyTorch makes them.

Under LD_PRELOAD=libcubatch.so each round times three variants inside the one
process in a rotating order, cubatch on, off and off again (off2), through
cubatch_set_enabled, so process-to-process noise cancels: off/on is the
speedup and off/off2 the A/A spread, each the median over rounds of the
per-round ratios (with their minimum and maximum).  Each variant's issue time
(the copy calls alone, before the synchronize) is printed too: where the
copies keep up with the program, on minus off is what cubatch's own work adds.
Without the preload (or without that symbol) every round runs as it is;
compare processes then.

Usage: torch_load.py [--rounds 9] [--gemms 8] [--n 8192] [--json]
Prints one line per case and load."""
import argparse, ctypes, json, statistics, sys, time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=9)
ap.add_argument("--gemms", type=int, default=8)
ap.add_argument("--n", type=int, default=8192)
ap.add_argument("--json", action="store_true")
ap.add_argument("--cases", default="", help="comma-separated case names to run (default: all)")
ap.add_argument("--loads", default="idle,gemm", help="idle, gemm or both (default)")
args = ap.parse_args()

lib = ctypes.CDLL(None)
try:
    set_enabled = lib.cubatch_set_enabled
    set_enabled.argtypes = [ctypes.c_int]
except AttributeError:
    set_enabled = None

dev = torch.device("cuda")
side = torch.cuda.Stream()
a = torch.randn(args.n, args.n, device=dev, dtype=torch.bfloat16)
b = torch.randn(args.n, args.n, device=dev, dtype=torch.bfloat16)
c = torch.empty_like(a)

def tensors(n, nbytes, where):
    elems = nbytes // 4
    if where == "host":
        return [torch.empty(elems, dtype=torch.float32, pin_memory=True).fill_(i) for i in range(n)]
    return [torch.full((elems,), float(i), device=dev) for i in range(n)]

def case_foreach(n, nbytes, h2d):
    src = tensors(n, nbytes, "host" if h2d else "dev")
    dst = tensors(n, nbytes, "dev" if h2d else "host")
    def run():
        with torch.cuda.stream(side):
            t0 = time.perf_counter()
            torch._foreach_copy_(dst, src, non_blocking=True)
            issued = time.perf_counter() - t0
        side.synchronize()
        return issued
    def check():
        return all(torch.equal(d.cpu(), s.cpu()) for d, s in zip(dst[:4], src[:4]))
    return run, check

def case_loop(n, nbytes):
    src, dst = tensors(n, nbytes, "host"), tensors(n, nbytes, "dev")
    def run():
        with torch.cuda.stream(side):
            t0 = time.perf_counter()
            for d, s in zip(dst, src):
                d.copy_(s, non_blocking=True)
            issued = time.perf_counter() - t0
        side.synchronize()
        return issued
    def check():
        return all(torch.equal(d.cpu(), s) for d, s in zip(dst[:4], src[:4]))
    return run, check

cases = {
    "foreach h2d 256x4K": case_foreach(256, 4096, True),
    "foreach d2h 256x4K": case_foreach(256, 4096, False),
    "foreach h2d 64x64K": case_foreach(64, 65536, True),
    "foreach h2d 1024x16K": case_foreach(1024, 16384, True),
    "loop h2d 256x4K": case_loop(256, 4096),
}

def one(run, load):
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if load:
        e0.record()
        for _ in range(args.gemms):
            torch.mm(a, b, out=c)
        e1.record()
        time.sleep(0.002)  # the products hold the GPU
    t0 = time.perf_counter()
    issued = run()
    t = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    return t, (e0.elapsed_time(e1) if load else 0.0), issued * 1e3

results = []
wanted = [c for c in args.cases.split(",") if c]
variants = ["on", "off", "off2"] if set_enabled else ["on"]
for name, (run, check) in cases.items():
    if wanted and name not in wanted:
        continue
    for load in [l == "gemm" for l in args.loads.split(",")]:
        for _ in range(3):
            one(run, load)  # warm-up (cuBLAS, the copy kernel module, caches)
        # Each round times the three variants in a rotating order (none always
        # follows the same one), each the median of 5 repetitions; off2 is off
        # again, timed apart: off/off2 is the noise floor (A/A).
        t = {v: [] for v in variants}
        g = {v: [] for v in variants}
        iss = {v: [] for v in variants}
        for r in range(args.rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for v in order:
                if set_enabled:
                    set_enabled(1 if v == "on" else 0)
                reps = [one(run, load) for _ in range(5)]
                t[v].append(statistics.median(x[0] for x in reps))
                g[v].append(statistics.median(x[1] for x in reps))
                iss[v].append(statistics.median(x[2] for x in reps))
        if set_enabled:
            set_enabled(1)
        ok = check()
        med = statistics.median
        row = {"case": name, "load": "gemm" if load else "idle", "on_ms": med(t["on"]), "ok": ok,
               "gemm_on_ms": med(g["on"]), "issue_on_ms": med(iss["on"]), "inprocess": set_enabled is not None, "rounds": args.rounds}
        if set_enabled:
            sp = [o / n for o, n in zip(t["off"], t["on"])]
            aa = [o / o2 for o, o2 in zip(t["off"], t["off2"])]
            row.update({"off_ms": med(t["off"]), "off2_ms": med(t["off2"]), "gemm_off_ms": med(g["off"]),
                        "issue_off_ms": med(iss["off"]), "issue_off2_ms": med(iss["off2"]),
                        "speedup": med(sp), "speedup_min": min(sp), "speedup_max": max(sp),
                        "aa": med(aa), "aa_min": min(aa), "aa_max": max(aa)})
        results.append(row)
        if args.json:
            print(json.dumps(row))
        elif set_enabled:
            print(f"{name:22s} {row['load']:5s} on {row['on_ms']:.3f} ms  off {row['off_ms']:.3f} ms  "
                  f"off/on {row['speedup']:.2f} ({row['speedup_min']:.2f}-{row['speedup_max']:.2f})  "
                  f"A/A {row['aa']:.2f} ({row['aa_min']:.2f}-{row['aa_max']:.2f})  "
                  f"gemm on/off {row['gemm_on_ms']:.2f}/{row['gemm_off_ms']:.2f} ms  "
                  f"issue on/off/off2 {row['issue_on_ms']:.3f}/{row['issue_off_ms']:.3f}/{row['issue_off2_ms']:.3f} ms  ok={ok}")
        else:
            print(f"{name:22s} {row['load']:5s} {row['on_ms']:.3f} ms  ok={ok}")
        sys.stdout.flush()
sys.exit(0 if all(r["ok"] for r in results) else 1)
