"""GPU harness overhead: edgebench throughput / a bare loop of the same framework call, same script run.

torch: bare = `model(x)` + stream synchronize per batch (what TorchSession.infer does), fp16, channels_last off.
ort:   bare = `sess.run_with_iobinding(binding)` + synchronize_outputs (CUDA EP, device-resident I/O), fp32.
edgebench = the real runner, 1 instance, process mode, with the samplers of --samplers (default NVML + host;
"none" isolates the runner from telemetry). ABBA pairs, median ratio.

    python3 benchmarks/gpu_overhead.py --batches 1,32 --seconds 3 --repeats 3    # goal >= 0.99
    python3 benchmarks/gpu_overhead.py --frameworks torch --batches 1 --samplers none --repeats 5
"""

from __future__ import annotations

import argparse
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
from edgebench.models.precision import precision_artifact  # noqa: E402
from edgebench.models.spec import load_model_spec
from edgebench.runner.metrics import summarize  # noqa: E402
from edgebench.runner.orchestrator import run_instances  # noqa: E402
from edgebench.telemetry.registry import make_sampler  # noqa: E402


def _timed(step, batch: int, seconds: float, warmup_s: float = 1.0) -> float:
    end = time.monotonic() + warmup_s
    while time.monotonic() < end:
        step()
    n, t0 = 0, time.monotonic_ns()
    stop = t0 + int(seconds * 1e9)
    t = t0
    while t < stop:
        step()
        n += 1
        t = time.monotonic_ns()
    return n * batch / ((t - t0) / 1e9)


def bare_torch(spec, batch: int, seconds: float) -> float:
    import torch

    from edgebench.models.export import build_torch_model

    model = build_torch_model(spec).eval().half().cuda()
    x = torch.from_numpy(make_input((batch, *spec.first_input.shape), "float32", 0)).half().cuda()
    stream = torch.cuda.Stream()

    def step() -> None:
        with torch.inference_mode(), torch.cuda.stream(stream):
            model(x)
        stream.synchronize()

    torch.backends.cudnn.benchmark = True
    return _timed(step, batch, seconds)  # model and x are freed when this frame ends


def bare_ort(onnx_path: str, input_name: str, shape: tuple[int, ...], seconds: float) -> float:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(onnx_path, sess_options=so, providers=[("CUDAExecutionProvider", {"device_id": 0})])
    binding = sess.io_binding()
    binding.bind_ortvalue_input(input_name, ort.OrtValue.ortvalue_from_numpy(make_input(shape, "float32", 0), "cuda", 0))
    for out in sess.get_outputs():
        binding.bind_output(out.name, "cuda", 0)

    def step() -> None:
        sess.run_with_iobinding(binding)
        binding.synchronize_outputs()

    return _timed(step, shape[0], seconds)


def edgebench_ips(cfg: RunConfig, artifact, samplers: list[str]) -> float:
    prepared = get_backend(cfg.backend).prepare(cfg, artifact, Artifacts())
    outcome = run_instances(cfg, prepared, samplers=[make_sampler(s, 0.05) for s in samplers])
    if outcome.status != "ok":
        raise SystemExit(f"edgebench run failed: {outcome.reason}")
    return summarize(outcome.instances, cfg.batch, cfg.sub_windows).throughput_ips


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--frameworks", default="torch,ort")
    ap.add_argument("--samplers", default="nvml,host", help="comma list, or 'none'")
    args = ap.parse_args()
    samplers = [] if args.samplers == "none" else args.samplers.split(",")

    spec = load_model_spec(args.model)
    cache = Artifacts()
    fp32 = export_onnx(spec, cache)
    results = []
    for fw in args.frameworks.split(","):
        precision = "fp16" if fw == "torch" else "fp32"
        artifact = precision_artifact(spec, fp32, precision, cache, {"source": "synthetic", "samples": 8, "seed": 0})
        for batch in [int(b) for b in args.batches.split(",")]:
            cfg = RunConfig(model=spec.name, backend=fw, precision=precision, batch=batch, placements=("cuda:0",),
                            warmup_s=1.0, duration_s=args.seconds, max_duration_s=args.seconds, min_inferences=1,
                            accuracy_samples=0)
            bare, eb = [], []
            for r in range(args.repeats):
                for side in (("bare", "eb") if r % 2 == 0 else ("eb", "bare")):
                    if side == "eb":
                        eb.append(edgebench_ips(cfg, artifact, samplers))
                    elif fw == "torch":
                        bare.append(bare_torch(spec, batch, args.seconds))
                    else:
                        bare.append(bare_ort(artifact.onnx_path, spec.first_input.name, (batch, *spec.first_input.shape),
                                             args.seconds))
                print(f"  {fw} {precision} b{batch} pair {r + 1}: bare {bare[-1]:.1f}, edgebench {eb[-1]:.1f} img/s",
                      flush=True)
            ratios = [e / b for e, b in zip(eb, bare)]
            results.append((fw, precision, batch, statistics.median(bare), statistics.median(eb),
                            statistics.median(ratios), min(ratios), max(ratios)))
    print(f"\nsamplers: {args.samplers}")
    print(f"{'fw':<6}{'prec':<6}{'batch':>6}{'bare img/s':>12}{'edgebench':>12}{'ratio':>8}  range        goal")
    for fw, prec, batch, b, e, r, lo, hi in results:
        print(f"{fw:<6}{prec:<6}{batch:>6}{b:>12.1f}{e:>12.1f}{r:>8.3f}  {lo:.3f}..{hi:.3f}  "
              f">= 0.99 {'met' if r >= 0.99 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
