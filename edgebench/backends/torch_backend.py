"""PyTorch backend: the spec's torch module, eager, optionally torch.compile'd and/or replayed as a CUDA graph.

Precision is a runtime mode (the artifact's ONNX is recorded, never read): fp32 (TF32 off in cuBLAS and
cuDNN), tf32, fp16 (model.half()), bf16, amp (fp32 weights, autocast fp16 per op); tf32/fp16/amp need CUDA,
int8 runs through ort/trt as a QDQ ONNX. The TF32 switches are process-wide.
Options: channels_last (False); cuda_graph (False: one forward captured in the first feed(), replayed by
infer()); cudnn_benchmark (True); compile (False | True = "default" | "max-autotune-no-cudagraphs"):
"default" compiles in seconds and keeps CUDA graphs an explicit, labelled option (the modes that add hidden
graphs are refused). Compile and capture happen in the first feed(), outside warm-up and measurement.
Placements: "cpu" (torch threads = placement.threads), "cuda"/"gpu" (device 0), "cuda:N". Each CUDA session
owns a torch.cuda.Stream and infer() waits on that stream only, so "streams"-mode threads overlap.
supports() never initializes CUDA (Env.cuda_devices + torch/version.py, no torch import). Out of memory in
open/feed/infer -> BackendError("instance N: out of memory at batch B on cuda:K (...)").
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import importlib.util
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from edgebench.backends.base import Env, Placement, Prepared
from edgebench.backends.options import BackendOptions, must, validated
from edgebench.config.typed import Field, field_validator
from edgebench.errors import BackendError, EdgebenchError, exc_message
from edgebench.models.export import build_torch_model
from edgebench.models.model_artifact import ModelArtifact
from edgebench.models.spec import load_model_spec
from edgebench.models.torch_state import built_state, model_from_state, not_saved_why
from edgebench.placement import Placement as ParsedPlacement

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts

TORCH_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "amp")
CPU_PRECISIONS = ("fp32", "bf16")
CompileMode = Literal["default", "max-autotune-no-cudagraphs"]
GRAPH_WARMUP_CALLS = 3
MATH = {"fp32": "fp32 weights and activations; TF32 off (IEEE fp32 in cuBLAS/cuDNN)",
        "tf32": "fp32 tensors; TF32 tensor-core math allowed in cuBLAS/cuDNN",
        "fp16": "fp16 weights and activations (model.half())", "bf16": "bf16 weights and activations",
        "amp": "fp32 weights; torch.autocast(cuda, float16) picks fp16 per op"}
_BUILD_LOCK = threading.Lock()  # build_torch_model seeds the global RNG; compile/capture one at a time
_KEEP_BUILDS = False  # a warm worker (preload ran) keeps its last built model for its next rows
_KEPT: dict[tuple[Any, ...], Any] = {}


def _built_model(spec: Any, seed: int, state_file: str | None = None) -> Any:
    """The spec's model: its saved build's tensors when prepare() saved one (models/torch_state.py); else newly built,
    in a warm worker a deep copy of the one it built for an earlier row (same spec, weights and seed: the same
    tensors), the kept one never touched by a session."""
    if state_file is not None and (model := model_from_state(spec, state_file)) is not None:
        return model
    if not _KEEP_BUILDS:
        return build_torch_model(spec, seed)
    import copy

    key = (spec.name, repr(spec.weights), seed)
    if key not in _KEPT:
        _KEPT.clear()
        _KEPT[key] = build_torch_model(spec, seed)
    return copy.deepcopy(_KEPT[key])


def parse_device(label: str) -> tuple[str, int] | None:
    """('cpu', 0) or ('cuda', N) for a placement; None when torch has no such device (a DLA, an unknown text)."""
    where = ParsedPlacement(label)
    if where.kind == "cpu":
        return ("cpu", 0)
    return ("cuda", where.number) if where.is_gpu else None


class TorchOptions(BackendOptions):
    """The torch backend's options (an option set of the profile's sweep.option_sets)."""

    channels_last: bool = Field(default=False, json_schema_extra=must("true or false"))
    cuda_graph: bool = Field(default=False, json_schema_extra=must("true or false"))
    compile: bool | CompileMode = Field(default=False, json_schema_extra=must(
        f"false, true or one of {', '.join(get_args(CompileMode))}"))  # true = "default"
    cudnn_benchmark: bool = Field(default=True, json_schema_extra=must("true or false"))

    @field_validator("compile")
    @classmethod
    def _true_is_default(cls, value: bool | str) -> bool | str:
        return "default" if value is True else value


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validated torch options with defaults filled in; BackendError names the bad option."""
    return validated(TorchOptions, "torch", options).model_dump()


