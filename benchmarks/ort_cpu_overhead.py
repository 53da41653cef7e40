"""How much does edgebench cost? Its ONNX Runtime CPU throughput over a bare onnxruntime loop, same run.

For each batch size, `--repeats` pairs, in ABBA order so drift hits both sides alike, measure
  bare:      a plain `while: sess.run(...)` loop in this process, same session options and threads
  edgebench: the real runner (1 instance, process mode: a spawned child, barrier, timestamps, telemetry)
for the same window, and print the median of the per-pair ratios edgebench/bare (goal >= 0.97) with
their min..max, because a shared 2-core VM swings by +-25% between windows.
Then the null backend's per-inference overhead in microseconds (the runner's loop with no model).

    .venv/bin/python benchmarks/ort_cpu_overhead.py --model resnet18 --batches 1,8 --seconds 3 --repeats 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edgebench.backends.registry import get_backend  # noqa: E402
from edgebench.config.run_config import RunConfig
from edgebench.models.artifacts import Artifacts  # noqa: E402
from edgebench.models.export import export_onnx  # noqa: E402
from edgebench.models.inputs import make_input
from edgebench.models.model_artifact import ModelArtifact
from edgebench.models.spec import load_model_spec
from edgebench.runner.metrics import summarize  # noqa: E402
from edgebench.runner.orchestrator import run_instances  # noqa: E402
from edgebench.telemetry.registry import make_sampler  # noqa: E402


def bare_loop_ips(onnx_path: str, input_name: str, shape: tuple[int, ...], threads: int, seconds: float,
                  warmup_s: float) -> float:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(onnx_path, sess_options=so, providers=["CPUExecutionProvider"])
    feed = {input_name: make_input(shape, "float32", 0)}
    names = [o.name for o in sess.get_outputs()]
    end = time.monotonic() + warmup_s
    while time.monotonic() < end:
        sess.run(names, feed)
    n = 0
    t0 = time.monotonic_ns()
    end_ns = t0 + int(seconds * 1e9)
    t = t0
    while t < end_ns:
        sess.run(names, feed)
        n += 1
        t = time.monotonic_ns()
    return n * shape[0] / ((t - t0) / 1e9)


def edgebench_ips(cfg: RunConfig, artifact: ModelArtifact, with_telemetry: bool) -> float:
    backend = get_backend(cfg.backend)
    prepared = backend.prepare(cfg, artifact, Artifacts())
    samplers = [make_sampler("host", 0.1)] if with_telemetry else []
    outcome = run_instances(cfg, prepared, samplers=samplers)
    if outcome.status != "ok":
        raise SystemExit(f"edgebench run failed: {outcome.reason}")
    return summarize(outcome.instances, cfg.batch, cfg.sub_windows).throughput_ips


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--no-telemetry", action="store_true", help="run edgebench without the host sampler")
    args = ap.parse_args()

    spec = load_model_spec(args.model)
    art = export_onnx(spec, Artifacts())
    artifact = ModelArtifact(model=spec.name, precision="fp32", onnx_path=str(art.path), sha256=art.sha256,
                             inputs=spec.inputs)
    print(f"model {spec.name} ({spec.weights_label}), {args.threads} threads, window {args.seconds} s, "
          f"{args.repeats} repeats, telemetry {'off' if args.no_telemetry else 'host sampler on'}", flush=True)
    results = []
    for batch in [int(b) for b in args.batches.split(",")]:
        cfg = RunConfig(model=spec.name, backend="ort", precision="fp32", batch=batch, placements=("cpu",),
                        threads_per_instance=args.threads, warmup_s=1.0, duration_s=args.seconds,
                        max_duration_s=args.seconds, min_inferences=1, accuracy_samples=0)
        bare, eb = [], []
        for r in range(args.repeats):
            order = ("bare", "eb") if r % 2 == 0 else ("eb", "bare")
            got = {}
            for side in order:
                if side == "bare":
                    got[side] = bare_loop_ips(str(art.path), spec.first_input.name, (batch, *spec.first_input.shape),
                                              args.threads, args.seconds, 1.0)
                else:
                    got[side] = edgebench_ips(cfg, artifact, not args.no_telemetry)
            bare.append(got["bare"])
            eb.append(got["eb"])
            print(f"  b{batch} pair {r + 1}: bare {bare[-1]:.2f} img/s, edgebench {eb[-1]:.2f} img/s, "
                  f"ratio {eb[-1] / bare[-1]:.3f}", flush=True)
        results.append((batch, bare, eb))

    null_cfg = RunConfig(model=spec.name, backend="null", precision="fp32", batch=1, placements=("cpu",),
                         warmup_s=0.5, duration_s=2.0, max_duration_s=2.0, min_inferences=1, accuracy_samples=0)
    null_prepared = get_backend("null").prepare(null_cfg, artifact, Artifacts())
    outcome = run_instances(null_cfg, null_prepared)
    s = summarize(outcome.instances, 1, null_cfg.sub_windows)
    per_inf_us = 1e6 / s.throughput_ips if s.throughput_ips else float("nan")

    print()
    print(f"{'batch':>5}  {'bare img/s':>11}  {'edgebench img/s':>15}  {'ratio (median of pairs)':>23}  "
          f"{'min..max':>12}  goal")
    for batch, bare, eb in results:
        ratios = [e / b for e, b in zip(eb, bare)]
        ratio = statistics.median(ratios)
        print(f"{batch:>5}  {statistics.median(bare):>11.2f}  {statistics.median(eb):>15.2f}  {ratio:>23.3f}  "
              f"{min(ratios):.3f}..{max(ratios):.3f}  >= 0.97 {'met' if ratio >= 0.97 else 'MISSED'}")
    print(f"null backend: {per_inf_us:.3f} us per inference (loop period), "
          f"timed infer() call {s.latency_ms['mean'] * 1000:.3f} us mean, {s.inferences} inferences")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
