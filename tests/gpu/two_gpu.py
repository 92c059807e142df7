"""Two GPUs under cubatch: peer copies between the devices on side streams, and an
NCCL all-reduce across two processes, each checked against the expected values.
    python3 two_gpu.py            (prints 'two_gpu: ok' or exits 1)"""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def peer_copies():
    a = [torch.randn(1024 * (1 + i % 8), device="cuda:0") for i in range(128)]
    s0, s1 = torch.cuda.Stream("cuda:0"), torch.cuda.Stream("cuda:1")
    with torch.cuda.stream(s1):
        b = [x.to("cuda:1", non_blocking=True) for x in a]
    s1.synchronize()
    host = [torch.empty(x.shape).pin_memory() for x in a]
    with torch.cuda.stream(s1):
        for h, y in zip(host, b):
            h.copy_(y, non_blocking=True)
    s1.synchronize()
    with torch.cuda.stream(s0):
        back = [y.to("cuda:0", non_blocking=True) for y in b]
    s0.synchronize()
    ok = all(torch.equal(x.cpu(), h) for x, h in zip(a, host))
    ok &= all(torch.equal(x, y) for x, y in zip(a, back))
    return ok


def rank_main(rank, path, q):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{path}", rank=rank, world_size=2)
    side = torch.cuda.Stream()
    hosts = [torch.full((2048,), float(rank + 1 + i)).pin_memory() for i in range(64)]
    with torch.cuda.stream(side):
        devs = [h.to(f"cuda:{rank}", non_blocking=True) for h in hosts]
    side.synchronize()
    t = torch.cat(devs)
    dist.all_reduce(t)
    want = torch.cat([torch.full((2048,), float(1 + i) + float(2 + i)) for i in range(64)])
    q.put((rank, bool(torch.equal(t.cpu(), want))))
    dist.destroy_process_group()


if __name__ == "__main__":
    if torch.cuda.device_count() < 2:
        print("two_gpu: fewer than 2 GPUs, skipped")
        sys.exit(77)
    ok = peer_copies()
    print(f"two_gpu: peer copies {'ok' if ok else 'WRONG'}")
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    path = tempfile.mktemp()
    ps = [ctx.Process(target=rank_main, args=(r, path, q)) for r in range(2)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(300)
    res = dict(q.get() for _ in ps)
    print(f"two_gpu: all-reduce {res}")
    ok &= all(res.values()) and all(p.exitcode == 0 for p in ps)
    print("two_gpu: ok" if ok else "two_gpu: WRONG")
    sys.exit(0 if ok else 1)
