"""TensorRT backend (name "trt"): ONNX -> engine per (precision, batch, placement target), cached; sessions
run it through set_tensor_address + execute_async_v3 on their own CUDA stream (TensorRT 8.5+, so 8.6 and 10).

Decisions live in trt_logic.py (pure, tested on CPU); the engine cache in trt_engine_cache.py; device memory
in cuda_buffers.py (cuda-python first, torch as the fallback). The functions here only call TensorRT, and
are typed against the TensorRT 10.13 stubs (tools/typecheck.sh).

Options: gpu_fallback (False; DLA: layers DLA cannot run go to the GPU instead of failing the build),
int8_calibration ("explicit": the QDQ ONNX; "entropy": IInt8EntropyCalibrator2 on the recorded calibration
set, TensorRT 8.6/10 only; "auto", the default: explicit, but entropy on a DLA below TensorRT 10, which has no
explicit quantization on DLA), cuda_graph (False; GPU only: infer() replays one captured enqueue),
workspace_mib (1024: builder workspace limit).
Placements: gpu / cuda / cuda:0, dla0 / dla1 (dla = dla0). A config whose instances sit on different targets
(e.g. gpu + dla0) gets one engine per target; each instance opens the one for its placement.
Engines are built in the sweep's process (prepare), before any instance starts.

Size: the whole TensorRT-calling layer (build, calibrator, logger, session) kept in one file so that
tools/typecheck.sh type-checks every TensorRT call together; the decisions are elsewhere.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.backends import cuda_buffers
from edgebench.backends import trt_calibration as calibration
from edgebench.backends import trt_logic as logic
from edgebench.backends import trt_reports as reports
from edgebench.backends.base import Env, Placement, Prepared
from edgebench.backends.cuda_buffers import StagingBuffer
from edgebench.backends.trt_engine_cache import EngineCache, calibration_cache_path, timing_cache_path
from edgebench.backends.trt_profile import ProfileEntry, check_network_inputs
from edgebench.errors import BackendError
from edgebench.models.model_artifact import ModelArtifact

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import tensorrt

    from edgebench.backends.cuda_buffers import CudaRuntime, StagingBuffer
    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts

log = logging.getLogger("edgebench.trt")


class TrtBackend:
    name = "trt"

    @staticmethod
    def preload(device: str) -> None:
        """A warm worker's start (runner/warm_pool.py): import tensorrt once per process, not once per row."""
        import tensorrt  # noqa: F401

    def __init__(self, env: logic.TrtEnv | None = None) -> None:
        self._env = env

    @property
    def env(self) -> logic.TrtEnv:
        if self._env is None:
            self._env = logic.detect_env()
        return self._env

    def supports(self, cfg: RunConfig, env: Env) -> str | None:
        return logic.supports_reason(cfg, self.env, env.cuda_devices)

    def prepare(self, cfg: RunConfig, model: ModelArtifact, cache: Artifacts) -> Prepared:
        opts = logic.check_options(dict(cfg.options))
        engines: dict[str, str] = {}
        per_target: dict[str, dict[str, Any]] = {}
        runtime_name = ""
        for label in sorted(set(cfg.placements)):
            target = logic.parse_placement(label)
            if target is None:
                raise BackendError(f"trt backend: placement {label!r} is not a TensorRT target")
            if target.label in per_target:
                engines[label] = engines[next(k for k in engines if logic.parse_placement(k) == target)]
                continue
            plan = logic.build_plan(cfg, model, target, self.env, opts)
            path, facts, runtime_name = prepare_engine(plan, model, cache.root, str(self.env.trt_version),
                                                       board=self.env.jetson_model)
            engines[label] = str(path)
            per_target[target.label] = facts
        info = engine_row_info(per_target)
        info.update(provider=f"TensorRT {self.env.trt_version} ({runtime_name} buffers)",
                    onnx_sha256=model.sha256, engines=per_target, options=opts)
        return Prepared.for_artifact(self.name, cfg, model, precision=cfg.precision,
                                     options={**opts, "engines": engines}, info=info)

    def open(self, prepared: Prepared, placement: Placement) -> TrtSession:
        return TrtSession(prepared, placement)


