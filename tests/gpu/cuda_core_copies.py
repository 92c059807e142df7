#!/usr/bin/env python3
"""cuda_core_copies: many small copies through NVIDIA's cuda.core, checked.

cuda.core reaches the driver through cuda.bindings, which resolves every driver
function with cuGetProcAddress: the copies reach cubatch's wrappers that way.

Scenarios (all by default, or name them as arguments):
  h2d_d2h   256 x 4 KiB pinned -> device with Buffer.copy_from on a stream made
            by Device.create_stream(), then device -> pinned back, one sync
  d2d       the device buffers copied to other device buffers on the same stream
  copy_batch  cuda.core.utils.copy_batch (cuMemcpyBatchAsync on a CUDA 13
            driver) interleaved with ordinary Buffer.copy_from/copy_to (which
            cubatch defers) on one stream: 192 blocks of 256 B..64 KiB, each
            moved host -> device -> device -> host with the API of each hop
            alternating in groups, so every batch reads what deferred copies
            wrote and the other way round; then batches with
            CopyOptions(src_access_order=ANY) and DURING_API_CALL from pinned
            sources that no stream work touches, the DURING_API_CALL sources
            overwritten as soon as copy_batch returns (the driver has read them
            by then), and PREFER_OVERLAP_WITH_COMPUTE
  copy_options  Buffer.copy_to/copy_from(options=CopyOptions(...)) with
            src_access_order STREAM, ANY and DURING_API_CALL and both overlap
            modes, interleaved with ordinary copies on the same stream: host ->
            device (every combination), device -> device and device -> host
            (STREAM: their sources are written by pending copies), then after a
            synchronize device -> device with ANY / DURING_API_CALL

A scenario whose API the installed cuda.core lacks (copy_batch, CopyOptions,
Buffer.copy_to(options=)) is skipped with a note saying which; a CopyOptions
setting the driver cannot honour (copy_to with DURING_API_CALL below a 13.2
driver raises RuntimeError by design, cuda.core refusing to downgrade it; a
non-default CopyOptions for copy_batch without cuMemcpyBatchAsync raises
NotImplementedError) is reported ("NOTE ... not available on this driver")
and that copy is made without options, so the bytes checked are the same.

Pinned buffers come from cuda.core's pinned memory resource; their bytes are
written and read through their host address (ctypes).  Data are random, fresh
each run unless CB_TEST_SEED is set.  Prints "CHECK <scenario> <digest>".
Exit: 0 right, 1 wrong, 77 no cuda.core, no GPU, a pinned memory resource this
script does not know, or every scenario asked for skipped (it says why).
"""
import ctypes
import hashlib
import os
import random
import sys
import warnings

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


def _find(name, modules):
    for mod in modules:
        obj = getattr(mod, name, None)
        if obj is not None:
            return obj
    return None


def _copy_apis():
    """copy_batch, CopyOptions and its enums wherever this cuda.core has them."""
    import importlib
    mods = [cc]
    for m in ("cuda.core.utils", "cuda.core.experimental", "cuda.core.experimental.utils"):
        try:
            mods.append(importlib.import_module(m))
        except ImportError:
            pass
    api = {n: _find(n, mods) for n in ("copy_batch", "CopyOptions", "MemcpySrcAccessOrder", "MemcpyOverlapMode")}
    buf = getattr(cc, "Buffer", None)
    api["copy_to_options"] = None
    if buf is not None and api["CopyOptions"] is not None:
        try:
            import inspect
            params = inspect.signature(buf.copy_to).parameters
            api["copy_to_options"] = "options" in params and "options" in inspect.signature(buf.copy_from).parameters
        except (TypeError, ValueError):  # no signature from the extension type: try at the first call
            api["copy_to_options"] = True
    return api


API = _copy_apis()
_VERSION = getattr(cc, "__version__", None) or getattr(sys.modules.get("cuda.core"), "__version__", "?")
_MISSING = [n for n in ("copy_batch", "CopyOptions", "MemcpySrcAccessOrder", "MemcpyOverlapMode") if API[n] is None]
if API["CopyOptions"] is not None and not API["copy_to_options"]:
    _MISSING.append("Buffer.copy_to/copy_from(options=)")
