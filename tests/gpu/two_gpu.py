#!/usr/bin/env python3
"""two_gpu: PyTorch with two GPUs, checked, for runs without and with cubatch.

    two_gpu.py [single] [SCENARIO...]   one process, both devices (default: all)
    two_gpu.py allreduce                one rank of an NCCL all-reduce; launch two:
                                        torchrun --nproc_per_node=2 two_gpu.py allreduce

single's scenarios:
  to_both   128 pinned int32 tensors of 4-16 KiB moved to cuda:0 and cuda:1
            (non_blocking, each device's default stream), computed there, copied
            back into pinned tensors on side streams of each device
  foreach   torch._foreach_copy_ per device (256 x 4 KiB device tensors from
            pinned ones), then per-device results back to the host
  switch    torch.cuda.set_device switches between the devices every 8 copies,
            copies on the current device's default stream and on a side stream
  peer      cuda:0 -> cuda:1 -> host and cuda:1 -> cuda:0 tensor copies on side
            streams of each device (peer copies: cubatch passes them through)
allreduce: each rank moves 64 pinned tensors to its GPU on a side stream, the
concatenation is all-reduced (sum) over NCCL, and the result checked.

Data are random integers (exact arithmetic), the same in every run with the same
CB_TEST_SEED.  Prints "CHECK <scenario> <digest>" lines: with the same seed
they must be identical with and without cubatch.  allreduce also prints
"RANK <rank> PID <pid>" (tests/gpu/run-two-gpu.sh looks for one statistics report
per process).
Exit: 0 right, 1 wrong, 77 no PyTorch or fewer than two GPUs.
"""
import hashlib
import os
import sys
import time

SKIP = 77

try:
    import torch
except ImportError:
    print("two_gpu: PyTorch not installed, skipped", file=sys.stderr)
    sys.exit(SKIP)
if not os.path.exists("/dev/nvidiactl") or not torch.cuda.is_available() or torch.cuda.device_count() < 2:
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    print(f"two_gpu: {n} GPU(s) visible, two needed: skipped", file=sys.stderr)
    sys.exit(SKIP)


def digest(tensors):
    h = hashlib.blake2b(digest_size=8)
    for t in tensors:
        h.update(t.cpu().numpy().tobytes())
    return h.hexdigest()


def seed_of(name):
    env = os.environ.get("CB_TEST_SEED")
    seed = int(env, 0) if env else (time.time_ns() ^ os.getpid())
    h = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=7).digest(), "little")
    return (seed ^ h) & ((1 << 63) - 1)


