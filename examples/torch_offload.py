#!/usr/bin/env python3
"""torch_offload: PyTorch moving many small tensors between the GPU and pinned host
memory on a side stream with non_blocking=True, computing on them, and checking
the results against the same computation done on the CPU.

    python3 examples/torch_offload.py [--tensors N] [--steps S] [--seed K]
    cubatch --stats python3 examples/torch_offload.py      (the same, with cubatch)

Each step offloads N parameter-like tensors (4-64 KiB each, float32) from the GPU
into pinned buffers, brings N others back from pinned buffers, all on one
torch.cuda.Stream, then the default stream waits for that stream and updates the
tensors it brought back (p = p * 0.5 + step).  The copies reach the driver as
cuMemcpyDtoHAsync / cuMemcpyHtoDAsync on the side stream, which cubatch can batch;
copies on PyTorch's default stream are on the legacy stream and pass through.

Prints "torch_offload: correct" (exit 0) or "torch_offload: WRONG ..." (exit 1);
exit 77 when PyTorch or a GPU is missing.
"""
import argparse
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tensors", type=int, default=128, help="tensors each way per step (default 128)")
    ap.add_argument("--steps", type=int, default=20, help="steps (default 20)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    args = ap.parse_args()

    try:
        import torch
    except ImportError:
        print("torch_offload: PyTorch is not installed", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("torch_offload: no CUDA device visible to PyTorch", file=sys.stderr)
        return 77

    gen = torch.Generator().manual_seed(args.seed)
    n = args.tensors
    total = 2 * n
    # element counts of 4-64 KiB float32 tensors
    sizes = [int(x) for x in torch.randint(1024, 16 * 1024 + 1, (total,), generator=gen)]
    # Host truth, the tensors on the GPU, and one pinned buffer per tensor.
    truth = [torch.randn(s, generator=gen) for s in sizes]
    on_gpu = [True] * total
    gpu = [t.cuda() for t in truth]
    pinned = [torch.empty(s, pin_memory=True) for s in sizes]
    side = torch.cuda.Stream()
    torch.cuda.synchronize()

    copies = 0
    start = time.perf_counter()
    for step in range(args.steps):
        if step == 1:  # time from the second step: the first warms up allocators and libraries
            torch.cuda.synchronize()
            start = time.perf_counter()
        out_idx = [i for i in range(total) if on_gpu[i]][:n]
        in_idx = [i for i in range(total) if not on_gpu[i]][:n]
        side.wait_stream(torch.cuda.current_stream())  # the updates of the last step
        with torch.cuda.stream(side):
            for i in out_idx:                  # offload: device -> pinned host
                pinned[i].copy_(gpu[i], non_blocking=True)
                gpu[i].record_stream(side)
            for i in in_idx:                   # bring back: pinned host -> device
                gpu[i] = pinned[i].to("cuda", non_blocking=True)
        copies += len(out_idx) + len(in_idx)
        torch.cuda.current_stream().wait_stream(side)
        for i in in_idx:                       # compute on what came back
            gpu[i].mul_(0.5).add_(float(step))
            truth[i] = truth[i] * 0.5 + float(step)
        for i in out_idx:
            on_gpu[i] = False
        for i in in_idx:
            on_gpu[i] = True
    torch.cuda.synchronize()
    wall = time.perf_counter() - start

    wrong = 0
    for i in range(total):
        got = gpu[i].cpu() if on_gpu[i] else pinned[i]
        if not torch.equal(got, truth[i]):
            wrong += 1
    print(f"torch_offload: {args.steps} steps, {copies} copies of 4-64 KiB on a side stream, "
          f"{wall * 1000:.1f} ms after the first step")
    if wrong:
        print(f"torch_offload: WRONG results in {wrong} of {total} tensors")
        return 1
    print("torch_offload: correct")
    return 0


if __name__ == "__main__":
    sys.exit(main())