print(f"cuda_core_copies: cuda.core {_VERSION}; "
      + (f"missing: {', '.join(_MISSING)}" if _MISSING else "copy_batch, CopyOptions and copy_to(options=) present"),
      file=sys.stderr)

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


# --- copy_batch and copy_options ---------------------------------------------------

class Unavailable(Exception):
    """A scenario's API is missing here: the scenario is skipped."""


SIZES = (256, 4096, 1000, 65536, 12288, 512, 24576, 4104)  # odd sizes too
NB = 192  # blocks in the new scenarios


def carve(mr, sizes, stream):
    """One buffer per size: views into one allocation (256-byte aligned), or separate ones."""
    offs, total = [], 0
    for sz in sizes:
        offs.append(total)
        total += (sz + 255) // 256 * 256
    whole = allocate(mr, total, stream)
    from_handle = getattr(getattr(cc, "Buffer", None), "from_handle", None)
    if from_handle is not None:
        try:
            return [from_handle(ptr(whole) + o, sz) for o, sz in zip(offs, sizes)], whole
        except Exception:  # noqa: BLE001
            pass
    return [allocate(mr, sz, stream) for sz in sizes], None


class Notes:
    """The settings this driver refused: said once each (a NOTE line), never a
    failure; they end the scenario's CHECK line, so a run with cubatch must be
    refused the same ones."""

    def __init__(self, scenario):
        self.scenario, self.seen = scenario, set()

    def unavailable(self, what, err):
        if what not in self.seen:
            self.seen.add(what)
            text = str(err).splitlines()[0][:160] if str(err) else ""
            msg = f"NOTE {self.scenario} {what}: not available on this driver ({type(err).__name__}: {text})"
            print(msg)
            print(f"cuda_core_copies: {msg}", file=sys.stderr)

    def suffix(self):
        return f" unavailable={','.join(sorted(self.seen))}" if self.seen else ""


def refused_by_design(err):
    """cuda.core's refusal of options this driver cannot honour: RuntimeError
    (copy_to/copy_from with DURING_API_CALL below a 13.2 driver) or
    NotImplementedError (copy_batch options without cuMemcpyBatchAsync); or the
    driver's own error for a setting it does not take (CUDAError)."""
    if isinstance(err, NotImplementedError) or type(err).__name__ == "CUDAError":
        return True
    return type(err).__name__ == "RuntimeError" and any(
        w in str(err) for w in ("DURING_API_CALL", "requires", "not supported", "not found"))


def options(order, overlap="default"):
    """CopyOptions(src_access_order=order, overlap_mode=overlap), by enum where there is one."""
    sao, om = API["MemcpySrcAccessOrder"], API["MemcpyOverlapMode"]
    order = getattr(sao, order.upper(), order) if sao is not None else order
    overlap = getattr(om, overlap.upper(), overlap) if om is not None else overlap
    try:
        return API["CopyOptions"](src_access_order=order, overlap_mode=overlap)
    except TypeError as e:
        raise Unavailable(f"CopyOptions takes no src_access_order/overlap_mode ({e})") from e


def key(order, overlap):
    return f"{order}/{'overlap' if overlap != 'default' else 'default'}"


COMBOS = [(o, m) for o in ("stream", "any", "during_api_call") for m in ("default", "prefer_overlap_with_compute")]


