#!/usr/bin/env python3
"""cupy_copies: many small pinned arrays moved on a cupy.cuda.Stream, checked.

Scenarios (all by default, or name them as arguments):
  side16k  128 x 16 KiB int32 arrays: ndarray.set(..., stream=s), an elementwise
           kernel on s, ndarray.get(stream=s, out=<pinned>) back
  side4k   the same with 256 x 4 KiB
  d2d      device-to-device MemoryPointer.copy_from_device_async on s
  default  the same as side16k on CuPy's default (legacy) stream

Pinned host arrays come from cupyx.empty_pinned.  Data are random integers,
fresh each run unless CB_TEST_SEED is set.  Prints "CHECK <scenario>
<digest>".  Exit: 0 right, 1 wrong, 77 no CuPy or no GPU.
"""
import hashlib
import os
import sys
import time

SKIP = 77

try:
    import numpy as np
    import cupy
    import cupyx
except ImportError:
    print("cupy_copies: CuPy not installed, skipped", file=sys.stderr)
    sys.exit(SKIP)
try:
    if not os.path.exists("/dev/nvidiactl") or cupy.cuda.runtime.getDeviceCount() == 0:
        raise RuntimeError("no device")
except Exception as e:  # CUDARuntimeError when the driver has no device
    print(f"cupy_copies: no GPU ({e}), skipped", file=sys.stderr)
    sys.exit(SKIP)


def digest(arrays):
    h = hashlib.blake2b(digest_size=8)
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def pinned_blocks(rng, count, nbytes):
    blocks = []
    for _ in range(count):
        p = cupyx.empty_pinned((nbytes // 4,), dtype=np.int32)
        p[...] = rng.integers(-(1 << 20), 1 << 20, size=p.shape, dtype=np.int32)
        blocks.append(p)
    return blocks


def get_async(dev, out, stream):
    """D2H into pinned `out`, enqueued on `stream` without waiting if CuPy can."""
    try:
        dev.get(stream=stream, out=out, blocking=False)
    except TypeError:  # older CuPy: no `blocking`
        dev.get(stream=stream, out=out)


def roundtrip(rng, count, nbytes, name, stream):
    host = pinned_blocks(rng, count, nbytes)
    out = [cupyx.empty_pinned(h.shape, dtype=h.dtype) for h in host]
    for o in out:
        o.fill(-7)
    with stream:
        dev = [cupy.empty(h.shape, dtype=h.dtype) for h in host]
        for d, h in zip(dev, host):
            d.set(h, stream=stream)
        res = [d * 3 + i for i, d in enumerate(dev)]
        for o, r in zip(out, res):
            get_async(r, o, stream)
    stream.synchronize()
    bad = sum(int(not np.array_equal(o, h * 3 + i)) for i, (o, h) in enumerate(zip(out, host)))
    if bad:
        print(f"cupy_copies: {name}: {bad} of {count} results wrong", file=sys.stderr)
    print(f"CHECK {name} {digest(out)}")
    return bad == 0


def sc_side16k(rng):
    return roundtrip(rng, 128, 16 * 1024, "side16k", cupy.cuda.Stream(non_blocking=True))


def sc_side4k(rng):
    return roundtrip(rng, 256, 4 * 1024, "side4k", cupy.cuda.Stream(non_blocking=True))


def sc_default(rng):
    return roundtrip(rng, 128, 16 * 1024, "default", cupy.cuda.Stream.null)


def sc_d2d(rng):
    host = pinned_blocks(rng, 128, 8 * 1024)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        a = [cupy.empty(h.shape, dtype=h.dtype) for h in host]
        b = [cupy.empty(h.shape, dtype=h.dtype) for h in host]
        for d, h in zip(a, host):
            d.set(h, stream=s)
        for x, y in zip(a, b):
            y.data.copy_from_device_async(x.data, x.nbytes, stream=s)
        for x in a:  # overwrite the sources: the copies must have read them
            x.fill(0)
        back = cupyx.empty_pinned((len(b) * b[0].size,), dtype=np.int32)
        get_async(cupy.concatenate(b), back, s)
    s.synchronize()
    ok = np.array_equal(back, np.concatenate(host))
    if not ok:
        print("cupy_copies: d2d: wrong bytes", file=sys.stderr)
    print(f"CHECK d2d {digest([back])}")
    return ok


SCENARIOS = {"side16k": sc_side16k, "side4k": sc_side4k, "d2d": sc_d2d, "default": sc_default}


def main(argv):
    names = argv[1:] or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"cupy_copies: unknown scenario(s) {unknown}", file=sys.stderr)
        return 1
    seed_env = os.environ.get("CB_TEST_SEED")
    seed = int(seed_env, 0) if seed_env else (time.time_ns() ^ os.getpid())
    print(f"cupy_copies: seed {seed}, cupy {cupy.__version__}")
    ok = True
    for n in names:
        tag = int.from_bytes(hashlib.blake2b(n.encode(), digest_size=7).digest(), "little")
        good = SCENARIOS[n](np.random.default_rng([seed & (2**63 - 1), tag]))
        print(f"{n:10s} {'ok' if good else 'FAIL'}", flush=True)
        ok &= good
    cupy.cuda.Device().synchronize()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
