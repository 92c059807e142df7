#!/usr/bin/env python3
"""In-process A/B of cubatch for PyTorch and JAX copy patterns.

PyTorch and JAX process times are bimodal on the lent H200 (the same
configuration runs 1.0 ms or 2.0 ms from one process to the next), so comparing
processes cannot see a 20% effect.  This script runs inside ONE process with
libcubatch.so preloaded and switches cubatch on and off between rounds through
cubatch_set_enabled() (found with ctypes.CDLL(None)):

    on    cubatch_set_enabled(1): copies are deferred and batched
    off   cubatch_set_enabled(0): every copy passes straight through
    off2  the same as off, timed separately: the A/A column

Each round runs the three in a rotating order (so that none always follows the
same one); each timing is the median of --iters iterations after --warm, and
the report gives, per variant, the median over rounds of each and of the
per-round ratios off/on (cubatch's speed-up) and off/off2 (the noise floor):
a speed-up inside the A/A spread is not a result.

  LD_PRELOAD=src/.libs/libcubatch.so CUBATCH_STATS=json CUBATCH_STATS_FILE=/tmp/s.json \\
      taskset -c 3 python3 bench/inproc_ab.py torch [--rounds 9] [--iters 30]
  LD_PRELOAD=src/.libs/libcubatch.so taskset -c 3 python3 bench/inproc_ab.py jax
  LD_PRELOAD=src/.libs/libcubatch.so taskset -c 3 python3 bench/inproc_ab.py hf --iters 5
  LD_PRELOAD=src/.libs/libcubatch.so taskset -c 3 python3 bench/inproc_ab.py train --iters 20
  LD_PRELOAD=src/.libs/libcubatch.so taskset -c 3 python3 bench/inproc_ab.py kvswap --iters 10

torch variants: a Python loop of dst.copy_(src, non_blocking=True) on the default
stream (PyTorch's: the legacy stream) and on a side stream, 256 x 4 KiB and
256 x 64 KiB pinned host to device; torch._foreach_copy_ of 256 x 4 KiB.
The pace rule (CUBATCH_SLOW_NS) decides whether a Python loop's copies are
deferred at all: run once with the default and once with CUBATCH_SLOW_NS=1000000000
(never slow) to see whether deferring them gains.
jax variants: jax.device_put of a pytree of 512 float32 arrays of 1024 elements
(4 KiB), and of 64 arrays of 16384 (64 KiB), then block_until_ready; the share of
host-to-device copies batched in the "on" rounds comes from cubatch's counters
(cubatch_stats_json), as does the table of calls that ended runs.
hf variant: transformers' generate() with the offloaded KV cache
(cache_implementation="offloaded": each layer's cache is copied to the GPU
before the layer and back after it) on a small Llama made from a config with
random weights (no download), 16 new tokens, greedy.
train variants (issue 43, a whole program): a DLRM-like training step.  64
small pinned host tensors, each its own allocation (26 sparse features' indices,
2048 int64 = 16 KiB, and offsets, 512 int64 = 4 KiB; 10 features' per-sample
weights, 8 KiB; dense features 512 x 13 float32; labels), moved with
.to("cuda", non_blocking=True), then 26 EmbeddingBags (10000 x 64, sum), a
bottom MLP 13-256-64, a top MLP 1728-512-256-1, BCE loss, backward and an SGD
step, then torch.cuda.synchronize(): "default" copies the batch on the default
stream right before its step; "prefetch" copies the next batch on a side stream
while the step computes the one copied before (wait_stream, record_stream);
"samples" makes the copies a visible share of the step: 256 samples of 4 KiB,
each its own pinned tensor, moved one by one, stacked, and an MLP
1024-256-1 trained on them (MSE, SGD).
kvswap variants (issue 43): the KV-cache swap as users write it in PyTorch, one
copy_(non_blocking=True) per layer, block, K and V on a side stream, per layer
the layer's copies then (with "decode") the layer's decode-like compute on the
default stream (four bf16 products of 16 x 4096 by 4096 x 4096), then the
default stream waits for the side stream and the step synchronizes; block ids
random and distinct (or in runs of 16 adjacent blocks on both sides: what a
merging library could join), drawn ahead (8 patterns, used in turn); K and V of
each layer one pinned tensor of 512 blocks on the host and one on the GPU:
  in 256    8 layers x 16 blocks x K,V of 16 KiB (256 copies a step)
  in 2048   32 layers x 32 blocks x K,V of 8 KiB (2,048 copies a step)
  out 2048  the same, GPU to host
Besides the table, the calls that ended runs during the "on" rounds are
printed per variant (the three most frequent): what keeps each framework's
copies from batching.
Output: a Markdown table on stdout, and with --json FILE one JSON object per
variant and round.  Exit: 0 done, 2 usage, 77 the framework or the library is
missing (said on stderr).
"""
import argparse
import ctypes
import json
import statistics
import sys
import time


