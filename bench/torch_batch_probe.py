#!/usr/bin/env python3
"""torch_batch_probe.py - in a PyTorch process without cubatch, beside bf16
matrix products on the default stream, how fast do the pinned tensors of
torch_load.py's cases go to the device (side stream, timed from the first call
to the end of the side stream's synchronize) when submitted as:

  foreach   torch._foreach_copy_(non_blocking=True), what the program does
  ctloop    cuMemcpyHtoDAsync_v2 per tensor through ctypes
  batchK    cuMemcpyBatchAsync_v2 through ctypes, chunks of K (8, 16, 32)
  batch32_torch, batch32_data  the same, after PyTorch's own work on 32 CPU
            tensors (torch._foreach_mul_) or 4 MiB of memory written before
            each call, as a program's work between copies
  batchall  cuMemcpyBatchAsync_v2 through ctypes, one call

An exploration for issue 24: it separates the driver's batch beside the
products in PyTorch's process from what cubatch does around it.  Variants
rotate from round to round; medians over rounds, each the median of 5.

Usage: torch_batch_probe.py [--rounds 9] [--wait sleep|spin] [--cases ...]"""
import argparse, ctypes, statistics, time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=9)
ap.add_argument("--gemms", type=int, default=8)
ap.add_argument("--n", type=int, default=8192)
ap.add_argument("--wait", default="sleep", choices=["sleep", "spin"])
ap.add_argument("--loads", default="gemm", help="idle, gemm or both")
ap.add_argument("--cases", default="256x4096,64x65536,1024x16384")
args = ap.parse_args()

cuda = ctypes.CDLL("libcuda.so.1")
u64 = ctypes.c_uint64


class Loc(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class Attr(ctypes.Structure):
    _fields_ = [("order", ctypes.c_int), ("src", Loc), ("dst", Loc), ("flags", ctypes.c_uint)]


batch = cuda.cuMemcpyBatchAsync_v2
batch.argtypes = [ctypes.c_void_p] * 7 + [ctypes.c_void_p]
htod = cuda.cuMemcpyHtoDAsync_v2
htod.argtypes = [u64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
attr = Attr(1, Loc(0, 0), Loc(0, 0), 0)  # CU_MEMCPY_SRC_ACCESS_ORDER_STREAM
idx0 = (ctypes.c_size_t * 1)(0)

dev = torch.device("cuda")
side = torch.cuda.Stream()
a = torch.randn(args.n, args.n, device=dev, dtype=torch.bfloat16)
b = torch.randn(args.n, args.n, device=dev, dtype=torch.bfloat16)
c = torch.empty_like(a)


def check(rc, what):
    if rc != 0:
        raise SystemExit(f"torch_batch_probe: {what}: CUresult {rc}")


def make(n, nbytes):
    elems = nbytes // 4
    src = [torch.empty(elems, dtype=torch.float32, pin_memory=True).fill_(i) for i in range(n)]
    dst = [torch.zeros(elems, device=dev) for _ in range(n)]
    dsts = (u64 * n)(*[d.data_ptr() for d in dst])
    srcs = (u64 * n)(*[s.data_ptr() for s in src])
    sizes = (ctypes.c_size_t * n)(*([nbytes] * n))
    h = side.cuda_stream

    def foreach():
        with torch.cuda.stream(side):
            torch._foreach_copy_(dst, src, non_blocking=True)

    def ctloop():
        for d, s in zip(dst, src):
            check(htod(d.data_ptr(), s.data_ptr(), nbytes, h), "htod")

    scratch = [torch.ones(nbytes // 4) for _ in range(n)]
    junk = ctypes.create_string_buffer(4 << 20)

    def chunks(k, between=None):
        def run():
            for i in range(0, n, k):
                m = min(k, n - i)
                off = i * 8
                if between == "torch":  # PyTorch's own work for these tensors, without the driver
                    torch._foreach_mul_(scratch[i:i + m], 1.0)
                elif between == "data":  # 4 MiB of other memory written
                    ctypes.memset(junk, i & 0xff, len(junk))
                t0 = time.perf_counter_ns()
                check(batch(ctypes.addressof(dsts) + off, ctypes.addressof(srcs) + off, ctypes.addressof(sizes) + off,
                            m, ctypes.addressof(attr), ctypes.addressof(idx0), 1, h), "batch")
                key = (k, between or "")
                call_ns[key] = call_ns.get(key, 0) + time.perf_counter_ns() - t0
                call_n[key] = call_n.get(key, 0) + 1
        return run

    def ok():
        return all(torch.equal(d.cpu(), s) for d, s in zip(dst[::max(1, n // 4)], src[::max(1, n // 4)]))

    def clear():
        for d in dst[::max(1, n // 4)]:
            d.zero_()

    return {"foreach": foreach, "ctloop": ctloop, "batch8": chunks(8), "batch16": chunks(16), "batch32": chunks(32),
            "batch32_torch": chunks(32, "torch"), "batch32_data": chunks(32, "data"), "batchall": chunks(n)}, ok, clear


def one(run, load):
    torch.cuda.synchronize()
    if load:
        for _ in range(args.gemms):
            torch.mm(a, b, out=c)
        if args.wait == "sleep":
            time.sleep(0.002)
        else:
            s0 = time.perf_counter()
            while time.perf_counter() - s0 < 0.002:
                pass
    t0 = time.perf_counter()
    run()
    side.synchronize()
    t = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    return t


call_ns, call_n = {}, {}
for case in args.cases.split(","):
    n, nbytes = (int(x) for x in case.split("x"))
    variants, ok, clear = make(n, nbytes)
    names = list(variants)
    for load in [l == "gemm" for l in args.loads.split(",")]:
        call_ns.clear()
        call_n.clear()
        for v in names:
            one(variants[v], load)
        t = {v: [] for v in names}
        for r in range(args.rounds):
            for v in names[r % len(names):] + names[:r % len(names)]:
                clear()
                t[v].append(statistics.median(one(variants[v], load) for _ in range(5)))
                if not ok():
                    raise SystemExit(f"torch_batch_probe: {case} {v}: wrong bytes")
        base = statistics.median(t["foreach"])
        print(f"{case:12s} {'gemm' if load else 'idle'} wait={args.wait}  " +
              "  ".join(f"{v} {statistics.median(t[v]):.3f} ms ({base / statistics.median(t[v]):.2f}x)" for v in names),
              flush=True)
        print("    host time of one batch call: " + "  ".join(
            f"{k if k < n else 'all'}{'+' + w if w else ''}: {call_ns[(k, w)] / call_n[(k, w)] / 1e3:.1f} us "
            f"({call_ns[(k, w)] / call_n[(k, w)] / min(k, n):.0f} ns a copy)"
            for k, w in sorted(call_ns)), flush=True)
