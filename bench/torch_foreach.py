#!/usr/bin/env python3
"""torch_foreach: PyTorch's small host-to-device copies, timed (bench/run-bench.sh part "torch").

    torch_foreach.py [--cpu NAME=CPUS]... [--iters N] [--warm N] [--count N]
                     [--elems N] [--rotate K] [--check-only]

COUNT (256) pinned float32 tensors of ELEMS (1024) elements (4 KiB each) are
copied into as many CUDA tensors, then torch.cuda.synchronize():
  foreach   torch._foreach_copy_(dsts, srcs, non_blocking=True)
  pyloop    for d, s in zip(dsts, srcs): d.copy_(s, non_blocking=True)
each on two streams:
  default   PyTorch's default stream (the legacy default stream)
  side      a torch.cuda.Stream() (made current with torch.cuda.stream)
Every variant is checked once first (destinations poisoned, copied, compared
with the sources), then timed: WARM (10) untimed iterations, then ITERS (50)
timed ones; the median, p10 and p90 of copies + synchronize are printed, and the
median of the copies alone (the enqueue part) in the extra column.

--cpu NAME=CPUS (repeatable, in order; default "unpinned=all"): before measuring
under NAME, every thread of this process is pinned to CPUS ("all": the CPUs the
process started with; else a list like "3" or "2,3" or "2-3"), as
`taskset -a -p -c CPUS PID` would do.  Threads started later inherit the pinning
of the thread that starts them.  PyTorch takes seconds to import, so run-bench.sh
measures every CPU setting inside one process per configuration and round.
--rotate K rotates the order of the CPU settings and of the variants by K.
--check-only: import, check every variant once, print versions and timings.

Output (CSV on stdout, '#' lines are comments), one line per CPU setting and variant:
  cpu,mode,stream,dir,count,size,reps,median_us,p10_us,p90_us,extra
Exit: 0 done, 1 wrong bytes or a variant failed, 2 usage, 77 no PyTorch or no GPU
(BENCH_SIM=1: no /dev/nvidiactl needed, for testing with a stand-in torch module).
"""
import argparse
import contextlib
import ctypes
import gc
import os
import statistics
import sys
import time

SKIP = 77


def parse_cpus(text, start):
    if text == "all":
        return set(start)
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def pin_all_threads(cpus):
    """Pin every thread of this process (taskset -a -p); returns how many were pinned."""
    n = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
            n += 1
        except (OSError, ValueError):
            pass  # a thread that ended meanwhile
    return n


