"""A PyTorch soak for cubatch: side-stream and default-stream copies of many small
pinned tensors (4-32 KiB, so some are batched and some pass through by policy),
compute on them, device-to-host copies back on a second stream fenced by an
event, and a CUDA graph (captured copies + compute) replayed every few steps.
Everything is deterministic: run once for --seconds (it prints how many steps it
made), then again under cubatch for exactly --steps, and compare the digests.

    python3 torch_soak.py --seconds 120          # prints: steps N digest D
    LD_PRELOAD=libcubatch.so python3 torch_soak.py --steps N
"""
import argparse
import hashlib
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=0.0)
ap.add_argument("--steps", type=int, default=0)
args = ap.parse_args()

torch.manual_seed(1234)
dev = torch.device("cuda:0")
side, side2 = torch.cuda.Stream(), torch.cuda.Stream()
NB = 96
sizes = [1024, 2048, 4096, 8192]  # float32 elements: 4, 8, 16, 32 KiB
host_in = [torch.randn(sizes[i % 4]).pin_memory() for i in range(NB)]
host_out = [torch.empty(sizes[i % 4]).pin_memory() for i in range(NB)]
dev_buf = [torch.empty(sizes[i % 4], device=dev) for i in range(NB)]
acc = torch.zeros(NB, dtype=torch.float64, device=dev)
w = torch.randn(64, 64, device=dev)

# the graph: captured copies (never batched: capture) and compute
g_in = [torch.randn(2048).pin_memory() for _ in range(8)]
g_dev = [torch.empty(2048, device=dev) for _ in range(8)]
g_out = torch.zeros(8, dtype=torch.float64, device=dev)
cap = torch.cuda.Stream()
with torch.cuda.stream(cap):  # warm up outside the capture
    for j in range(8):
        g_dev[j].copy_(g_in[j], non_blocking=True)
        g_out[j] += g_dev[j].double().sum()
torch.cuda.synchronize()
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph, stream=cap):
    for j in range(8):
        g_dev[j].copy_(g_in[j], non_blocking=True)
        g_out[j] += g_dev[j].double().sum()
torch.cuda.synchronize()

host_hash = hashlib.sha256()
done = torch.cuda.Event()
start = time.time()
step = 0
while True:
    if args.steps and step >= args.steps:
        break
    if not args.steps and time.time() - start >= args.seconds:
        break
    scale = float(step % 7 + 1)
    with torch.cuda.stream(side):
        for i in range(NB):
            dev_buf[i].copy_(host_in[i], non_blocking=True)
        for i in range(0, NB, 8):
            x = torch.cat([b[:1024] for b in dev_buf[i:i + 8]]).view(8, 1024)
            acc[i:i + 8] += (x * scale).double().sum(dim=1)
        done.record(side)
    side2.wait_event(done)
    with torch.cuda.stream(side2):
        for i in range(NB):
            host_out[i].copy_(dev_buf[i], non_blocking=True)
    # default (legacy) stream: passed through by cubatch
    t = host_in[step % NB].to(dev, non_blocking=True)
    acc[0] += (t[:64].view(1, 64) @ w).sum().double()
    if step % 10 == 0:
        graph.replay()
    torch.cuda.synchronize()
    if step % 10 == 0:
        for h in host_out:
            host_hash.update(h.numpy().tobytes())
    step += 1

torch.cuda.synchronize()
d = hashlib.sha256()
d.update(acc.cpu().numpy().tobytes())
d.update(g_out.cpu().numpy().tobytes())
d.update(host_hash.digest())
print(f"steps {step} digest {d.hexdigest()[:32]} seconds {time.time() - start:.1f}", flush=True)
