"""Where a forked GPU worker's start goes (issue 37): N children forked at once from a parent that imported torch and
torchvision (as run.worker_start: forkserver does); each times its steps from the fork: the CUDA runtime's init, the
saved ResNet-50 mapped onto a meta-constructed module, the copy to the GPU in fp16, a first forward (cudnn
benchmark), a CUDA graph capture. Prints per step the median and the max over the children (the last one is what a
row waits for). Not edgebench's code path: a bare probe of what starting GPU workers costs, outside the harness.
Variants (environment): PROBE_FLAT=1 one host->device copy per dtype (PROBE_PINNED=1 through a pinned buffer),
PROBE_TOKEN=1 one worker's copy at a time (a file lock), PROBE_NO_BENCH=1 cudnn.benchmark off.
    python benchmarks/gpu_worker_init_probe.py N [N ...]      (results: docs/results/h200-setup-issue37.md)
"""
import fcntl
import os
import sys
import tempfile
import time

import torch
import torchvision

STEPS = ["cuda_init", "state_load", "to_gpu", "first_forward", "graph_capture"]


def to_gpu_flat(m, dtype, align=128, pinned=False):
    """Every tensor of the module in one host->device copy per dtype (padded to 256 bytes), assigned as views."""
    groups = {}
    for k, v in m.state_dict().items():
        v = v.to(dtype) if v.is_floating_point() else v
        groups.setdefault(v.dtype, []).append((k, v))
    out = {}
    for dt, items in groups.items():
        parts, offs, o = [], [], 0
        for _, v in items:
            n, pad = v.numel(), (-v.numel()) % align
            parts.append(v.reshape(-1))
            offs.append(o)
            if pad:
                parts.append(torch.zeros(pad, dtype=dt))
            o += n + pad
        if pinned:  # one pinned staging buffer: one DMA instead of the driver's pageable chunks
            host = torch.empty(o, dtype=dt, pin_memory=True)
            torch.cat(parts, out=host)
            flat = host.to("cuda", non_blocking=True)
            torch.cuda.synchronize()
        else:
            flat = torch.cat(parts).to("cuda")
        for (k, v), off in zip(items, offs):
            out[k] = flat[off:off + v.numel()].view(v.shape)
    with torch.device("meta"):
        g = torchvision.models.resnet50()
    g.load_state_dict(out, assign=True)
    return g.eval().requires_grad_(False)


def child(path, wfd, t_fork):
    t = [time.perf_counter()]

    def mark():
        torch.cuda.synchronize()
        t.append(time.perf_counter())

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    mark()
    state = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    with torch.device("meta"):
        m = torchvision.models.resnet50()
    m.load_state_dict(state, assign=True)
    m.eval()
    t.append(time.perf_counter())
    token = open(path + ".lock", "w") if os.environ.get("PROBE_TOKEN") else None  # noqa: SIM115
    if token:
        fcntl.flock(token, fcntl.LOCK_EX)  # one copy at a time
    if os.environ.get("PROBE_FLAT"):
        m = to_gpu_flat(m, torch.float16, pinned=bool(os.environ.get("PROBE_PINNED")))
    else:
        m = m.requires_grad_(False).to("cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    if token:
        fcntl.flock(token, fcntl.LOCK_UN)
    t.append(time.perf_counter())
    torch.backends.cudnn.benchmark = not os.environ.get("PROBE_NO_BENCH")
    x = torch.randn(1, 3, 224, 224, device="cuda", dtype=torch.float16)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            m(x)
    mark()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        m(x)
    g.replay()
    mark()
    os.write(wfd, (" ".join(f"{v:.6f}" for v in [t_fork, *t]) + "\n").encode())
    os._exit(0)


def run(n, path):
    r, w = os.pipe()
    t_fork = time.perf_counter()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(path, w, t_fork)
        pids.append(pid)
    os.close(w)
    for p in pids:
        os.waitpid(p, 0)
    wall = time.perf_counter() - t_fork
    lines = os.read(r, 1 << 20).decode().split("\n")
    rows = [[float(v) for v in ln.split()] for ln in lines if ln.strip()]
    print(f"N={n}: {len(rows)} children, wall {wall:.2f} s (fork to last exit)")
    print(f"  {'step':<14} {'median s':>9} {'max s':>7}   (duration of the step)  | done since fork: median, max")
    for i, name in enumerate(["fork_to_start", *STEPS]):
        d = sorted(rw[i + 1] - rw[i] for rw in rows)
        e = sorted(rw[i + 1] - rw[0] for rw in rows)
        print(f"  {name:<14} {d[len(d) // 2]:9.3f} {d[-1]:7.3f}   | {e[len(e) // 2]:7.3f} {e[-1]:7.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r50.pt")
        torch.manual_seed(0)
        torch.save(torchvision.models.resnet50().state_dict(), path)
        print("torch", torch.__version__, {k: v for k, v in os.environ.items() if k.startswith(("CUDA_", "PROBE_"))})
        for n in [int(a) for a in sys.argv[1:]] or [1, 32]:
            run(n, path)
