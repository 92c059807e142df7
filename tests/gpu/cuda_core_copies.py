#!/usr/bin/env python3
"""cuda_core_copies: many small copies through NVIDIA's cuda.core, checked.

cuda.core reaches the driver through cuda.bindings, which resolves every driver
function with cuGetProcAddress: the copies reach cubatch's wrappers that way.

Scenarios (all by default, or name them as arguments):
  h2d_d2h   256 x 4 KiB pinned -> device with Buffer.copy_from on a stream made
            by Device.create_stream(), then device -> pinned back, one sync
  d2d       the device buffers copied to other device buffers on the same stream

Pinned buffers come from cuda.core's pinned memory resource; their bytes are
written and read through their host address (ctypes).  Data are random, fresh
each run unless CB_TEST_SEED is set.  Prints "CHECK <scenario> <digest>".
Exit: 0 right, 1 wrong, 77 no cuda.core, no GPU, or an API this script does not
know (it says which).
"""
import ctypes
import hashlib
import os
import random
import sys

SKIP = 77


def skip(why):
    print(f"cuda_core_copies: {why}, skipped", file=sys.stderr)
    sys.exit(SKIP)


try:
    import cuda.core as cc
    if not hasattr(cc, "Device"):
        raise ImportError("no Device")
except ImportError:
    try:
        from cuda.core import experimental as cc
    except ImportError as e:
        skip(f"cuda.core not importable ({e})")
if not os.path.exists("/dev/nvidiactl"):
    skip("no GPU")

N, SZ = 256, 4096


def ptr(buf):
    return int(buf.handle)


def allocate(mr, size, stream):
    for call in (lambda: mr.allocate(size, stream=stream), lambda: mr.allocate(size)):
        try:
            return call()
        except TypeError:
            continue
    raise RuntimeError("allocate() takes neither (size, stream=) nor (size)")


def pinned_resource():
    for name in ("LegacyPinnedMemoryResource", "PinnedMemoryResource"):
        cls = getattr(cc, name, None)
        if cls is None:
            continue
        try:
            return cls()
        except Exception:  # noqa: BLE001 - constructor signatures differ between versions
            continue
    skip("no pinned memory resource this script knows")


def views(buf, count, size):
    """count buffers of size bytes inside buf (Buffer.from_handle), or None."""
    from_handle = getattr(getattr(cc, "Buffer", None), "from_handle", None)
    if from_handle is None:
        return None
    try:
        return [from_handle(ptr(buf) + i * size, size) for i in range(count)]
    except Exception:  # noqa: BLE001
        return None


def blocks(mr, count, size, stream):
    """count buffers of size bytes: views into one allocation, or separate ones."""
    whole = allocate(mr, count * size, stream)
    v = views(whole, count, size)
    return (v, whole) if v else ([allocate(mr, size, stream) for _ in range(count)], None)


def host_bytes(bufs, size):
    return b"".join(ctypes.string_at(ptr(b), size) for b in bufs)


def digest(data):
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def main():
    seed = os.environ.get("CB_TEST_SEED")
    rng = random.Random(int(seed) if seed else None)
    dev = cc.Device(0)
    dev.set_current()
    s = dev.create_stream()
    dmr, pmr = dev.memory_resource, pinned_resource()
    hin, _k1 = blocks(pmr, N, SZ, s)
    hout, _k2 = blocks(pmr, N, SZ, s)
    din, _k3 = blocks(dmr, N, SZ, s)
    dout, _k4 = blocks(dmr, N, SZ, s)
    data = bytes(rng.getrandbits(8) for _ in range(N * SZ))
    for i, b in enumerate(hin):
        ctypes.memmove(ptr(b), data[i * SZ:(i + 1) * SZ], SZ)
    wanted = sys.argv[1:] or ["h2d_d2h", "d2d"]
    bad = 0
    for scenario in wanted:
        for b in hout:
            ctypes.memset(ptr(b), 0x5A, SZ)
        if scenario == "h2d_d2h":
            for i in range(N):
                din[i].copy_from(hin[i], stream=s)
            for i in range(N):
                hout[i].copy_from(din[i], stream=s)
        elif scenario == "d2d":
            for i in range(N):
                dout[i].copy_from(din[i], stream=s)
            for i in range(N):
                hout[i].copy_from(dout[i], stream=s)
        else:
            print(f"cuda_core_copies: unknown scenario {scenario}", file=sys.stderr)
            return 2
        s.sync()
        got = host_bytes(hout, SZ)
        ok = got == data
        print(f"CHECK {scenario} {digest(got)}" + ("" if ok else " WRONG"))
        bad |= not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