def pct(sorted_v, q):
    return sorted_v[min(len(sorted_v) - 1, int(len(sorted_v) * q))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", action="append", default=[], metavar="NAME=CPUS")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warm", type=int, default=10)
    ap.add_argument("--count", type=int, default=256)
    ap.add_argument("--elems", type=int, default=1024)
    ap.add_argument("--rotate", type=int, default=0)
    ap.add_argument("--check-only", action="store_true")
    a = ap.parse_args()
    if a.iters < 1 or a.warm < 0 or a.count < 1 or a.elems < 1:
        ap.error("--iters, --count, --elems must be positive, --warm not negative")
    start_cpus = os.sched_getaffinity(0)
    settings = []
    for spec in a.cpu or ["unpinned=all"]:
        name, eq, cpus = spec.partition("=")
        try:
            if not (name and eq and cpus):
                raise ValueError
            cs = parse_cpus(cpus, start_cpus)
        except ValueError:
            ap.error(f"bad --cpu {spec!r} (want NAME=all or NAME=3 or NAME=2,3)")
        settings.append((name, cs))

    t0 = time.perf_counter()
    try:
        import torch
    except ImportError:
        print("torch_foreach: PyTorch not installed, skipped", file=sys.stderr)
        return SKIP
    t_import = time.perf_counter() - t0
    real_gpu = os.path.exists("/dev/nvidiactl") or os.environ.get("BENCH_SIM") == "1"
    if not real_gpu or not torch.cuda.is_available():
        print("torch_foreach: no GPU, skipped", file=sys.stderr)
        return SKIP

    t1 = time.perf_counter()
    dev = torch.device("cuda", 0)
    srcs = [torch.rand(a.elems, dtype=torch.float32).pin_memory() for _ in range(a.count)]
    dsts = [torch.empty(a.elems, dtype=torch.float32, device=dev) for _ in range(a.count)]
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    t_init = time.perf_counter() - t1
    nbytes = a.elems * 4

    try:
        fn = ctypes.CDLL(None).cubatch_batching_enabled
        fn.restype = ctypes.c_int
        cubatch = "loaded, batching" if fn() else "loaded, pass-through"
    except AttributeError:
        cubatch = "not loaded"
    print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{torch.cuda.get_device_name(0)}, cubatch {cubatch}, python {sys.version.split()[0]}")
    print(f"# import torch {t_import:.2f} s, CUDA init and tensors {t_init:.2f} s, "
          f"{a.count} x {nbytes} B, pinned sources: {all(s.is_pinned() for s in srcs)}, "
          f"started on cpus {sorted(start_cpus)}")
    sys.stdout.flush()

    def foreach():
        torch._foreach_copy_(dsts, srcs, non_blocking=True)

    def pyloop():
        for d, s in zip(dsts, srcs):
            d.copy_(s, non_blocking=True)

    variants = [("foreach", "default", foreach), ("foreach", "side", foreach),
                ("pyloop", "default", pyloop), ("pyloop", "side", pyloop)]
    streams = {"default": None, "side": side}
    want = torch.stack(srcs)

    def on(stream):
        return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()

    def check(mode, sname, fn):
        with on(streams[sname]):
            for d in dsts:
                d.fill_(-1.0)  # never a value of torch.rand
            fn()
        torch.cuda.synchronize()
        got = torch.stack(dsts).cpu()
        if not torch.equal(got, want):
            bad = int((got != want).any(dim=1).sum())
            print(f"torch_foreach: {mode} on the {sname} stream: {bad} of {a.count} "
                  "tensors wrong", file=sys.stderr)
            return False
        return True

    status = {}  # (mode, stream) -> checked and right

    def checked_ok(mode, sname, fn):
        if (mode, sname) not in status:
            try:
                status[mode, sname] = check(mode, sname, fn)
            except Exception as e:  # noqa: BLE001 - reported, the other variants go on
                print(f"torch_foreach: {mode} on the {sname} stream failed: {e!r}",
                      file=sys.stderr)
                status[mode, sname] = False
            print(f"# check {mode} {sname}: {'ok' if status[mode, sname] else 'WRONG'}")
        return status[mode, sname]

    if a.check_only:
        for mode, sname, fn in variants:
            checked_ok(mode, sname, fn)
        return 0 if all(status.values()) else 1

    print("cpu,mode,stream,dir,count,size,reps,median_us,p10_us,p90_us,extra")
    k = a.rotate
    order = settings[k % len(settings):] + settings[:k % len(settings)]
    vorder = variants[k % len(variants):] + variants[:k % len(variants)]
    sync = torch.cuda.synchronize
    clock = time.perf_counter_ns
    for name, cpus in order:
        n = pin_all_threads(cpus)
        print(f"# cpu {name}: {n} threads pinned to {sorted(cpus)}")
        for mode, sname, fn in vorder:
            if not checked_ok(mode, sname, fn):
                continue
            tot, enq = [], []
            try:
                with on(streams[sname]):
                    for _ in range(a.warm):
                        fn()
                        sync()
                    gc.disable()
                    for _ in range(a.iters):
                        ta = clock()
                        fn()
                        tb = clock()
                        sync()
                        tc = clock()
                        tot.append((tc - ta) / 1e3)
                        enq.append((tb - ta) / 1e3)
                    gc.enable()
            except Exception as e:  # noqa: BLE001
                gc.enable()
                print(f"torch_foreach: {mode} on the {sname} stream failed: {e!r}",
                      file=sys.stderr)
                status[mode, sname] = False
                continue
            tot.sort()
            print(f"{name},{mode},{sname},h2d,{a.count},{nbytes},{a.iters},"
                  f"{statistics.median(tot):.2f},{pct(tot, 0.1):.2f},{pct(tot, 0.9):.2f},"
                  f"{statistics.median(enq):.2f}")
            sys.stdout.flush()
    pin_all_threads(start_cpus)
    return 0 if all(status.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