def host_blocks(gen, count, sizes):
    """count pinned int32 tensors, sizes (bytes) cycling, random, plus CPU copies."""
    src = [torch.randint(-(1 << 20), 1 << 20, (sizes[i % len(sizes)] // 4,), dtype=torch.int32, generator=gen)
           for i in range(count)]
    return [t.pin_memory() for t in src], src


def compute(x, i):
    return x * 3 + i  # exact in int32 for |x| < 2^20


def report(name, bad, tensors):
    if bad:
        print(f"two_gpu: {name}: {bad} results wrong", file=sys.stderr)
    print(f"CHECK {name} {digest(tensors)}", flush=True)
    return bad == 0


def sc_to_both(gen):
    pinned, ref = host_blocks(gen, 128, [4096, 8192, 16384])
    outs, bad = [], 0
    for dev in (0, 1):
        d = torch.device("cuda", dev)
        on = [t.to(d, non_blocking=True) for t in pinned]  # the device's default stream
        res = [compute(x, i + dev) for i, x in enumerate(on)]
        side = torch.cuda.Stream(d)
        side.wait_stream(torch.cuda.current_stream(d))
        out = [torch.empty_like(t).pin_memory() for t in pinned]
        with torch.cuda.stream(side):
            for o, r in zip(out, res):
                o.copy_(r, non_blocking=True)
        outs.append((side, out))
    for dev, (side, out) in enumerate(outs):
        side.synchronize()
        bad += sum(int(not torch.equal(o, compute(x, i + dev))) for i, (o, x) in enumerate(zip(out, ref)))
    return report("to_both", bad, outs[0][1] + outs[1][1])


def sc_foreach(gen):
    pinned, ref = host_blocks(gen, 256, [4096])
    backs, bad = [], 0
    for dev in (0, 1):
        d = torch.device("cuda", dev)
        dst = [torch.empty_like(t, device=d) for t in pinned]
        torch._foreach_copy_(dst, pinned, non_blocking=True)
        res = [compute(x, dev) for x in dst]
        back = [torch.empty_like(t).pin_memory() for t in pinned]
        torch._foreach_copy_(back, res, non_blocking=True)
        backs.append(back)
    for dev in (0, 1):
        torch.cuda.synchronize(dev)
        bad += sum(int(not torch.equal(b, compute(x, dev))) for b, x in zip(backs[dev], ref))
    return report("foreach", bad, backs[0] + backs[1])


def sc_switch(gen):
    pinned, ref = host_blocks(gen, 128, [4096, 16384])
    dev_t = {0: [], 1: []}
    sides = {dev: torch.cuda.Stream(torch.device("cuda", dev)) for dev in (0, 1)}
    for i in range(0, len(pinned), 8):
        for dev in (0, 1):
            torch.cuda.set_device(dev)
            for j in range(i, i + 8):
                if (j // 8) % 2:
                    with torch.cuda.stream(sides[dev]):
                        dev_t[dev].append((j, pinned[j].to("cuda", non_blocking=True), sides[dev]))
                else:
                    dev_t[dev].append((j, pinned[j].to("cuda", non_blocking=True), None))
    out = {0: [], 1: []}
    for i in range(0, len(pinned), 8):
        for dev in (0, 1):
            torch.cuda.set_device(dev)
            for j, x, s in dev_t[dev][i:i + 8]:
                o = torch.empty_like(pinned[j]).pin_memory()
                if s is not None:
                    with torch.cuda.stream(s):
                        o.copy_(x, non_blocking=True)
                else:
                    o.copy_(x, non_blocking=True)
                out[dev].append(o)
    for dev in (0, 1):
        torch.cuda.set_device(dev)
        torch.cuda.synchronize()
    torch.cuda.set_device(0)
    bad = sum(int(not torch.equal(o, x)) for dev in (0, 1) for o, x in zip(out[dev], ref))
    return report("switch", bad, out[0] + out[1])


def sc_peer(gen):
    pinned, ref = host_blocks(gen, 128, [4096, 32768])
    s0, s1 = torch.cuda.Stream("cuda:0"), torch.cuda.Stream("cuda:1")
    with torch.cuda.stream(s0):
        a = [t.to("cuda:0", non_blocking=True) for t in pinned]
    s1.wait_stream(s0)
    with torch.cuda.stream(s1):
        b = [x.to("cuda:1", non_blocking=True) for x in a]  # peer copies on device 1's stream
        host = [torch.empty_like(t).pin_memory() for t in pinned]
        for h, y in zip(host, b):
            h.copy_(y, non_blocking=True)
    s0.wait_stream(s1)
    with torch.cuda.stream(s0):
        back = [y.to("cuda:0", non_blocking=True) for y in b]
        host2 = [torch.empty_like(t).pin_memory() for t in pinned]
        for h, y in zip(host2, back):
            h.copy_(y, non_blocking=True)
    s0.synchronize()
    s1.synchronize()
    bad = sum(int(not torch.equal(h, x)) for h, x in zip(host, ref))
    bad += sum(int(not torch.equal(h, x)) for h, x in zip(host2, ref))
    return report("peer", bad, host + host2)


SCENARIOS = {"to_both": sc_to_both, "foreach": sc_foreach, "switch": sc_switch, "peer": sc_peer}


def single(names):
    names = names or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"two_gpu: unknown scenario(s) {unknown}", file=sys.stderr)
        return 1
    print(f"two_gpu: torch {torch.__version__}, {torch.cuda.device_count()} GPUs", flush=True)
    ok = True
    for n in names:
        good = SCENARIOS[n](torch.Generator().manual_seed(seed_of(n)))
        print(f"{n:10s} {'ok' if good else 'FAIL'}", flush=True)
        ok &= good
    return 0 if ok else 1


def allreduce():
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    print(f"RANK {rank} PID {os.getpid()}", flush=True)
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    gen = torch.Generator().manual_seed(seed_of("allreduce"))
    parts = [host_blocks(gen, 64, [8192])[1] for _ in range(world)]  # every rank's data, the same everywhere
    mine = [t.pin_memory() for t in parts[rank]]
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        devs = [h.to("cuda", non_blocking=True) for h in mine]
    torch.cuda.current_stream().wait_stream(side)
    t = torch.cat(devs)
    dist.all_reduce(t)
    want = sum(torch.cat(p) for p in parts)
    res = t.cpu()
    ok = torch.equal(res, want)
    if not ok:
        print(f"two_gpu: allreduce rank {rank}: wrong result", file=sys.stderr)
    print(f"CHECK allreduce {digest([res])}", flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "allreduce":
        sys.exit(allreduce())
    if args and args[0] == "single":
        args = args[1:]
    sys.exit(single(args))
