"""ResNet-50 FP16 against the card's FP16 roofline, and NVML's energy counter against integrated power.

1. Dense FP16 matmul rate of this GPU (8192^3, torch.matmul, mean of 10 after 3 warm-ups) = the roofline.
2. A few ResNet-50 FP16 configurations through edgebench (torch backend: channels_last, CUDA graphs,
   large batches, 2 streams); achieved FLOP/s = img/s * 8.2 GFLOP; fraction of the roofline (goal >= 30%).
3. For every run: NVML total-energy counter delta vs trapezoidal integral of NVML power over the same
   window -> agreement %.

    python3 benchmarks/gpu_roofline_energy.py --seconds 3
    python3 benchmarks/gpu_roofline_energy.py --seconds 3 --only-compile   # torch.compile rows (minutes)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edgebench.backends.registry import get_backend  # noqa: E402
from edgebench.config.run_config import RunConfig
from edgebench.models.artifacts import Artifacts  # noqa: E402
from edgebench.models.export import export_onnx  # noqa: E402
from edgebench.models.precision import precision_artifact  # noqa: E402
from edgebench.models.spec import load_model_spec
from edgebench.runner.metrics import summarize  # noqa: E402
from edgebench.runner.orchestrator import run_instances  # noqa: E402
from edgebench.telemetry.registry import make_sampler  # noqa: E402

RESNET50_GFLOP = 8.2  # per 224x224 image (4.1 GMAC)

CONFIGS = [  # (batch, placements, mode, options)
    (64, ("cuda:0",), "process", {}),
    (64, ("cuda:0",), "process", {"channels_last": True}),
    (64, ("cuda:0",), "process", {"channels_last": True, "cuda_graph": True}),
    (256, ("cuda:0",), "process", {"channels_last": True, "cuda_graph": True}),
    (128, ("cuda:0", "cuda:0"), "streams", {"channels_last": True, "cuda_graph": True}),
    (256, ("cuda:0",), "process", {"channels_last": True, "compile": "default", "cuda_graph": True}),
    (128, ("cuda:0", "cuda:0"), "streams", {"channels_last": True, "compile": "default", "cuda_graph": True}),
    (512, ("cuda:0",), "process", {"channels_last": True, "compile": "default", "cuda_graph": True}),
    (256, ("cuda:0", "cuda:0"), "streams", {"channels_last": True, "compile": "default", "cuda_graph": True}),
    (256, ("cuda:0",), "process", {"channels_last": True, "compile": "max-autotune-no-cudagraphs"}),
]


def fp16_matmul_tflops(n: int = 8192) -> float:
    import torch

    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / 10
    del a, b
    torch.cuda.empty_cache()
    return 2 * n**3 / dt / 1e12


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--only-compile", action="store_true", help="only the torch.compile configurations")
    ap.add_argument("--skip-autotune", action="store_true", help="leave out compile=max-autotune (minutes of tuning)")
    args = ap.parse_args()
    roof = fp16_matmul_tflops()
    print(f"dense fp16 matmul (8192^3): {roof:.1f} TFLOP/s", flush=True)

    spec = load_model_spec("resnet50")
    cache = Artifacts()
    art = precision_artifact(spec, export_onnx(spec, cache), "fp16", cache, {})
    rows = []
    for batch, placements, mode, options in CONFIGS:
        has_compile = "compile" in options
        if (args.skip_compile and has_compile) or (args.only_compile and not has_compile):
            continue
        if args.skip_autotune and "autotune" in str(options.get("compile", "")):
            continue
        cfg = RunConfig(model="resnet50", backend="torch", precision="fp16", batch=batch, placements=placements,
                        mode=mode, warmup_s=1.0, duration_s=args.seconds, max_duration_s=args.seconds + 5,
                        min_inferences=64, accuracy_samples=0, options=tuple(sorted(options.items())))
        prepared = get_backend("torch").prepare(cfg, art, cache)
        outcome = run_instances(cfg, prepared, samplers=[make_sampler("nvml", 0.05)])
        if outcome.status != "ok":
            print(f"  {cfg.label()}: failed: {outcome.reason}", flush=True)
            continue
        s = summarize(outcome.instances, batch, cfg.sub_windows)
        tl = outcome.timelines[0]
        counter = tl.counter_delta("energy_total_mj", s.window_start_ns, s.window_end_ns)
        integ = tl.integrate("power_total_mw", s.window_start_ns, s.window_end_ns)
        agree = None if not counter or integ is None else 100.0 * (1 - abs(integ - counter) / counter)
        tflops = s.throughput_ips * RESNET50_GFLOP / 1e3
        rows.append((cfg.label(), s.throughput_ips, tflops, 100 * tflops / roof, counter, integ, agree))
        print(f"  {cfg.label()}: {s.throughput_ips:.0f} img/s, {tflops:.1f} TFLOP/s", flush=True)

    print(f"\nroofline: {roof:.1f} TFLOP/s dense fp16; ResNet-50 = {RESNET50_GFLOP} GFLOP/image")
    print(f"{'config':<72}{'img/s':>8}{'TFLOP/s':>9}{'% roof':>8}{'E ctr J':>9}{'E int J':>9}{'agree %':>9}")
    for label, ips, tf, pct, c, i, a in rows:
        def fmt(v, d=1):
            return ("-" if v is None else f"{v:.{d}f}")
        print(f"{label:<72}{ips:>8.0f}{tf:>9.1f}{pct:>8.1f}{fmt(c and c / 1e3):>9}{fmt(i and i / 1e3):>9}{fmt(a, 2):>9}")
    if rows:
        best = max(rows, key=lambda r: r[1])
        print(f"fastest: {best[0]} at {best[3]:.1f}% of the fp16 roofline (goal >= 30%: "
              f"{'met' if best[3] >= 30 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
