"""Where a CPU self-audit's per-inference difference goes: edgebench's call path vs the bare loop's, in one process.

Every variant runs in this one process on one ONNX Runtime CPU model (1 intra-op thread, OpenMP/BLAS at 1, as both
sides of benchmarks/self_audit.py run it), in short slices, shuffled in every round, so drift and neighbours hit all
variants alike. Per slice: wall time and this thread's CPU time per inference (CPU time does not count the time other
processes hold the core, so it stays readable on a busy machine). Result per variant: the median of the per-round
paired differences to `bare`, in ns per inference, with a 95% bootstrap interval.

    python benchmarks/cpu_call_path_ab.py --model tiny_cnn --rounds 60 --slice-s 0.1 --json out.json

Variants (loop x infer call):
  bare                 benchmarks/bare_loop.py's step (sess.run on a closure) in bare_loop's timed loop
  edgebench            OrtSession.infer (edgebench/backends/ort.py) in worker.measure(), stopped by a shared
                       flag that another process sets, as the orchestrator does
  bare_step+measure    bare_loop's step in worker.measure(): the timed loop alone
  infer+bare_loop      OrtSession.infer in bare_loop's loop: the backend's call path alone
  eb_options+bare_loop a session with edgebench's SessionOptions (sequential, ORT_ENABLE_ALL) in bare_loop's loop
  measure_no_stores    worker.measure()'s loop without its two timestamp stores: what the stores cost

Why this one imports edgebench's internals (every other benchmark runs the CLI): it is a diagnostic of internal
costs, not evidence of fidelity. The evidence is benchmarks/self_audit.py (edgebench as shipped, through its CLI,
against bare_loop.py in another process); when that shows a per-inference difference, this script splits it into
its parts (the timed loop, the backend's infer call, the session options), which only calling those parts one by
one, in one process, can separate. It therefore follows the internals it names (worker.measure, OrtSession.infer):
when they change, this script changes with them; its numbers are never quoted as edgebench's overhead.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bare_loop  # noqa: E402
from stats import bootstrap_median_ci  # noqa: E402

from edgebench.backends.base import Placement, Prepared  # noqa: E402
from edgebench.backends.ort import OrtSession  # noqa: E402
from edgebench.models.inputs import InputDesc, make_input  # noqa: E402
from edgebench.runner import worker  # noqa: E402
from edgebench.runner.stamps import FileStamps, StampSink, chunk_capacity, whole_column  # noqa: E402


def _flag_setter(raw, conn) -> None:  # type: ignore[no-untyped-def]
    """Child: sleep the slice length it is sent, then set the stop flag (the orchestrator's role)."""
    while (duration := conn.recv()) is not None:
        time.sleep(duration)
        raw[0] = 1
        conn.send(1)


def measure_no_stores(infer, stop, counts, slot, parent_pid):  # type: ignore[no-untyped-def]
    """worker.measure()'s loop minus its two timestamp stores (a copy: what the stores cost)."""
    now = time.monotonic_ns
    getppid = os.getppid
    n = 0
    next_check = 0
    first = last = 0
    while True:
        t0 = now()
        infer()
        t1 = now()
        if n == 0:
            first = t0
        last = t1
        n += 1
        if t1 >= next_check:
            counts[slot] = n
            if stop[0] or (parent_pid is not None and getppid() != parent_pid):
                break
            next_check = t1 + worker.CHECK_INTERVAL_NS
    return n, (last - first) / 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny_cnn", help="a model edgebench has exported (its cached ONNX is used)")
    ap.add_argument("--onnx", help="the ONNX file (default: edgebench's cached export of --model)")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--slice-s", type=float, default=0.1)
    ap.add_argument("--json", help="write the record here")
    args = ap.parse_args()
    os.environ.update(worker.thread_env(1))
    onnx = args.onnx or _cached_onnx(args.model)
    import onnxruntime as ort

    bare_step = bare_loop.ort_step(argparse.Namespace(threads=1, device="cpu", precision="fp32", onnx=onnx, batch=1))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    eb_opts = ort.InferenceSession(onnx, sess_options=so, providers=["CPUExecutionProvider"])
    inp = eb_opts.get_inputs()[0]
    shape = tuple(d if isinstance(d, int) else 1 for d in inp.shape)
    names = [o.name for o in eb_opts.get_outputs()]
    feeds = {inp.name: make_input(shape, "float32", 0)}
    prepared = Prepared(backend="ort", model_path=onnx, inputs=(InputDesc(inp.name, shape=shape[1:]),),
                        batch=shape[0], precision="fp32")
    session = OrtSession(prepared, Placement(device="cpu", instance=0, threads=1))
    session.feed(feeds)

    ctx = mp.get_context("spawn")
    raw = ctx.RawArray("b", 1)
    stop = memoryview(raw).cast("B")
    counts = memoryview(bytearray(8)).cast("q")
    parent, child = ctx.Pipe()
    setter = ctx.Process(target=_flag_setter, args=(raw, child), daemon=True)
    setter.start()
    stamp_dir = tempfile.mkdtemp(prefix="cpu-call-path-")

    def in_bare_loop(step):  # type: ignore[no-untyped-def]
        def run(duration_s: float) -> tuple[int, float]:
            now = time.perf_counter  # bare_loop.py's timed loop
            n = 0
            t0 = now()
            t_end = t0 + duration_s
            while True:
                step()
                n += 1
                t = now()
                if t >= t_end:
                    break
            return n, t - t0
        return run

    def in_measure(step, loop=None):  # type: ignore[no-untyped-def]
        def run(duration_s: float) -> tuple[int, float]:
            raw[0] = 0
            parent.send(duration_s)
            if loop is None:  # a fresh sink per slice (allocated and touched before the slice starts)
                sink = StampSink(os.path.join(stamp_dir, "slice"), 2, chunk_capacity(40_000, args.slice_s))
                n = worker.measure(step, stop, counts, 0, sink, os.getppid())
                sink.close()
                starts = whole_column(FileStamps(sink.prefix, n), "start_ns")
                ends = whole_column(FileStamps(sink.prefix, n), "end_ns")
                got = n, (int(ends[-1]) - int(starts[0])) / 1e9
            else:
                got = loop(step, stop, counts, 0, os.getppid())
            parent.recv()
            return got
        return run

    variants = {
        "bare": in_bare_loop(bare_step),
        "edgebench": in_measure(session.infer),
        "bare_step+measure": in_measure(bare_step),
        "infer+bare_loop": in_bare_loop(session.infer),
        "eb_options+bare_loop": in_bare_loop(lambda: eb_opts.run(names, feeds)),
        "measure_no_stores": in_measure(bare_step, measure_no_stores),
    }
    for run in variants.values():
        run(0.3)  # warm every path
    wall: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    rng = random.Random(0)
    for _ in range(args.rounds):
        order = list(variants)
        rng.shuffle(order)
        for name in order:
            c0 = time.thread_time_ns()
            n, span_s = variants[name](args.slice_s)
            cpu[name].append((time.thread_time_ns() - c0) / n)
            wall[name].append(span_s * 1e9 / n)
    parent.send(None)
    setter.join(5)
    rec: dict = {"onnx": onnx, "rounds": args.rounds, "slice_s": args.slice_s, "variants": {}}
    print(f"{Path(onnx).stem}: {args.rounds} rounds of {args.slice_s} s; ns per inference, paired difference to bare "
          f"(median, 95% CI)")
    print(f"{'variant':22s} {'cpu ns':>8s} {'cpu diff':>26s} {'wall ns':>8s} {'wall diff':>26s}")
    for name in variants:
        row = {"cpu_ns": statistics.median(cpu[name]), "wall_ns": statistics.median(wall[name])}
        cells = []
        for label, data in (("cpu", cpu), ("wall", wall)):
            diff = [x - b for x, b in zip(data[name], data["bare"], strict=True)]
            m, lo, hi = bootstrap_median_ci(diff, confidence=0.95)
            row[f"{label}_diff_ns"] = [m, lo, hi]
            cells.append(f"{m:+7.0f} [{lo:+7.0f}, {hi:+7.0f}]")
        rec["variants"][name] = row
        print(f"{name:22s} {row['cpu_ns']:8.0f} {cells[0]:>26s} {row['wall_ns']:8.0f} {cells[1]:>26s}")
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=1))
    return 0


def _cached_onnx(model: str) -> str:
    """The newest cached export of `model` (run `edgebench bench --models <model>` once first)."""
    from edgebench.models.artifacts import Artifacts

    found = sorted(Artifacts().root.glob(f"onnx/*/{model}.onnx"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise SystemExit(f"cpu_call_path_ab: no cached ONNX of {model}; run `edgebench bench --models {model}` once, "
                         "or pass --onnx")
    return str(found[-1])


if __name__ == "__main__":
    raise SystemExit(main())
