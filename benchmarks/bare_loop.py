"""An independent bare inference loop: no edgebench import, the framework called the way a user's own loop would.

    python benchmarks/bare_loop.py --framework ort --onnx model.onnx --batch 1 --threads 1 --duration-s 5
    python benchmarks/bare_loop.py --framework torch --model resnet50 --batch 64 --device cuda:0 --precision fp16

--threads N sets intra-op threads and the OpenMP/BLAS thread variables, as a user capping threads would; --threads 0
leaves both at the framework's default (what a plain InferenceSession / torch gets).
The loop uses the settings edgebench uses by default (issue 27: compare equal settings, not a setting), so a ratio
measures the harness:
- ONNX Runtime: an InferenceSession with edgebench's session options (intra-op threads as given, inter-op 1,
  sequential execution, ORT_ENABLE_ALL; backends/ort.py); CPU: sess.run; CUDA: IOBinding with the inputs on the GPU,
  run_with_iobinding + synchronize_outputs.
- torch: the torchvision architecture with random weights, eval, requires_grad off, cudnn.benchmark on (edgebench's
  torch option cudnn_benchmark: true), TF32 only for precision tf32, the model under inference_mode on a CUDA stream
  of its own that each step waits on (backends/torch_backend.py), not a device-wide synchronize.
Prints one JSON line: throughput_ips (samples/s), inferences, elapsed_s, after warm-up; steady_ips: the median rate
over ~1 ms intervals, a diagnostic robust to preemption by other processes (see steady_ips()); and settings: what the
loop set (self_audit.py writes them next to the ratio). Used by benchmarks/self_audit.py as the "B" side of its
interleaved pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import time

MARK_S = 0.001  # steady_ips: the timed loop notes (inferences, time) this often
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                   "VECLIB_MAXIMUM_THREADS")


SETTINGS: dict = {}  # what the loop set, printed with its result


def ort_step(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    import numpy as np
    import onnxruntime as ort

    so = ort.SessionOptions()
    if args.threads > 0:
        so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    SETTINGS.update({"intra_op_num_threads": args.threads if args.threads > 0 else "default (0)",
                     "inter_op_num_threads": 1, "execution_mode": "ORT_SEQUENTIAL",
                     "graph_optimization_level": "ORT_ENABLE_ALL", "onnxruntime": ort.__version__})
    cuda = args.device.startswith("cuda")
    device_id = int(args.device.split(":")[1]) if ":" in args.device else 0
    providers = ([("CUDAExecutionProvider", {"device_id": device_id, "use_tf32": int(args.precision == "tf32")}),
                  "CPUExecutionProvider"] if cuda else ["CPUExecutionProvider"])
    sess = ort.InferenceSession(args.onnx, sess_options=so, providers=providers)
    SETTINGS["providers"] = sess.get_providers()
    SETTINGS["io"] = "io_binding on the GPU, synchronize_outputs" if cuda else "sess.run(names, feeds)"
    rng = np.random.default_rng(0)
    feeds = {}
    for inp in sess.get_inputs():
        shape = [args.batch if i == 0 else (d if isinstance(d, int) else 1) for i, d in enumerate(inp.shape)]
        dtype = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(int64)": np.int64,
                 "tensor(int32)": np.int32, "tensor(bool)": np.bool_}[inp.type]
        feeds[inp.name] = (rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                           else np.ones(shape, dtype=dtype))
    names = [o.name for o in sess.get_outputs()]
    if not cuda:
        return lambda: sess.run(names, feeds)
    binding = sess.io_binding()
    for name, arr in feeds.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(arr, "cuda", device_id))
    for name in names:
        binding.bind_output(name, "cuda", device_id)

    def step() -> None:
        sess.run_with_iobinding(binding)
        binding.synchronize_outputs()

    return step


def torch_step(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    import torch
    import torchvision

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision, torch.float32)
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.benchmark = True  # edgebench's torch option cudnn_benchmark defaults to true
    model = getattr(torchvision.models, args.model)(weights=None).eval().requires_grad_(False)
    size = args.image_size
    SETTINGS.update({"cudnn.benchmark": True, "tf32": args.precision == "tf32", "inference_mode": True,
                     "requires_grad": False, "dtype": str(dtype), "torch": torch.__version__})
    if args.device == "cpu":
        if args.threads > 0:
            torch.set_num_threads(args.threads)
        SETTINGS.update({"torch_threads": torch.get_num_threads(), "stream": "cpu"})
        model = model.to(dtype=dtype)
        x = torch.randn(args.batch, 3, size, size).to(dtype=dtype)

        def cpu_step() -> None:
            with torch.inference_mode():
                model(x)

        return cpu_step
    dev = torch.device(args.device)
    model = model.to(dev, dtype=dtype)
    # as edgebench's torch session: a stream of its own, made current, each step waits on that stream only
    stream = torch.cuda.Stream(device=dev)
    torch.cuda.set_stream(stream)
    x = torch.randn(args.batch, 3, size, size).to(dev, dtype=dtype)
    torch.cuda.synchronize(dev)
    SETTINGS["stream"] = "own torch.cuda.Stream (set current), stream.synchronize() per step"

    def cuda_step() -> None:
        with torch.inference_mode():
            model(x)
        stream.synchronize()

    return cuda_step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--framework", choices=["ort", "torch"], required=True)
    ap.add_argument("--onnx", help="ort: the ONNX file")
    ap.add_argument("--model", default="resnet50", help="torch: torchvision architecture")
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu or cuda:N")
    ap.add_argument("--precision", default="fp32", help="fp32, tf32, fp16 (torch: the model's dtype)")
    ap.add_argument("--threads", type=int, default=1, help="intra-op / torch threads; 0: the framework's default")
    ap.add_argument("--warmup-s", type=float, default=1.0)
    ap.add_argument("--duration-s", type=float, default=5.0)
    ap.add_argument("--profile-first", type=int, default=0, metavar="N",
                    help="'before' emulation: run N steps under torch.profiler (CUDA activity, as edgebench's in-process "
                         "kernel profile did before issue 19) before the warm-up; CUPTI stays attached afterwards")
    args = ap.parse_args()
    # --threads N caps the math libraries too, before any framework is imported (with ORT's intra-op threads at 1
    # and OpenMP uncapped, ORT CPU ran tiny_cnn at 0.56x on 2 busy cores): what a user limiting threads sets
    if args.threads > 0:
        os.environ.update({name: str(args.threads) for name in THREAD_ENV_VARS})
    SETTINGS["thread_env"] = {name: os.environ[name] for name in THREAD_ENV_VARS if name in os.environ}
    step = ort_step(args) if args.framework == "ort" else torch_step(args)
    if args.profile_first > 0:
        import torch
        from torch.profiler import ProfilerActivity, profile

        step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]):
            for _ in range(args.profile_first):
                step()
            torch.cuda.synchronize()
    now = time.perf_counter
    t_end = now() + args.warmup_s
    step()
    while now() < t_end:
        step()
    n = 0
    t0 = now()
    t_end = t0 + args.duration_s
    # (inferences, time) about every MARK_S: the loop compares the clock with the next mark instead of the end,
    # so recording them adds nothing per inference; steady_ips (their median rate) is robust to preemption
    marks = [(0, t0)]
    t_next = t0 + MARK_S
    while True:
        step()
        n += 1
        t = now()
        if t >= t_next:
            marks.append((n, t))
            if t >= t_end:
                break
            t_next = t + MARK_S
    print(json.dumps({"throughput_ips": n * args.batch / (t - t0), "inferences": n, "elapsed_s": t - t0,
                      "steady_ips": steady_ips(marks, args.batch), "settings": SETTINGS}))


def steady_ips(marks: list[tuple[int, float]], batch: int) -> float:
    """Median rate (samples/s) over the intervals between consecutive (inferences, time_s) marks: what the loop
    runs at when nothing preempts it (a preempted interval is slow, the median ignores it). Both sides of the
    self-audit compute it with this function (edgebench's from its per-inference end times)."""
    rates = sorted((n1 - n0) * batch / (t1 - t0) for (n0, t0), (n1, t1) in zip(marks, marks[1:]) if t1 > t0)
    if not rates:
        return 0.0
    mid = len(rates) // 2
    return rates[mid] if len(rates) % 2 else (rates[mid - 1] + rates[mid]) / 2


def marks_from_ends(ends_s: list[float], mark_s: float) -> list[tuple[int, float]]:
    """The marks bare_loop's timed loop records, rebuilt from per-inference end times (seconds, ascending),
    the first start taken as the end of inference 0."""
    marks = [(0, ends_s[0])] if ends_s else []
    t_next = ends_s[0] + mark_s if ends_s else 0.0
    for i, t in enumerate(ends_s[1:], start=1):
        if t >= t_next:
            marks.append((i, t))
            t_next = t + mark_s
    return marks


if __name__ == "__main__":
    main()
