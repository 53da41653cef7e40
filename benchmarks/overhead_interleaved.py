"""Harness overhead with a confidence interval: edgebench's worker loop vs a bare framework loop, interleaved.

Both sides are spawned processes that live for the whole measurement (the edgebench side set up exactly
like a runner instance, see edgebench/runner/interleave.py); they alternate in ABBA order for --pairs pairs
of --slice seconds each, and the table gives the median edgebench/bare ratio with a 95% bootstrap interval.
"overhead detected" means the interval's upper end is below 0.99.

    # CPU (ORT and torch, this machine's cores):
    python benchmarks/overhead_interleaved.py --device cpu --frameworks ort,torch --model resnet18 --batches 1,32
    # GPU (torch fp16 and, when onnxruntime-gpu is importable, ORT fp16 with IOBinding):
    python3 benchmarks/overhead_interleaved.py --device cuda:0 --frameworks torch,ort --model resnet50 --batches 1,32
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edgebench.backends.base import Env  # noqa: E402
from edgebench.backends.registry import get_backend  # noqa: E402
from edgebench.config.run_config import RunConfig
from edgebench.models.artifacts import Artifacts  # noqa: E402
from edgebench.models.export import export_onnx  # noqa: E402
from edgebench.models.precision import precision_artifact  # noqa: E402
from edgebench.models.spec import load_model_spec
from edgebench.runner.interleave import bootstrap_median_ci, run_interleaved  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--device", default="cuda:0" if Env.detect().cuda_devices else "cpu")
    ap.add_argument("--frameworks", default="torch,ort")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--precision", help="default: fp16 on a GPU, fp32 on the CPU")
    ap.add_argument("--pairs", type=int, default=20, help="ABBA pairs (each pair = one bare and one edgebench slice)")
    ap.add_argument("--slice", type=float, default=1.0, help="seconds per slice")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds of warm-up of each side before the first slice")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="CPU threads of each side")
    ap.add_argument("--samplers", default="auto",
                    help="samplers watching the edgebench side, comma list; auto = nvml,host on a GPU, host on "
                         "the CPU; none = no telemetry")
    args = ap.parse_args()
    gpu = args.device != "cpu"
    samplers = {"auto": ["nvml", "host"] if gpu else ["host"], "none": []}.get(args.samplers, args.samplers.split(","))
    precision = args.precision or ("fp16" if gpu else "fp32")

    env = Env.detect()
    spec = load_model_spec(args.model)
    cache = Artifacts()
    fp32 = export_onnx(spec, cache)
    artifact = precision_artifact(spec, fp32, precision, cache, {"source": "synthetic", "samples": 8, "seed": 0})
    print(f"model {spec.name} ({spec.weights_label}) {precision} on {args.device}, {args.pairs} ABBA pairs of "
          f"{args.slice:g} s, {args.threads} threads, samplers on the edgebench side: {','.join(samplers) or 'none'}",
          flush=True)
    table = []
    for fw in args.frameworks.split(","):
        for batch in [int(b) for b in args.batches.split(",")]:
            cfg = RunConfig(model=spec.name, backend=fw, precision=precision, batch=batch, placements=(args.device,),
                            threads_per_instance=args.threads, warmup_s=args.warmup, accuracy_samples=0)
            skip = get_backend(fw).supports(cfg, env)
            if skip:
                print(f"SKIP {fw} b{batch}: {skip}", flush=True)
                table.append((fw, batch, None, skip))
                continue
            prepared = get_backend(fw).prepare(cfg, artifact, cache)

            def show(pair: int, bare: float, eb: float, fw: str = fw, batch: int = batch) -> None:
                print(f"  {fw} b{batch} pair {pair + 1:>2}: bare {bare:9.2f}  edgebench {eb:9.2f} img/s  "
                      f"ratio {eb / bare:.3f}", flush=True)

            try:
                res = run_interleaved(cfg, prepared, fw, pairs=args.pairs, slice_s=args.slice, samplers=samplers,
                                      on_pair=show)
            except RuntimeError as exc:
                print(f"FAILED {fw} b{batch}: {exc}", flush=True)
                table.append((fw, batch, None, f"failed: {exc}"))
                continue
            table.append((fw, batch, res, ""))

    print(f"\nedgebench / bare, {args.model} {precision} on {args.device}: median of {args.pairs} ABBA pairs of "
          f"{args.slice:g} s, 95% bootstrap interval")
    print(f"{'fw':<6}{'batch':>5}{'bare img/s':>12}{'edgebench':>12}{'ratio':>8}  {'95% CI':<15} verdict")
    for fw, batch, res, note in table:
        if res is None:
            print(f"{fw:<6}{batch:>5}  {note}")
            continue
        med, lo, hi = bootstrap_median_ci(res.ratios)
        bare = statistics.median(s.ips for s in res.side("bare"))
        eb = statistics.median(s.ips for s in res.side("edgebench"))
        verdict = ("overhead detected: upper end < 0.99" if hi < 0.99 else
                   ">= 0.99 shown: lower end >= 0.99" if lo >= 0.99 else "inconclusive: the interval spans 0.99")
        print(f"{fw:<6}{batch:>5}{bare:>12.2f}{eb:>12.2f}{med:>8.3f}  {lo:.3f}..{hi:.3f}   {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
