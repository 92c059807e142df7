"""torch_capture: PyTorch CUDA graphs (torch.cuda.graph), as the PyTorch
documentation's recipe and serving stacks use them, in each capture error mode.

Scenarios, each once per mode (global, thread_local, relaxed):
  gemm     a 4096^2 matrix product and an elementwise kernel captured, replayed,
           compared with the same ops run eagerly
  copies   pinned host tensors copied in with non_blocking=True before the
           capture, inside it (from static pinned inputs) and out after the
           replays, beside the captured matrix product
  many     256 small pinned tensors uploaded with _foreach_copy_ on the capture
           stream right before and after the capture

Prints "CHECK <scenario>-<mode> <digest of the inputs> equal" lines (equal:
the replayed results agree with the eager run in this process to 1e-4; a
missed or stale copy changes whole blocks).
Exit 0 right, 1 wrong, 77 no GPU.
"""
import hashlib
import os
import sys

try:
    import torch
except ImportError:
    print("torch_capture: no torch", file=sys.stderr)
    sys.exit(77)
if not torch.cuda.is_available():
    print("torch_capture: no GPU", file=sys.stderr)
    sys.exit(77)

SEED = int(os.environ.get("CB_TEST_SEED", "1")) % (2**31)
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False
bad = 0


def digest(*ts):
    h = hashlib.sha256()
    for t in ts:
        h.update(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def close(a, b):
    return a.shape == b.shape and torch.allclose(a, b, rtol=1e-4, atol=1e-4)


def report(name, mode, ok, *inputs):
    global bad
    if not ok:
        print(f"torch_capture: {name}-{mode}: replay differs from eager", file=sys.stderr)
        bad = 1
    print(f"CHECK {name}-{mode} {digest(*inputs)} {'equal' if ok else 'DIFFERENT'}")


def gen(shape, salt):
    g = torch.Generator().manual_seed(SEED + salt)
    return torch.randn(shape, generator=g)


def sc_gemm(mode):
    a = gen((4096, 4096), 1).to(dev)
    b = gen((4096, 4096), 2).to(dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up on the side stream, as the recipe says
        for _ in range(2):
            out = torch.relu(a @ b) * 0.5
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode=mode):
        out = torch.relu(a @ b) * 0.5
    g.replay()
    g.replay()
    torch.cuda.synchronize()
    report("gemm", mode, close(out, torch.relu(a @ b) * 0.5), a, b)


def sc_copies(mode):
    host_a = gen((1024, 1024), 3).pin_memory()
    host_b = gen((1024, 1024), 4).pin_memory()
    static_in = torch.empty((1024, 1024), device=dev)
    w = gen((1024, 1024), 5).to(dev)
    out_host = torch.empty((1024, 1024)).pin_memory()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up of the captured ops on the capture stream
        for _ in range(2):
            static_in.copy_(host_a, non_blocking=True)  # before the capture
            y = torch.tanh(static_in @ w)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s, capture_error_mode=mode):
        static_in.copy_(host_b, non_blocking=True)  # inside: from a static pinned input
        y = torch.tanh(static_in @ w)
    with torch.cuda.stream(s):
        g.replay()
        out_host.copy_(y, non_blocking=True)  # after the replay
    s.synchronize()
    want = torch.tanh(host_b.to(dev) @ w).cpu()
    ok = close(out_host, want)
    if not ok:
        print(f"torch_capture: copies-{mode}: max |diff| {(out_host - want).abs().max().item():.3g}, "
              f"input was host_a: {close(out_host, torch.tanh(host_a.to(dev) @ w).cpu())}", file=sys.stderr)
    report("copies", mode, ok, host_a, host_b, w)


def sc_many(mode):
    g0 = torch.Generator().manual_seed(SEED + 100)  # small integers: every sum is exact
    hosts = [torch.randint(-100, 100, (1024,), generator=g0).float().pin_memory() for _ in range(256)]
    devs = [torch.empty(1024, device=dev) for _ in range(256)]
    s = torch.cuda.Stream()
    scale = torch.full((1024,), 3.0, device=dev)
    with torch.cuda.stream(s):
        torch._foreach_copy_(devs, hosts, non_blocking=True)  # right before the capture
        acc = torch.stack(devs).sum(0) * scale
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s, capture_error_mode=mode):
        acc = torch.stack(devs).sum(0) * scale
    with torch.cuda.stream(s):
        torch._foreach_copy_(devs, hosts, non_blocking=True)  # right after
    g.replay()
    torch.cuda.synchronize()
    want = (torch.stack(hosts).sum(0) * 3.0).to(dev)
    report("many", mode, close(acc, want), *hosts)


scenarios = {"gemm": sc_gemm, "copies": sc_copies, "many": sc_many}
names = sys.argv[1:] or list(scenarios)
for mode in ("global", "thread_local", "relaxed"):
    for n in names:
        try:
            scenarios[n](mode)
        except Exception as e:  # a CUDA error in a capture: a failure, reported
            print(f"torch_capture: {n}-{mode}: {type(e).__name__}: {e}", file=sys.stderr)
            bad = 1
sys.exit(bad)
