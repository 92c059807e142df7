#!/usr/bin/env python3
"""torch_copies: many small pinned tensors moved with non_blocking=True, checked.

Scenarios (all by default, or name them as arguments):
  side16k  128 x 16 KiB int32 tensors to the GPU on a torch.cuda.Stream, computed
           on there, results copied back into pinned tensors on the same stream
  side4k   the same with 256 x 4 KiB
  d2d      GPU-to-GPU tensor copies (copy_ with non_blocking) on a side stream
  default  the same traffic on the default (legacy) stream

Data are random integers (exact arithmetic), fresh each run unless
CB_TEST_SEED is set.  Prints "CHECK <scenario> <digest>" lines.
Exit: 0 right, 1 wrong, 77 no PyTorch or no GPU.
"""
import hashlib
import os
import sys
import time

SKIP = 77

try:
    import torch
except ImportError:
    print("torch_copies: PyTorch not installed, skipped", file=sys.stderr)
    sys.exit(SKIP)
if not os.path.exists("/dev/nvidiactl") or not torch.cuda.is_available():
    print("torch_copies: no GPU, skipped", file=sys.stderr)
    sys.exit(SKIP)


def digest(tensors):
    h = hashlib.blake2b(digest_size=8)
    for t in tensors:
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def host_blocks(gen, count, nbytes):
    """count pinned int32 tensors of nbytes each, random, plus CPU copies."""
    n = nbytes // 4
    src = [torch.randint(-(1 << 20), 1 << 20, (n,), dtype=torch.int32, generator=gen)
           for _ in range(count)]
    return [t.pin_memory() for t in src], src


def compute(x, i):
    return x * 3 + i  # exact in int32 for |x| < 2^20


def side_stream(gen, count, nbytes, name):
    pinned, ref = host_blocks(gen, count, nbytes)
    out = [torch.empty_like(t).pin_memory() for t in pinned]
    for t in out:
        t.fill_(-7)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        dev = [t.to("cuda", non_blocking=True) for t in pinned]
        res = [compute(d, i) for i, d in enumerate(dev)]
        total = torch.stack([r.sum(dtype=torch.int64) for r in res])
        for o, r in zip(out, res):
            o.copy_(r, non_blocking=True)
        total_h = torch.empty(count, dtype=torch.int64).pin_memory()
        total_h.copy_(total, non_blocking=True)
    s.synchronize()
    want = [compute(x, i) for i, x in enumerate(ref)]
    bad = sum(int(not torch.equal(o, w)) for o, w in zip(out, want))
    want_total = torch.stack([w.sum(dtype=torch.int64) for w in want])
    if not torch.equal(total_h, want_total):
        bad += 1
    if bad:
        print(f"torch_copies: {name}: {bad} of {count} results wrong", file=sys.stderr)
    print(f"CHECK {name} {digest(out + [total_h])}")
    return bad == 0


def sc_side16k(gen):
    return side_stream(gen, 128, 16 * 1024, "side16k")


def sc_side4k(gen):
    return side_stream(gen, 256, 4 * 1024, "side4k")


def sc_d2d(gen):
    pinned, ref = host_blocks(gen, 128, 8 * 1024)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a = [t.to("cuda", non_blocking=True) for t in pinned]
        b = [torch.empty_like(x) for x in a]
        for x, y in zip(a, b):
            y.copy_(x, non_blocking=True)
        # Overwrite the sources right after: the copies above must have read them.
        for x in a:
            x.fill_(0)
        c = torch.cat(b)
        back = torch.empty(c.shape, dtype=c.dtype).pin_memory()
        back.copy_(c, non_blocking=True)
    s.synchronize()
    ok = torch.equal(back, torch.cat(ref))
    if not ok:
        print("torch_copies: d2d: wrong bytes", file=sys.stderr)
    print(f"CHECK d2d {digest([back])}")
    return ok


def sc_default(gen):
    pinned, ref = host_blocks(gen, 128, 16 * 1024)
    dev = [t.to("cuda", non_blocking=True) for t in pinned]
    res = [compute(d, i) for i, d in enumerate(dev)]
    out = [torch.empty_like(t).pin_memory() for t in pinned]
    for o, r in zip(out, res):
        o.copy_(r, non_blocking=True)
    torch.cuda.synchronize()
    bad = sum(int(not torch.equal(o, compute(x, i))) for i, (o, x) in enumerate(zip(out, ref)))
    if bad:
        print(f"torch_copies: default: {bad} results wrong", file=sys.stderr)
    print(f"CHECK default {digest(out)}")
    return bad == 0


SCENARIOS = {"side16k": sc_side16k, "side4k": sc_side4k, "d2d": sc_d2d, "default": sc_default}


def main(argv):
    names = argv[1:] or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"torch_copies: unknown scenario(s) {unknown}", file=sys.stderr)
        return 1
    seed_env = os.environ.get("CB_TEST_SEED")
    seed = int(seed_env, 0) if seed_env else (time.time_ns() ^ os.getpid())
    seed &= (1 << 63) - 1
    print(f"torch_copies: seed {seed}, torch {torch.__version__}")
    ok = True
    for n in names:
        gen = torch.Generator().manual_seed(seed ^ hash_name(n))
        good = SCENARIOS[n](gen)
        print(f"{n:10s} {'ok' if good else 'FAIL'}", flush=True)
        ok &= good
    torch.cuda.synchronize()
    return 0 if ok else 1


def hash_name(name):
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=7).digest(), "little")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