def torch_cuda_build() -> str | None:
    """The installed torch's CUDA version ('' for a CPU-only build), read from torch/version.py
    without importing torch; None when torch is absent or the file cannot be read."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        text = (Path(list(spec.submodule_search_locations)[0]) / "version.py").read_text()
    except OSError:
        return None
    m = re.search(r"^cuda(?:\s*:[^=]*)?\s*=\s*(.+)$", text, re.MULTILINE)
    value = m.group(1).strip() if m else None
    return None if value is None else "" if value == "None" else value.strip("'\"")


class TorchBackend:
    name = "torch"
    framework_modules = ("torch", "torchvision")  # the framework server imports these (no CUDA context is made)

    @staticmethod
    def preload(device: str) -> None:
        """A warm worker's start (runner/warm_pool.py): import torch (and torchvision, which the built-in models
        use) and initialise CUDA for a GPU placement, once per process instead of once per row; and keep the built
        model on the CPU, so its next rows copy it (~0.1 s) instead of building it again (seconds: random init and
        BatchNorm re-estimation). A warm worker's rss holds that copy (the model's fp32 size)."""
        global _KEEP_BUILDS
        _KEEP_BUILDS = True
        import torch

        with contextlib.suppress(ImportError):
            import torchvision  # noqa: F401
        if ParsedPlacement(device).is_gpu and torch.cuda.is_available():
            torch.cuda.init()

    def supports(self, cfg: RunConfig, env: Env) -> str | None:
        if importlib.util.find_spec("torch") is None:
            return "torch is not installed; pip install 'edgebench[export]'"
        if cfg.precision == "int8":
            return "int8 runs through the ort/trt backends (QDQ ONNX)"
        if cfg.precision not in TORCH_PRECISIONS:
            return f"torch runs {', '.join(TORCH_PRECISIONS)}; not {cfg.precision}"
        opts = dict(cfg.options)
        for label in sorted(set(cfg.placements)):
            device = parse_device(label)
            if device is None:
                return f"placement {label!r} has no torch device (cpu, cuda, gpu or cuda:N; DLA needs the trt backend)"
            if device[0] == "cpu":
                if cfg.precision not in CPU_PRECISIONS:
                    return f"torch {cfg.precision} needs a CUDA GPU (tensor-core math); on cpu torch runs fp32 and bf16"
                if opts.get("cuda_graph"):
                    return "option cuda_graph needs a CUDA placement"
                continue
            if torch_cuda_build() == "":
                return "the installed torch is a CPU-only build; install a CUDA build of torch"
            if env.cuda_devices == 0:
                return f"placement {label!r} needs a CUDA GPU; none found on this machine"
            if device[1] >= env.cuda_devices:
                return f"placement {label!r}: this machine has {env.cuda_devices} CUDA device(s)"
        return None

    def prepare(self, cfg: RunConfig, model: ModelArtifact, cache: Artifacts) -> Prepared:
        opts = check_options(dict(cfg.options))
        try:
            spec = load_model_spec(model.model)
        except EdgebenchError as exc:
            raise BackendError(f"torch backend needs a model spec for {model.model!r}: {exc}") from None
        if spec.source not in ("torchvision", "builtin"):
            raise BackendError(f"torch backend: model {model.model!r} is source {spec.source}, it has no torch module")
        if opts["channels_last"] and not any(len(d.shape) == 3 and d.dtype.startswith("float")
                                             for d in model.inputs):
            raise BackendError(f"torch backend: channels_last needs an NCHW input; {model.model} has per-sample shape "
                               f"{list(model.first_input.shape)}")
        seed = model.sidecar.get("seed", 0)  # the seed the ONNX was exported with: same weights as the ONNX
        seed = seed if type(seed) is int else 0
        provider = "torch-" + ("compile" if opts["compile"] else "eager") + ("+cudagraph" if opts["cuda_graph"] else "")
        # the sweep's weights (a --weights override included) when the artifact names them
        weights = {"weights": model.sidecar["weights_spec"]} if "weights_spec" in model.sidecar else {}
        built, state_note = _built_state(dataclasses.replace(spec, **weights), cache, seed)
        return Prepared.for_artifact(
            self.name, cfg, model, precision=cfg.precision,
            options={**opts, "model_spec": spec.name, "weights_seed": seed, **weights, **built},
            info={"provider": provider, "math": MATH[cfg.precision], "weights_seed": seed, "options": opts,
                  "torch_state": state_note})

    def open(self, prepared: Prepared, placement: Placement) -> TorchSession:
        return TorchSession(prepared, placement)


def _built_state(spec: Any, cache: Artifacts | None, seed: int) -> tuple[dict[str, str], str]:
    """({"state_file": path} of the spec's built model in the cache, or {} when it cannot be saved; what happened,
    for the row): the workers then load its tensors instead of each building the model (models/torch_state.py)."""
    if cache is None:  # no artifact cache (a session opened by hand)
        return {}, "built in each worker (no artifact cache)"
    if (why := not_saved_why(spec)) is not None:
        return {}, f"built in each worker: {why}"
    try:
        artifact = built_state(spec, cache, seed)
    except Exception as exc:  # noqa: BLE001 - the build's process re-raises what it met (torch raises many kinds);
        # the workers build it as before, and their own build says what is wrong, if anything; but a full disk stops
        # the sweep (pipeline/disk_full.py)
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        return {}, f"built in each worker: the saved build failed ({exc_message(exc, first_line=True)})"
    return {"state_file": str(artifact.path)}, ("workers load the saved build (loaded from the cache)" if artifact.reused
                                                 else "workers load the saved build (built once and saved to the cache)")


def _oom_guard(method: Callable[..., Any]) -> Callable[..., Any]:
    """Out of memory inside a session method -> BackendError naming instance, batch and device."""

    @functools.wraps(method)
    def guarded(self: TorchSession, *args: Any) -> Any:
        try:
            return method(self, *args)
        except Exception as exc:
            text = " ".join(str(exc).split())
            import torch

            if isinstance(exc, torch.cuda.OutOfMemoryError) or (
                    isinstance(exc, RuntimeError) and ("out of memory" in text or "ALLOC_FAILED" in text)):
                raise BackendError(f"{self._where}: out of memory at batch {self._batch} on {self._label} "
                                   f"({text[:200]})") from None
            raise

    return guarded


class TorchSession:
    @_oom_guard
    def __init__(self, prepared: Prepared, placement: Placement) -> None:
        import torch


        self._where, self._batch, self._label = f"instance {placement.instance}", prepared.batch, placement.device
        device = parse_device(placement.device)
        if device is None:
            raise BackendError(f"{self._where}: no torch device for placement {placement.device!r}")
        given = {k: v for k, v in prepared.options.items() if k in TorchOptions.model_fields}  # prepare() adds more
        opts = check_options(given)
        self._inputs = prepared.inputs  # several named inputs: forward(*inputs) in this order
        self._channels_last, self._use_graph = bool(opts["channels_last"]), bool(opts["cuda_graph"])
        self._compiled, self._autocast = bool(opts["compile"]), prepared.precision == "amp"
        self._dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prepared.precision, torch.float32)
        self._stream: Any = None
        self._stream_owner = 0
        self._graph: Any = None  # torch.cuda.CUDAGraph once captured
        self._xs: Any = None  # the fed input tensors (the graph's static buffers once captured)
        self._y: Any = None
        if device[0] == "cuda":
            seen = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if device[1] >= seen:
                raise BackendError(f"{self._where}: placement {placement.device!r} but torch sees {seen} CUDA device(s)")
            self.device, self._label = torch.device("cuda", device[1]), f"cuda:{device[1]}"
        else:
            self.device = torch.device("cpu")
            torch.set_num_threads(max(1, placement.threads))
        tf32 = prepared.precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = bool(opts["cudnn_benchmark"])
        spec = load_model_spec(str(prepared.options["model_spec"]))
        if "weights" in prepared.options:
            spec = dataclasses.replace(spec, weights=prepared.options["weights"])
        self._output_names = spec.output_names
        with _BUILD_LOCK:
            model = _built_model(spec, int(prepared.options.get("weights_seed", 0)), prepared.options.get("state_file"))
        model = model.requires_grad_(False).to(self.device, dtype=self._dtype)
        if self._channels_last:
            model = model.to(memory_format=torch.channels_last)
        self._model = torch.compile(model, mode=str(opts["compile"])) if self._compiled else model
        if self.device.type == "cuda":
            self._stream = torch.cuda.Stream(device=self.device)
            torch.cuda.synchronize(self.device)

    @property
    def _x(self) -> Any:
        """The first input's tensor on the device (None before feed())."""
        return self._xs[0] if self._xs else None

    # ------------------------------------------------------------------ Session

    @_oom_guard
    def feed(self, inputs: dict[str, np.ndarray]) -> None:
        import numpy as np
        import torch

        missing = [d.name for d in self._inputs if d.name not in inputs]
        if missing:
            raise BackendError(f"{self._where}: feed() needs input{'s' if len(missing) > 1 else ''} "
                               f"{', '.join(repr(m) for m in missing)}, got {sorted(inputs)}")
        arrs = [np.ascontiguousarray(inputs[d.name]) for d in self._inputs]
        if self._graph is not None and [a.shape for a in arrs] != [tuple(t.shape) for t in self._xs]:
            raise BackendError(f"{self._where}: CUDA graph was captured for shapes {[tuple(t.shape) for t in self._xs]}, "
                               f"got {[a.shape for a in arrs]}")
        self._own_stream()
        xs = []
        for arr in arrs:  # float inputs take the precision's dtype; token ids and masks keep theirs
            x = torch.from_numpy(arr).to(self.device, dtype=self._dtype if arr.dtype.kind == "f" else None)
            if self._channels_last and x.dim() == 4 and arr.dtype.kind == "f":
                x = x.contiguous(memory_format=torch.channels_last)
            xs.append(x)
        first = self._xs is None
        if self._graph is not None:
            for static, x in zip(self._xs, xs, strict=True):
                static.copy_(x)  # the captured graph reads these static buffers
        else:
            self._xs = xs
        if first and (self._compiled or self._use_graph):
            with _BUILD_LOCK:  # one compile / capture at a time in streams mode
                self._y = self._forward(self._xs)  # compilation happens here, not in warm-up
                if self._use_graph and self._stream is not None:
                    self._capture()
        if self._stream is not None:
            self._stream.synchronize()

    @_oom_guard
    def infer(self) -> None:
        if self._stream is not None and threading.get_ident() != self._stream_owner:
            self._own_stream()
        if self._graph is not None:
            self._graph.replay()
        else:
            self._y = self._forward(self._xs)
        if self._stream is not None:
            self._stream.synchronize()

    def outputs(self) -> dict[str, np.ndarray]:
        import torch

        if self._xs is None:
            raise BackendError(f"{self._where}: outputs() before feed()")
        if self._y is None:
            self.infer()
        y = self._y
        ys = list(y) if isinstance(y, (tuple, list)) else list(y.values()) if isinstance(y, dict) else [y]
        with torch.inference_mode():  # every output, named as the spec (and the ONNX export) names them
            return {name: t.detach().to("cpu", dtype=torch.float32 if t.is_floating_point() else None).numpy().copy()
                    for name, t in zip(self._output_names, ys, strict=False)}

    def close(self) -> None:
        if self._stream is not None:
            self._stream.synchronize()
        self._graph = self._xs = self._y = self._model = None
        if self._compiled:  # a warm worker's next row compiles its own batch from scratch, as a fresh process does;
            import torch  # with dynamo's cache kept it would mark the batch dynamic and run a generic graph

            torch._dynamo.reset()
        if self.device.type == "cuda":  # a warm worker's next row starts with an empty cache, like a fresh process
            import gc

            import torch

            gc.collect()
            torch.cuda.empty_cache()

    # ------------------------------------------------------------------ internals

    def _forward(self, xs: list[Any]) -> Any:
        import torch

        with torch.inference_mode():
            if self._autocast:
                with torch.autocast("cuda", dtype=torch.float16, cache_enabled=False):
                    return self._model(*xs)
            return self._model(*xs)

    def _capture(self) -> None:
        """Capture one forward on this session's stream into a CUDA graph (after warm-up calls)."""
        import torch

        for _ in range(GRAPH_WARMUP_CALLS):
            self._forward(self._xs)
        self._stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=self._stream, capture_error_mode="thread_local"):
            self._y = self._forward(self._xs)
        self._graph = graph

    def _own_stream(self) -> None:
        """Make this session's stream (and device) current for the calling thread (streams are per thread)."""
        import torch

        if self._stream is not None:
            torch.cuda.set_device(self.device)
            torch.cuda.set_stream(self._stream)
            self._stream_owner = threading.get_ident()