FALLBACK_NAMES_MAX = 20  # layer names listed per DLA target in the row; the sidecar keeps them all


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def fallback_text(target: str, gpu_layers: list[str], dla_subgraphs: list[str] | None = None) -> str:
    """'dla0: 2 GPU layers [SOFTMAX: prob, ...]; 1 DLA subgraph' for a DLA engine.

    TensorRT's builder log lists the GPU side layer by layer ('[GpuLayer] TYPE: name', the type prefix kept
    here; REFORMAT layers are TensorRT's own copies at DLA/GPU boundaries, counted apart) but the DLA side as
    subgraphs ('[DlaLayer] {ForeignNode[first...last]}', one per DLA loadable, however many layers each holds)."""
    shown = ", ".join(gpu_layers[:FALLBACK_NAMES_MAX]) + (f", ... (+{len(gpu_layers) - FALLBACK_NAMES_MAX})"
                                                          if len(gpu_layers) > FALLBACK_NAMES_MAX else "")
    reformats = sum(1 for x in gpu_layers if reports.gpu_layer_type(x) == "REFORMAT")
    text = f"{target}: {_plural(len(gpu_layers), 'GPU layer')}"
    if reformats:
        text += f" ({reformats} of them REFORMAT)"
    if gpu_layers:
        text += f" [{shown}]"
    if dla_subgraphs is not None:
        text += f"; {_plural(len(dla_subgraphs), 'DLA subgraph')}"
    return text