def load_cubatch():
    lib = ctypes.CDLL(None)
    try:
        setf = lib.cubatch_set_enabled
        stats = lib.cubatch_stats_json
    except AttributeError:
        return None
    setf.argtypes = [ctypes.c_int]
    setf.restype = ctypes.c_int
    stats.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    stats.restype = ctypes.c_size_t

    def counters():
        n = stats(None, 0) + 1
        buf = ctypes.create_string_buffer(n + 4096)
        stats(buf, len(buf))
        return json.loads(buf.value.decode())

    return setf, counters


def torch_variants(iters):
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    side = torch.cuda.Stream()
    out = []
    for elems, label in ((1024, "4K"), (16384, "64K")):
        srcs = [torch.randn(elems).pin_memory() for _ in range(256)]
        dsts = [torch.empty(elems, device="cuda") for _ in range(256)]

        def pyloop(srcs=srcs, dsts=dsts):
            for d, s in zip(dsts, srcs):
                d.copy_(s, non_blocking=True)

        def checker(fn, srcs=srcs, dsts=dsts):
            def check():
                for d in dsts:
                    d.fill_(-1.0)
                torch.cuda.synchronize()
                fn()
                return all(torch.equal(d.cpu(), s) for d, s in zip(dsts, srcs))
            return check

        def on_default(fn=pyloop):
            fn()
            torch.cuda.synchronize()

        def on_side(fn=pyloop):
            with torch.cuda.stream(side):
                fn()
            torch.cuda.synchronize()

        out.append((f"pyloop default 256x{label}", on_default, checker(on_default)))
        out.append((f"pyloop side 256x{label}", on_side, checker(on_side)))
        if label == "4K":
            def foreach(srcs=srcs, dsts=dsts):
                torch._foreach_copy_(dsts, srcs, non_blocking=True)
                torch.cuda.synchronize()
            out.append(("foreach default 256x4K", foreach, checker(foreach)))
    return out


def jax_variants(iters):
    try:
        import jax
        import numpy as np
    except ImportError:
        return None
    out = []
    for n, elems, label in ((512, 1024, "512x4K"), (64, 16384, "64x64K")):
        rng = np.random.default_rng(n)
        tree = {f"p{i}": rng.standard_normal(elems, dtype=np.float32) for i in range(n)}

        def put(tree=tree):
            jax.block_until_ready(jax.device_put(tree))

        def check(tree=tree):
            got = jax.device_get(jax.device_put(tree))
            return all(np.array_equal(got[k], v) for k, v in tree.items())

        out.append((f"device_put pytree {label}", put, check))
    return out


def hf_variants(iters):
    try:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=8,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256)
    model = LlamaForCausalLM(cfg).to("cuda").eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 32), device="cuda")

    def gen():
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=16, min_new_tokens=16, do_sample=False,
                                 cache_implementation="offloaded", pad_token_id=0)
        torch.cuda.synchronize()
        return out

    try:
        first = gen().cpu()
    except Exception as e:  # an API this transformers lacks: not measurable here
        print(f"inproc_ab: hf: generate with the offloaded cache failed: {e}", file=sys.stderr)
        return None

    def check():
        return torch.equal(gen().cpu(), first)

    return [("generate, offloaded KV cache, 8 layers", gen, check)]


