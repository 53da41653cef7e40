"""Harness overhead, measured so that drift cannot pass for it: edgebench's worker loop and a bare
framework loop in many short alternating slices, the median per-pair ratio with a bootstrap interval.

Two spawned processes live for the whole measurement, each loaded and warmed up once:
  edgebench  set up exactly like a runner instance (child_process.spawn: own process group, death with
             the parent; thread caps), the backend's Session, and worker.measure() itself, stopped by the
             shared stop flag the parent sets after slice_s (as the orchestrator does)
  bare       the framework called directly, the way a user's own timing loop would: torch `model(x)` +
             stream synchronize (CUDA) / `model(x)` (CPU); ONNX Runtime `run_with_iobinding` +
             synchronize_outputs (CUDA) / `sess.run` (CPU) with the same session options; null: nothing
The parent alternates them in ABBA order (pair i: bare then edgebench when i is even, else the other
way round), so a slow drift (clocks, temperature, neighbours) hits both sides alike; only one of the two
runs at any time, the other blocks on its pipe (messages: runner/messages.py). Each slice's throughput
is its own inferences over its own first-start..last-end span; a pair's ratio is edgebench / bare, the
result is the median ratio with a percentile-bootstrap confidence interval over pairs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from edgebench.backends.base import Placement
from edgebench.backends.registry import get_backend
from edgebench.models.export import build_torch_model
from edgebench.models.inputs import make_input
from edgebench.models.spec import load_model_spec
from edgebench.placement import Placement as ParsedPlacement
from edgebench.runner import child_process, worker
from edgebench.runner.messages import Exit, Message, RunSlice, SideError, SideReady, SliceDone, SliceStarted
from edgebench.telemetry import registry

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.backends.base import Prepared
    from edgebench.config.run_config import RunConfig

FRAMEWORKS = ("torch", "ort", "null")


@dataclass
class Slice:
    pair: int
    side: str  # "bare" or "edgebench"
    inferences: int
    span_s: float
    batch: int

    @property
    def ips(self) -> float:
        return self.inferences * self.batch / self.span_s if self.span_s > 0 else 0.0


@dataclass
class Interleaved:
    slices: list[Slice] = field(default_factory=list)

    def side(self, name: str) -> list[Slice]:
        return [s for s in self.slices if s.side == name]

    @property
    def ratios(self) -> list[float]:
        bare = {s.pair: s.ips for s in self.side("bare")}
        return [s.ips / bare[s.pair] for s in self.side("edgebench") if bare.get(s.pair)]


def bootstrap_median_ci(values: Sequence[float], confidence: float = 0.95, resamples: int = 10_000,
                        seed: int = 0) -> tuple[float, float, float]:
    """(median, low, high): the sample median and a percentile-bootstrap interval for it."""
    import numpy as np

    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("no values to bootstrap")
    rng = np.random.default_rng(seed)
    medians = np.median(data[rng.integers(0, data.size, size=(resamples, data.size))], axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(medians, [tail, 100.0 - tail])
    return float(np.median(data)), float(low), float(high)


# ---------------------------------------------------------------------------------------- children


def bare_step(framework: str, prepared: Prepared, device: str, threads: int, seed: int) -> Callable[[], None]:
    """The framework's own call for one batch, built the way a user's bare loop would build it."""

    first = prepared.first_input
    x_np = make_input((prepared.batch, *first.shape), first.dtype, seed)
    feeds = prepared.feeds(prepared.batch, seed)  # every input (x_np is the first one's data)
    if framework == "null":
        return lambda: None
    if framework == "ort":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if device == "cpu":
            sess = ort.InferenceSession(prepared.model_path, sess_options=so, providers=["CPUExecutionProvider"])
            names = [o.name for o in sess.get_outputs()]
            return lambda: sess.run(names, feeds) and None
        device_id = ParsedPlacement(device).number
        sess = ort.InferenceSession(prepared.model_path, sess_options=so, providers=[
            ("CUDAExecutionProvider", {"device_id": device_id, "use_tf32": int(prepared.precision == "tf32")})])
        binding = sess.io_binding()
        for name, arr in feeds.items():
            binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(arr, "cuda", device_id))
        for out in sess.get_outputs():
            binding.bind_output(out.name, "cuda", device_id)

        def ort_cuda_step() -> None:
            sess.run_with_iobinding(binding)
            binding.synchronize_outputs()

        return ort_cuda_step
    if framework == "torch":
        import torch


        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prepared.precision, torch.float32)
        spec = load_model_spec(str(prepared.options["model_spec"]))
        model = build_torch_model(spec, int(prepared.options.get("weights_seed", 0))).eval()
        if device == "cpu":
            torch.set_num_threads(threads)
            model = model.to(dtype=dtype)
            x = torch.from_numpy(x_np).to(dtype=dtype)

            def torch_cpu_step() -> None:
                with torch.inference_mode():
                    model(x)

            return torch_cpu_step
        torch.backends.cudnn.benchmark = True
        dev = torch.device("cuda", ParsedPlacement(device).number)
        model = model.to(dev, dtype=dtype)
        x = torch.from_numpy(x_np).to(dev, dtype=dtype)
        stream = torch.cuda.Stream(device=dev)

        def torch_cuda_step() -> None:
            with torch.inference_mode(), torch.cuda.stream(stream):
                model(x)
            stream.synchronize()

        return torch_cuda_step
    raise ValueError(f"framework {framework!r} is not one of {', '.join(FRAMEWORKS)}")


def _bare_child(framework: str, prepared: Prepared, device: str, threads: int, seed: int, warmup_s: float,
                conn: Any) -> None:
    """A plain process: build the bare step, warm up, then one timed slice per RunSlice message."""
    try:
        step = bare_step(framework, prepared, device, threads, seed)
        worker.warm_up(step, warmup_s)
        conn.send(SideReady())
        now = time.monotonic_ns
        while True:
            msg = conn.recv()
            if not isinstance(msg, RunSlice):
                break
            n, t0 = 0, now()
            end = t0 + int(msg.seconds * 1e9)
            while True:
                step()
                n += 1
                t = now()
                if t >= end:
                    break
            conn.send(SliceDone(n, t - t0))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which stops the measurement
        conn.send(SideError(worker.describe(exc)))


def _edgebench_child(cfg: RunConfig, prepared: Prepared, conn: Any, stop_raw: Any, counts_raw: Any,
                     parent_pid: int) -> None:
    """A runner instance's process (its own process group) and loop: thread caps, Session, warm_up, then
    worker.measure per slice."""
    os.environ.update(worker.thread_env(cfg.threads_per_instance))
    try:
        session = get_backend(prepared.backend).open(
            prepared, Placement(device=cfg.placements[0], instance=0, threads=cfg.threads_per_instance))
        session.feed(prepared.feeds(prepared.batch, cfg.seed))  # every input; one input: make_input's data
        _, rate_ips = worker.warm_up(session.infer, cfg.warmup_s)
        conn.send(SideReady())
        stop = memoryview(stop_raw).cast("B")
        counts = memoryview(counts_raw).cast("B").cast("q")
        while True:
            msg = conn.recv()
            if not isinstance(msg, RunSlice):
                break
            buffers = worker.allocate_timestamps(worker.initial_capacity(rate_ips, float(msg.seconds)))
            conn.send(SliceStarted())
            starts, ends = worker.measure(session.infer, stop, counts, 0, 0, parent_pid, buffers)
            conn.send(SliceDone(len(starts), int(ends[-1] - starts[0])))
        session.close()
    except BaseException as exc:  # noqa: BLE001
        conn.send(SideError(worker.describe(exc)))


# ---------------------------------------------------------------------------------------- parent


QUIT_GRACE_S = 10.0  # a side gets this long to leave after Exit, then SIGKILL


class _Side:
    """One child and its pipe; `args(child_end)` builds the target's arguments around the child's pipe end.
    `own_group`: the child leads its own process group like a runner instance (the bare side is a plain process)."""

    def __init__(self, target: Callable[..., None], args: Callable[[Any], tuple[Any, ...]], env: dict[str, str],
                 own_group: bool) -> None:
        self.conn, child_conn = child_process.context().Pipe()
        try:  # env is set before the child starts, so it holds before the child imports a framework
            self.child = child_process.spawn(target, args(child_conn), env=env, own_group=own_group)
        finally:
            child_conn.close()

    def expect(self, kind: type[Message], timeout_s: float) -> Any:
        """The next message, which must be a `kind`; RuntimeError when it does not come in time, the side
        failed, or something else came."""
        if not self.conn.poll(timeout_s):
            raise RuntimeError(f"no {kind.__name__} message within {timeout_s:g} s (exit code {self.child.exitcode})")
        msg = self.conn.recv()
        if isinstance(msg, SideError):
            raise RuntimeError(msg.text)
        if not isinstance(msg, kind):
            raise RuntimeError(f"expected {kind.__name__}, got {msg!r}")
        return msg

    def close(self) -> None:
        try:
            self.conn.send(Exit())
        except OSError:
            pass
        child_process.stop([self.child], QUIT_GRACE_S, terminate=False)


def run_interleaved(cfg: RunConfig, prepared: Prepared, framework: str, *, pairs: int, slice_s: float,
                    samplers: Sequence[str] = (), sampler_interval_s: float = 0.1, load_timeout_s: float = 300.0,
                    on_pair: Callable[[int, float, float], None] | None = None) -> Interleaved:
    """`pairs` ABBA pairs of slice_s slices; the edgebench side runs with `samplers` watching it, as a row would."""
    ctx = child_process.context()
    stop_raw = ctx.RawArray("b", 1)
    counts_raw = ctx.RawArray("q", 1)
    device = cfg.placements[0]
    bare = eb = None
    result = Interleaved()
    try:
        bare = _Side(_bare_child,
                     lambda c: (framework, prepared, device, cfg.threads_per_instance, cfg.seed, cfg.warmup_s, c),
                     {}, own_group=False)
        bare.expect(SideReady, load_timeout_s)  # one at a time: loading never overlaps the other side's warm-up
        eb = _Side(_edgebench_child, lambda c: (cfg, prepared, c, stop_raw, counts_raw, os.getpid()),
                   worker.thread_env(cfg.threads_per_instance), own_group=True)
        eb.expect(SideReady, load_timeout_s)
        for pair in range(pairs):
            order = ("bare", "edgebench") if pair % 2 == 0 else ("edgebench", "bare")
            got: dict[str, float] = {}
            for side in order:
                if side == "bare":
                    bare.conn.send(RunSlice(slice_s))
                    done = bare.expect(SliceDone, slice_s + 60.0)
                else:
                    active = [registry.make_sampler(name, sampler_interval_s, placements=cfg.placements) for name in samplers]
                    for s in active:
                        s.watch_pids([eb.child.pid])
                        s.start()
                    stop_raw[0] = 0
                    eb.conn.send(RunSlice(slice_s))
                    eb.expect(SliceStarted, 60.0)
                    time.sleep(slice_s)
                    stop_raw[0] = 1
                    done = eb.expect(SliceDone, 60.0)
                    for s in active:
                        s.stop()
                result.slices.append(Slice(pair, side, int(done.inferences), done.span_ns / 1e9, cfg.batch))
                got[side] = result.slices[-1].ips
            if on_pair is not None:
                on_pair(pair, got["bare"], got["edgebench"])
    finally:
        for side_proc in (eb, bare):
            if side_proc is not None:
                side_proc.close()
    return result