def engine_row_info(per_target: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Row fields from the engines of one config: DLA fallback layers, build time, cache result, evidence."""
    fallbacks = [fallback_text(t, f["gpu_fallback_layers"], f.get("dla_layers")) for t, f in sorted(per_target.items())
                 if f.get("gpu_fallback_layers") is not None]
    builds = [f["build_s"] for f in per_target.values() if f.get("cache") == "built"]
    row = {
        "dla_fallback_layers": "; ".join(fallbacks) or None,
        "engine_build_s": round(sum(builds), 3) if builds else None,
        "engine_cache": "; ".join(f"{t}: {f['cache_reason']}" for t, f in sorted(per_target.items())),
        "tensor_core_evidence": " | ".join(f"{t} {f['evidence']['tensor_core_evidence']}"
                                           for t, f in sorted(per_target.items()) if f.get("evidence")) or None,
    }
    return {"row_fields": row}


def prepare_engine(plan: logic.BuildPlan, model: ModelArtifact, root: Path, version: str,
                   board: str | None = None) -> tuple[Path, dict[str, Any], str]:
    """The cached engine for `plan`, built when the cache has no valid one. Returns (path, facts, runtime).

    On a Jetson the board model joins the CUDA device name in the key: every Orin module (AGX, NX, Nano)
    reports the device "Orin", sm 8.7, yet their engines are tuned for different GPUs (SM counts, clocks)."""

    runtime = cuda_buffers.open_runtime()
    device_name, cc = runtime.device_identity()
    if board:
        device_name = f"{device_name} ({board})"
    key = logic.engine_key(plan, version, device_name, cc)
    engines = EngineCache(root)
    cached = engines.lookup(key)
    if cached.decision.load:
        facts = {**cached.sidecar.get("facts", {}), "cache": "hit", "cache_reason": cached.decision.reason}
        return cached.path, facts, runtime.name
    log.info("%s %s: %s", plan.target.label, plan.precision, cached.decision.reason)
    calibrator, staging = None, None
    try:
        if plan.strategy.calibrate:
            calibrator, staging = make_calibrator(plan, model, root, runtime)
        built = build_engine(plan, timing_cache_path(root, version, device_name, cc), calibrator)
    finally:
        if staging is not None:
            staging.close()  # the calibrator's device buffer and stream: TensorRT is done with them after the build
    layers = reports.parse_inspector_json(built["inspector_json"])
    facts = {
        "strategy": plan.strategy.name, "set_flags": list(plan.set_flags),
        "clear_flags": list(plan.strategy.clear_flags), "notes": list(plan.notes),
        "build_s": built["build_s"], "evidence": reports.engine_evidence(layers),
        **reports.placement_fields(plan, reports.parse_build_log(built["log"])),
    }
    stored = engines.store(key, built["engine"], {"facts": facts, "onnx_path": plan.onnx_path,
                                                  "inspector": built["inspector_json"]})
    return stored.path, {**facts, "cache": "built", "cache_reason": cached.decision.reason}, runtime.name


# --------------------------------------------------------------------------- the calls into TensorRT

def require_tensorrt() -> None:
    """BackendError with the install hint unless a usable `tensorrt` imports (type stubs alone do not count)."""
    try:
        import tensorrt as trt
    except ImportError as exc:
        raise BackendError(f"{logic.INSTALL_HINT} ({exc.msg})") from None
    if not hasattr(trt, "Builder"):
        raise BackendError(logic.INSTALL_HINT)


_LOGGER: tensorrt.ILogger | None = None  # the process's one TensorRT logger (trt_logger())
_LOGGER_LOCK = threading.Lock()
_CAPTURE_LOCK = threading.Lock()  # one build log captured at a time


def trt_logger() -> tensorrt.ILogger:
    """The one TensorRT logger of this process, made on first use.

    TensorRT keeps a single logger per process: a Builder or Runtime created later with another logger gets
    "The logger passed into createInfer... differs from one already provided ... will return the existing
    value", and its messages keep going to the first one. So every builder and runtime here shares this one;
    a build collects its log through capture_build_log(). Messages of INFO and up go to the active capture
    (the DLA/GPU layer listing is INFO); VERBOSE is dropped (a subclassed ILogger gets every severity, and a
    verbose build log runs to many MB). Warnings and errors also go to our log."""
    global _LOGGER
    with _LOGGER_LOCK:
        if _LOGGER is None:
            _LOGGER = _make_logger()
        return _LOGGER


def _make_logger() -> tensorrt.ILogger:
    import tensorrt as trt

    class Capture(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.sink: list[str] | None = None

        def log(self, severity: tensorrt.ILogger.Severity, msg: str) -> None:
            if severity == trt.ILogger.Severity.VERBOSE:
                return
            sink = self.sink
            if sink is not None:
                sink.append(msg)
            if severity in (trt.ILogger.Severity.INTERNAL_ERROR, trt.ILogger.Severity.ERROR,
                            trt.ILogger.Severity.WARNING):
                log.warning("TensorRT: %s", msg)

    return Capture()


@contextlib.contextmanager
def capture_build_log() -> Iterator[list[str]]:
    """The lines the shared TensorRT logger receives while the block runs (one capture at a time)."""
    logger = trt_logger()
    lines: list[str] = []
    with _CAPTURE_LOCK:
        logger.sink = lines  # type: ignore[attr-defined]
        try:
            yield lines
        finally:
            logger.sink = None  # type: ignore[attr-defined]


def build_engine(plan: logic.BuildPlan, timing_cache: Path,
                 calibrator: tensorrt.IInt8Calibrator | None) -> dict[str, Any]:
    """Parse the ONNX, configure the builder from `plan`, build; returns the engine bytes, inspector JSON,
    captured log lines and build seconds. The timing cache is read before and written after the build."""
    require_tensorrt()
    with capture_build_log() as lines:
        return _build_engine(plan, timing_cache, calibrator, lines)


def _build_engine(plan: logic.BuildPlan, timing_cache: Path, calibrator: tensorrt.IInt8Calibrator | None,
                  lines: list[str]) -> dict[str, Any]:
    import tensorrt as trt

    logger = trt_logger()
    builder = trt.Builder(logger)
    flags = 0
    if plan.strategy.strongly_typed:
        flags |= 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    if logic.parse_version(trt.__version__)[:1] < (10,):
        flags |= 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(plan.onnx_path):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise BackendError(f"{plan.onnx_path}: TensorRT's ONNX parser failed: {errors}")
    inputs = [network.get_input(i).name for i in range(network.num_inputs)]
    if plan.input_name not in inputs:
        raise BackendError(f"{plan.onnx_path}: no input {plan.input_name!r} (inputs: {', '.join(inputs)})")
    entries = [ProfileEntry(*e) for e in plan.profile] or [
        ProfileEntry(plan.input_name, plan.min_shape, plan.opt_shape, plan.max_shape)]
    shapes = {}
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        dims = tensor.shape
        shapes[tensor.name] = tuple(dims[k] for k in range(len(dims)))
    dynamic = check_network_inputs(entries, shapes)  # every dynamic input has min/opt/max in the plan

    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, plan.workspace_bytes)
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
    for name in plan.set_flags:
        config.set_flag(getattr(trt.BuilderFlag, name))
    for name in plan.strategy.clear_flags:
        config.clear_flag(getattr(trt.BuilderFlag, name))
    if plan.target.device_type == "dla":
        if plan.target.dla_core is None or plan.target.dla_core >= builder.num_DLA_cores:
            raise BackendError(f"{plan.target.label}: TensorRT sees {builder.num_DLA_cores} DLA core(s)")
        config.default_device_type = trt.DeviceType.DLA
        config.DLA_core = plan.target.dla_core
    profile = builder.create_optimization_profile()
    for entry in dynamic:  # every dynamic input, from the shape plan (trt_profile)
        profile.set_shape(entry.name, trt.Dims(list(entry.min)), trt.Dims(list(entry.opt)), trt.Dims(list(entry.max)))
    config.add_optimization_profile(profile)
    if calibrator is not None and plan.calibration_batch is not None:
        calib_profile = builder.create_optimization_profile()
        shape = (plan.calibration_batch, *plan.opt_shape[1:])
        calib_profile.set_shape(plan.input_name, trt.Dims(list(shape)), trt.Dims(list(shape)), trt.Dims(list(shape)))
        config.set_calibration_profile(calib_profile)
        config.int8_calibrator = calibrator
    blob = timing_cache.read_bytes() if timing_cache.exists() else b""
    config.set_timing_cache(config.create_timing_cache(blob), False)

    t0 = time.perf_counter()
    serialized = builder.build_serialized_network(network, config)
    build_s = time.perf_counter() - t0
    if serialized is None:
        raise BackendError(f"TensorRT build failed for {plan.target.label} {plan.precision}: "
                           + " / ".join(lines[-3:]))
    engine_bytes = bytes(memoryview(serialized))
    _write_bytes(timing_cache, bytes(memoryview(config.get_timing_cache().serialize())))

    runtime = trt.Runtime(logger)
    if plan.target.dla_core is not None:
        runtime.DLA_core = plan.target.dla_core
    engine = runtime.deserialize_cuda_engine(engine_bytes)
    inspector = engine.create_engine_inspector()
    info = inspector.get_engine_information(trt.LayerInformationFormat.JSON)
    return {"engine": engine_bytes, "inspector_json": info, "log": lines, "build_s": round(build_s, 3)}


def make_calibrator(plan: logic.BuildPlan, model: ModelArtifact, root: Path,
                    cuda: CudaRuntime) -> tuple[tensorrt.IInt8EntropyCalibrator2, StagingBuffer]:
    """IInt8EntropyCalibrator2 over the recorded calibration set, its table cached per (model, TRT, batch),
    and the device buffer + stream it uploads through (the caller closes them after the build)."""
    import tensorrt as trt


    record = model.sidecar.get("calibration") or {}
    data = calibration.recorded_calibration(record, model.first_input.shape)
    assert plan.calibration_batch is not None and plan.calibration_sha256 is not None
    cache = calibration_cache_path(root, plan.onnx_sha256, trt.__version__, plan.calibration_batch,
                                   plan.calibration_sha256)
    feed = calibration.CalibrationFeed(data, plan.calibration_batch, cache)
    staging = StagingBuffer(cuda, feed.batches[0].nbytes)

    class EntropyCalibrator(trt.IInt8EntropyCalibrator2):
        def __init__(self) -> None:
            trt.IInt8EntropyCalibrator2.__init__(self)

        def get_batch_size(self) -> int:
            return feed.batch

        def get_batch(self, names: list[str]) -> list[int]:
            batch = feed.next_batch()
            if batch is None:
                return []
            return [staging.upload(batch)]

        def read_calibration_cache(self) -> bytes | None:  # None = no cache (TensorRT's docstring)
            return feed.read_cache()

        def write_calibration_cache(self, cache: Any) -> None:
            feed.write_cache(bytes(memoryview(cache)))

    return EntropyCalibrator(), staging


def _write_bytes(path: Path, blob: bytes) -> None:
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(blob)
    os.replace(tmp, path)


class TrtSession:
    """One execution context + one CUDA stream + device buffers for every I/O tensor of one engine."""

    def __init__(self, prepared: Prepared, placement: Placement) -> None:
        require_tensorrt()
        import tensorrt as trt

        target = logic.parse_placement(placement.device)
        engine_path = prepared.options.get("engines", {}).get(placement.device)
        if target is None or engine_path is None:
            raise BackendError(f"instance {placement.instance}: no engine was prepared for {placement.device!r}")
        self.cuda = cuda_buffers.open_runtime()
        self.trt_runtime = trt.Runtime(trt_logger())
        if target.dla_core is not None:
            self.trt_runtime.DLA_core = target.dla_core
        self.engine = self.trt_runtime.deserialize_cuda_engine(Path(engine_path).read_bytes())
        if self.engine is None:
            raise BackendError(f"instance {placement.instance}: TensorRT could not deserialize {engine_path}")
        self.context = self.engine.create_execution_context()
        self.stream = self.cuda.stream_create()
        self.handle = self.cuda.stream_handle(self.stream)
        self.use_graph = bool(prepared.options.get("cuda_graph")) and target.device_type == "gpu"
        self.graph: Any = None
        self.buffers: dict[str, int] = {}
        self.host: dict[str, np.ndarray] = {}
        self.inputs: list[str] = []
        batch = prepared.batch
        self._bind({d.name: d.full_shape(batch) for d in prepared.inputs})

    def _bind(self, input_shapes: dict[str, tuple[int, ...]]) -> None:
        import numpy as np
        import tensorrt as trt

        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        self.inputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        for name in self.inputs:
            if name not in input_shapes:
                raise BackendError(f"engine input {name!r} is not in the shape plan ({', '.join(input_shapes)})")
            self.context.set_input_shape(name, tuple(input_shapes[name]))
        for name in names:
            dtype = np.dtype(reports.numpy_dtype(self.engine.get_tensor_dtype(name).name))
            dims = self.context.get_tensor_shape(name)
            shape = tuple(dims[i] for i in range(len(dims)))
            if any(d < 0 for d in shape):
                raise BackendError(f"tensor {name!r} has an unresolved shape {shape} after set_input_shape")
            self.host[name] = np.empty(shape, dtype=dtype)
            self.buffers[name] = self.cuda.malloc(self.host[name].nbytes)
            if not self.context.set_tensor_address(name, self.buffers[name]):
                raise BackendError(f"TensorRT rejected the device address of tensor {name!r}")

    def _enqueue(self) -> None:
        if not self.context.execute_async_v3(self.handle):
            raise BackendError("TensorRT execute_async_v3 failed")

    def feed(self, inputs: dict[str, np.ndarray]) -> None:
        for name in self.inputs:
            if name not in inputs:
                raise BackendError(f"no input {name!r} fed (got {', '.join(inputs)})")
            host = self.host[name]
            host[...] = inputs[name]
            self.cuda.htod_async(self.buffers[name], host, self.stream)
        self.cuda.synchronize(self.stream)
        if self.use_graph and self.graph is None:
            self._enqueue()  # TensorRT allocates its resources on the first enqueue, outside the capture
            self.cuda.synchronize(self.stream)
            self.graph = self.cuda.capture_graph(self.stream, self._enqueue)

    def infer(self) -> None:
        if self.graph is not None:
            self.cuda.launch_graph(self.graph, self.stream)
        else:
            self._enqueue()
        self.cuda.synchronize(self.stream)

    def outputs(self) -> dict[str, np.ndarray]:
        out = {}
        for name, ptr in self.buffers.items():
            if name in self.inputs:
                continue
            self.cuda.dtoh_async(self.host[name], ptr, self.stream)
            out[name] = self.host[name]
        self.cuda.synchronize(self.stream)
        return {k: v.copy() for k, v in out.items()}

    def close(self) -> None:
        if self.graph is not None:
            self.cuda.destroy_graph(self.graph)
            self.graph = None
        for ptr in self.buffers.values():
            self.cuda.free(ptr)
        self.buffers = {}
        self.cuda.stream_destroy(self.stream)
        del self.context, self.engine