def train_variants(iters):
    try:
        import torch
        from torch import nn
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.manual_seed(43)
    dev = torch.device("cuda")
    B, F, ROWS, DIM, WEIGHTED = 512, 26, 10000, 64, 10

    def batch():  # 64 pinned tensors, each its own allocation
        h = {}
        for f in range(F):
            h[f"idx{f}"] = torch.randint(0, ROWS, (B * 4,), dtype=torch.int64).pin_memory()
            h[f"off{f}"] = (torch.arange(B, dtype=torch.int64) * 4).pin_memory()
        for f in range(WEIGHTED):
            h[f"w{f}"] = torch.rand(B * 4).pin_memory()
        h["dense"] = torch.randn(B, 13).pin_memory()
        h["label"] = torch.randint(0, 2, (B,)).float().pin_memory()
        assert len(h) == 64
        return h

    batches = [batch(), batch()]
    embs = nn.ModuleList(nn.EmbeddingBag(ROWS, DIM, mode="sum") for _ in range(F)).to(dev)
    bottom = nn.Sequential(nn.Linear(13, 256), nn.ReLU(), nn.Linear(256, DIM), nn.ReLU()).to(dev)
    top = nn.Sequential(nn.Linear(DIM * (F + 1), 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                        nn.Linear(256, 1)).to(dev)
    params = list(embs.parameters()) + list(bottom.parameters()) + list(top.parameters())
    opt = torch.optim.SGD(params, lr=1e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    side = torch.cuda.Stream()
    state = {"n": 0, "cur": None}

    def upload(h):
        return {k: v.to(dev, non_blocking=True) for k, v in h.items()}

    def compute(g):
        x = bottom(g["dense"])
        pooled = [embs[f](g[f"idx{f}"], g[f"off{f}"], per_sample_weights=g.get(f"w{f}")) for f in range(F)]
        loss = loss_fn(top(torch.cat([x] + pooled, dim=1)).squeeze(1), g["label"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def step_default():
        state["n"] += 1
        compute(upload(batches[state["n"] % 2]))
        torch.cuda.synchronize()

    def step_prefetch():
        state["n"] += 1
        cur = state["cur"]
        with torch.cuda.stream(side):
            nxt = upload(batches[state["n"] % 2])
        if cur is not None:
            compute(cur)
        torch.cuda.current_stream().wait_stream(side)
        for t in nxt.values():
            t.record_stream(torch.cuda.current_stream())
        state["cur"] = nxt
        torch.cuda.synchronize()

    def poisoned_upload(h, stream):
        # upload, poison what arrived, free it, upload again: the caching
        # allocator hands the same blocks back, so bytes a copy failed to
        # write read as -1, not as the last check's
        with torch.cuda.stream(stream):
            g = upload(h)
            for t in g.values():
                t.fill_(-1)
            del g, t
            g = upload(h)
        stream.synchronize()
        return g

    def check_default():
        h = batches[0]
        g = poisoned_upload(h, torch.cuda.current_stream())
        ok = all(torch.equal(g[k].cpu(), v) for k, v in h.items())
        step_default()
        return ok

    def check_prefetch():
        h = batches[1]
        g = poisoned_upload(h, side)
        ok = all(torch.equal(g[k].cpu(), v) for k, v in h.items())
        step_prefetch()
        step_prefetch()
        return ok

    # copies a visible share of the step: 256 samples of 1024 float32 (4 KiB),
    # each its own pinned tensor, as a dataset's per-sample tensors are before
    # collation, moved one by one, stacked, and a small MLP trained on them
    samples = [[torch.randn(1024).pin_memory() for _ in range(256)] for _ in range(2)]
    targets = [torch.randn(256, 1).pin_memory() for _ in range(2)]
    small = nn.Sequential(nn.Linear(1024, 256), nn.ReLU(), nn.Linear(256, 1)).to(dev)
    small_opt = torch.optim.SGD(small.parameters(), lr=1e-3)

    def step_samples():
        state["n"] += 1
        k = state["n"] % 2
        x = torch.stack([t.to(dev, non_blocking=True) for t in samples[k]])
        y = targets[k].to(dev, non_blocking=True)
        loss = nn.functional.mse_loss(small(x), y)
        small_opt.zero_grad(set_to_none=True)
        loss.backward()
        small_opt.step()
        torch.cuda.synchronize()

    def check_samples():
        # as poisoned_upload: what a copy failed to write reads as -1
        g = [t.to(dev, non_blocking=True) for t in samples[0]]
        for t in g:
            t.fill_(-1)
        del g, t
        g = torch.stack([t.to(dev, non_blocking=True) for t in samples[0]])
        ok = torch.equal(g.cpu(), torch.stack(samples[0]))
        step_samples()
        return ok

    return [("train step, 64 pinned tensors, default stream", step_default, check_default),
            ("train step, 64 pinned tensors, side-stream prefetch", step_prefetch, check_prefetch),
            ("train step, 256 pinned samples of 4 KiB, small MLP", step_samples, check_samples)]


def kvswap_variants(iters):
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    import random
    dev = torch.device("cuda")
    side = torch.cuda.Stream()
    POOL = 512  # blocks per layer, on each side
    w = [torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16) for _ in range(4)]
    x = torch.randn(16, 4096, device=dev, dtype=torch.bfloat16)
    pools = {}

    def pool(layers, block_bytes):
        key = (layers, block_bytes)
        if key not in pools:
            elems = block_bytes // 2  # float16; random values made on the GPU (fast on one core)
            cpu = [[torch.empty(POOL, elems, dtype=torch.float16, pin_memory=True) for _ in range(2)]
                   for _ in range(layers)]
            for pair in cpu:
                for t in pair:
                    t.copy_(torch.randn(POOL, elems, device=dev, dtype=torch.float16))
            gpu = [[torch.randn(POOL, elems, device=dev, dtype=torch.float16) for _ in range(2)]
                   for _ in range(layers)]
            torch.cuda.synchronize()
            pools[key] = (cpu, gpu)
        return pools[key]

    def patterns(nblk, run, seed):
        rng = random.Random(seed)
        out = []
        for _ in range(8):
            sides = []
            for _ in range(2):  # CPU ids, GPU ids: independent runs
                slots = rng.sample(range(POOL // run), (nblk + run - 1) // run)
                sides.append([s * run + b for s in slots for b in range(run)][:nblk])
            out.append(list(zip(*sides)))
        return out

    def make(direction, layers, nblk, block_bytes, run, decode):
        cpu, gpu = pool(layers, block_bytes)
        pats = patterns(nblk, run, seed=layers * 1000 + nblk * 10 + run)
        state = {"n": 0}

        def swap(pairs):
            main = torch.cuda.current_stream()
            for layer in range(layers):
                with torch.cuda.stream(side):
                    (ck, cv), (gk, gv) = cpu[layer], gpu[layer]
                    for c, g in pairs:
                        if direction == "in":
                            gk[g].copy_(ck[c], non_blocking=True)
                            gv[g].copy_(cv[c], non_blocking=True)
                        else:
                            ck[c].copy_(gk[g], non_blocking=True)
                            cv[c].copy_(gv[g], non_blocking=True)
                if decode:
                    for m in w:
                        torch.mm(x, m)
            main.wait_stream(side)

        def step():
            state["n"] += 1
            swap(pats[state["n"] % len(pats)])
            torch.cuda.synchronize()

        def check():
            pairs = pats[0]
            cids = torch.tensor([c for c, _ in pairs])
            gids = torch.tensor([g for _, g in pairs], device=dev)
            for layer in range(layers):  # poison the destinations first
                for kv in range(2):
                    if direction == "in":
                        gpu[layer][kv].index_fill_(0, gids, float("nan"))
                    else:
                        cpu[layer][kv].index_fill_(0, cids, float("nan"))
            torch.cuda.synchronize()
            swap(pairs)
            torch.cuda.synchronize()
            for layer in range(layers):
                for kv in range(2):
                    for c, g in pairs:
                        if not torch.equal(cpu[layer][kv][c], gpu[layer][kv][g].cpu()):
                            return False
            return True

        what = "runs of %d" % run if run > 1 else "random ids"
        name = (f"kv {direction} {layers * nblk * 2}: {layers} layers x {nblk} blocks x K,V of "
                f"{block_bytes // 1024} KiB, {what}, {'decode' if decode else 'idle'}")
        return name, step, check

    return [make("in", 8, 16, 16384, 1, False), make("in", 8, 16, 16384, 1, True),
            make("in", 32, 32, 8192, 1, False), make("in", 32, 32, 8192, 1, True),
            make("in", 32, 32, 8192, 16, False), make("out", 32, 32, 8192, 1, False)]


def timed(fn, iters, warm):
    for _ in range(warm):
        fn()
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=("torch", "jax", "hf", "train", "kvswap"))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--json", help="write one JSON object per variant and round here")
    a = ap.parse_args()
    if a.rounds < 1 or a.iters < 1 or a.warm < 0:
        print("inproc_ab: --rounds and --iters must be >= 1, --warm >= 0", file=sys.stderr)
        return 2
    cb = load_cubatch()
    if cb is None:
        print("inproc_ab: cubatch_set_enabled not found: run with LD_PRELOAD=libcubatch.so", file=sys.stderr)
        return 77
    set_enabled, counters = cb
    variants = {"torch": torch_variants, "jax": jax_variants, "hf": hf_variants, "train": train_variants,
                "kvswap": kvswap_variants}[a.what](a.iters)
    if variants is None:
        print(f"inproc_ab: {a.what} (with a GPU) is not available", file=sys.stderr)
        return 77
    for name, _, check in variants:
        for on in (1, 0):
            set_enabled(on)
            if not check():
                print(f"inproc_ab: {name}: wrong bytes (cubatch {'on' if on else 'off'})", file=sys.stderr)
                return 1
    configs = ("on", "off", "off2")
    rows = {name: {c: [] for c in configs} for name, _, _ in variants}
    share = {name: [0, 0] for name, _, _ in variants}  # batched, host-to-device copies in "on"
    share_all = {name: [0, 0] for name, _, _ in variants}  # batched, all copies in "on"
    enders = {name: {} for name, _, _ in variants}  # calls that ended runs in "on"
    log = open(a.json, "w") if a.json else None
    for r in range(a.rounds):
        for vi, (name, fn, _) in enumerate(variants):
            k = (r + vi) % len(configs)
            order = configs[k:] + configs[:k]
            if r % 2:
                order = order[::-1]
            for c in order:
                set_enabled(c == "on")
                snap = counters()
                before = snap["counters"]
                us = timed(fn, a.iters, a.warm)
                snap2 = counters()
                after = snap2["counters"]
                rows[name][c].append(us)
                if c == "on":
                    share[name][0] += (after["batched_copies"] - before["batched_copies"] +
                                       after["kernel_copies"] - before["kernel_copies"])
                    # a burst's first copy passes unclassified (pass_first, not
                    # copies_h2d); counted here whatever its direction, so a
                    # variant that also downloads (transformers) reads a little low,
                    # and one that mostly downloads gets no h2d figure (the
                    # counters do not split batched copies by direction)
                    share[name][1] += (after["copies_h2d"] - before["copies_h2d"] +
                                       after["pass_first"] - before["pass_first"])
                    share_all[name][0] += (after["batched_copies"] - before["batched_copies"] +
                                           after["kernel_copies"] - before["kernel_copies"])
                    share_all[name][1] += after["copies"] - before["copies"]
                    was = snap.get("runs_ended_by", {})
                    for call, n in snap2.get("runs_ended_by", {}).items():
                        if n > was.get(call, 0):
                            enders[name][call] = enders[name].get(call, 0) + n - was.get(call, 0)
                if log:
                    log.write(json.dumps({"variant": name, "round": r, "config": c, "median_us": us}) + "\n")
    set_enabled(1)
    if log:
        log.close()
    print(f"| {a.what} variant | on µs | off µs | off2 µs | off/on (min–max) | A/A off/off2 (min–max) "
          f"| h2d copies batched (on) | all copies batched (on) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, _, _ in variants:
        m = {c: statistics.median(rows[name][c]) for c in configs}
        sp = [o / n for o, n in zip(rows[name]["off"], rows[name]["on"])]
        aa = [o / n for o, n in zip(rows[name]["off"], rows[name]["off2"])]
        b, h = share[name]
        ba, ha = share_all[name]
        print(f"| {name} | {m['on']:.1f} | {m['off']:.1f} | {m['off2']:.1f} | "
              f"{statistics.median(sp):.2f} ({min(sp):.2f}–{max(sp):.2f}) | "
              f"{statistics.median(aa):.2f} ({min(aa):.2f}–{max(aa):.2f}) | "
              f"{'–' if not h or 2 * h < ha else f'{100 * b / h:.0f}% of {h}'} | "
              f"{'–' if not ha else f'{100 * ba / ha:.0f}% of {ha}'} |")
    print("\n| variant | runs ended by, on rounds (the three most frequent) |\n| --- | --- |")
    for name, _, _ in variants:
        top = sorted(enders[name].items(), key=lambda x: -x[1])[:3]
        print(f"| {name} | {', '.join(f'{k} {v}' for k, v in top) or 'none'} |")
    total = counters()["counters"]
    keys = ("markers", "markers_merged", "merged_records", "waits_ridden", "waits_met", "flush_wait", "flush_event")
    print("\ncounters (whole process): " + ", ".join(f"{k} {total.get(k, 0)}" for k in keys))
    ended = counters().get("runs_ended_by", {})
    if ended:
        print("\nruns ended by (whole process): " + ", ".join(f"{k} {v}" for k, v in
                                                            sorted(ended.items(), key=lambda x: -x[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