class Env:
    def __init__(self, rng, s, dmr, pmr, scenario):
        self.s, self.dmr, self.pmr, self.notes = s, dmr, pmr, Notes(scenario)
        self.sizes = [SIZES[(i * 5 + i // 8) % len(SIZES)] for i in range(NB)]
        self.keep = []
        self.batched = False
        self.data = [rng.randbytes(sz) for sz in self.sizes]

    def pinned(self):
        bufs, whole = carve(self.pmr, self.sizes, self.s)
        self.keep.append((bufs, whole))
        for b, sz in zip(bufs, self.sizes):
            ctypes.memset(ptr(b), 0x5A, sz)
        return bufs

    def device(self):
        bufs, whole = carve(self.dmr, self.sizes, self.s)
        self.keep.append((bufs, whole))
        return bufs

    def fill(self, bufs):
        for b, d in zip(bufs, self.data):
            ctypes.memmove(ptr(b), d, len(d))

    def check(self, name, bufs):
        """Every byte of bufs against the data; the digest, and True when right."""
        got = [ctypes.string_at(ptr(b), len(d)) for b, d in zip(bufs, self.data)]
        bad = [i for i, (g, d) in enumerate(zip(got, self.data)) if g != d]
        if bad:
            print(f"cuda_core_copies: {name}: {len(bad)} of {len(bufs)} blocks wrong (first: block {bad[0]}, "
                  f"{self.sizes[bad[0]]} bytes)", file=sys.stderr)
        return digest(b"".join(got)), not bad


def batch(env, srcs, dsts, opt=None, what=None):
    """copy_batch(stream, srcs, dsts, options=opt); False when the options were refused
    (then the same copies went out without options)."""
    first = not env.batched
    env.batched = True
    try:
        if opt is None:
            API["copy_batch"](env.s, srcs, dsts)
        else:
            API["copy_batch"](env.s, srcs, dsts, options=opt)
        return True
    except TypeError as e:
        if first or (opt is not None and "options" in str(e)):  # another signature than 1.2's
            raise Unavailable(f"copy_batch(stream, srcs, dsts{', options=' if opt else ''}) refused ({e})") from e
        raise
    except Exception as e:  # noqa: BLE001
        if opt is None or not refused_by_design(e):
            raise
        env.notes.unavailable(f"batch:{what}", e)
        API["copy_batch"](env.s, srcs, dsts)
        return False


def sc_copy_batch(env):
    if API["copy_batch"] is None:
        raise Unavailable("no copy_batch in this cuda.core")
    hin, d1, d2, hout = env.pinned(), env.device(), env.device(), env.pinned()
    env.fill(hin)
    s, G = env.s, 8
    groups = [range(g, min(g + G, NB)) for g in range(0, NB, G)]
    # Host -> device -> device -> host; hop h of group k goes by copy_batch when
    # (k + h) % 2 == 0 (k % 3 == 0: the whole chain by batches), else block by
    # block through Buffer.copy_from / copy_to, all on one stream.
    hops = [(hin, d1), (d1, d2), (d2, hout)]
    for h, (src, dst) in enumerate(hops):
        for k, grp in enumerate(groups):
            if (k + h) % 2 == 0 or k % 3 == 0:
                batch(env, [src[i] for i in grp], [dst[i] for i in grp])
            else:
                for i in grp:
                    if i % 2:
                        dst[i].copy_from(src[i], stream=s)
                    else:
                        src[i].copy_to(dst[i], stream=s)
    s.sync()
    dig, ok = env.check("copy_batch", hout)
    # With CopyOptions: sources are pinned blocks only the CPU wrote (no stream
    # work touches them, as ANY and DURING_API_CALL require).
    if API["CopyOptions"] is not None:
        hin2, d3, hout2 = env.pinned(), env.device(), env.pinned()
        env.fill(hin2)
        for k, grp in enumerate(groups):
            srcs, dsts = [hin2[i] for i in grp], [d3[i] for i in grp]
            order, overlap = COMBOS[k % len(COMBOS)]
            if k % 4 == 3:  # ordinary copies between the batches
                for i in grp:
                    d3[i].copy_from(hin2[i], stream=s)
            elif batch(env, srcs, dsts, options(order, overlap), key(order, overlap)) and \
                    order == "during_api_call" and overlap == "default":
                # Read before the call returned: the sources may change now.
                for i in grp:
                    ctypes.memset(ptr(hin2[i]), 0xA5, env.sizes[i])
            # The copies back to the host by stream order, alternating APIs.
            if k % 2:
                batch(env, dsts, [hout2[i] for i in grp])
            else:
                for i in grp:
                    hout2[i].copy_from(d3[i], stream=s)
        s.sync()
        dig2, ok2 = env.check("copy_batch (options)", hout2)
        dig, ok = digest((dig + dig2).encode()), ok and ok2
    else:
        print("NOTE copy_batch: no CopyOptions in this cuda.core: batches without options only")
    return dig, ok


def copy_opt(env, src, dst, order, overlap, use_to):
    """src -> dst by copy_to or copy_from with options; without them when refused."""
    opt = options(order, overlap)
    try:
        if use_to:
            src.copy_to(dst, stream=env.s, options=opt)
        else:
            dst.copy_from(src, stream=env.s, options=opt)
    except TypeError as e:
        if "options" in str(e):
            raise Unavailable(f"Buffer.copy_to/copy_from take no options ({e})") from e
        raise
    except Exception as e:  # noqa: BLE001
        if not refused_by_design(e):
            raise
        env.notes.unavailable(f"copy_{'to' if use_to else 'from'}:{key(order, overlap)}", e)
        if use_to:
            src.copy_to(dst, stream=env.s)
        else:
            dst.copy_from(src, stream=env.s)


def sc_copy_options(env):
    if API["CopyOptions"] is None or not API["copy_to_options"]:
        raise Unavailable("no CopyOptions / Buffer.copy_to(options=) in this cuda.core")
    hin, d1, d2, hout = env.pinned(), env.device(), env.device(), env.pinned()
    d3, hout2 = env.device(), env.pinned()
    env.fill(hin)
    s = env.s

    def ordinary(src, dst, i):
        if i % 2:
            dst.copy_from(src, stream=s)
        else:
            src.copy_to(dst, stream=s)

    # Ordinary copies between those with options; each setting by copy_to and
    # by copy_from.
    for i in range(NB):  # host -> device: any setting (only the CPU wrote hin)
        if i % 7 == 6:
            ordinary(hin[i], d1[i], i)
        else:
            order, overlap = COMBOS[i % len(COMBOS)]
            copy_opt(env, hin[i], d1[i], order, overlap, (i // len(COMBOS)) % 2 == 0)
    for src, dst in ((d1, d2), (d2, hout)):  # sources written by pending copies: STREAM
        for i in range(NB):
            if i % 3 == 1:
                ordinary(src[i], dst[i], i)
            else:
                copy_opt(env, src[i], dst[i], "stream", COMBOS[i % 2][1], i % 2 == 1)
    s.sync()
    dig, ok = env.check("copy_options", hout)
    # After the synchronize no stream work touches d1: ANY and DURING_API_CALL.
    for i in range(NB):
        if i % 3 == 0:
            ordinary(d1[i], d3[i], i)
        else:
            order = ("any", "during_api_call")[i % 2]
            copy_opt(env, d1[i], d3[i], order, COMBOS[(i // 4) % 2][1], i % 4 < 2)
    for i in range(NB):
        if i % 2:
            ordinary(d3[i], hout2[i], i)
        else:
            copy_opt(env, d3[i], hout2[i], "stream", "default", i % 4 == 0)
    s.sync()
    dig2, ok2 = env.check("copy_options (after sync)", hout2)
    return digest((dig + dig2).encode()), ok and ok2


NEW = {"copy_batch": sc_copy_batch, "copy_options": sc_copy_options}


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
    wanted = sys.argv[1:] or ["h2d_d2h", "d2d", *NEW]
    for scenario in wanted:
        if scenario not in ("h2d_d2h", "d2d", *NEW):
            print(f"cuda_core_copies: unknown scenario {scenario}", file=sys.stderr)
            return 2
    # The overlap hint has no effect on a discrete GPU; cuda.core says so each time.
    warnings.filterwarnings("ignore", message=".*overlap_mode.*")
    bad = ran = 0
    for scenario in wanted:
        if scenario in NEW:
            env = Env(random.Random(f"{seed}/{scenario}" if seed else None), s, dmr, pmr, scenario)
            try:
                dig, ok = NEW[scenario](env)
            except Unavailable as e:
                print(f"cuda_core_copies: {scenario}: {e}, skipped", file=sys.stderr)
                print(f"SKIP {scenario} {e}")
                continue
            ran += 1
            print(f"CHECK {scenario} {dig}{env.notes.suffix()}" + ("" if ok else " WRONG"))
            bad |= not ok
            continue
        ran += 1
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
    if not ran:
        print("cuda_core_copies: every scenario asked for was skipped", file=sys.stderr)
        return SKIP
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
