"""ONNX Runtime backend.

Placements map to execution providers: 'cpu' -> CPUExecutionProvider; 'cuda' / 'cuda:N' ->
CUDAExecutionProvider (device N) with inputs and outputs bound on the device through IOBinding,
so infer() measures the model, not host<->device copies. Precision comes from the artifact
(fp32 / fp16 / int8-QDQ ONNX), plus one math mode: the CUDA EP's `use_tf32` (ORT's default is ON, which
made "fp32" rows on an H200 spend ~45% of kernel time on tensor cores), so edgebench sets it off for every
precision except `tf32` (the fp32 file with TF32 convolutions/GEMMs allowed) — fp32 means strict fp32.

Option `ort_provider: tensorrt` runs the same placements through ORT's TensorRT execution provider
(CUDA EP registered behind it for the nodes TensorRT rejects; 'dla0'/'dla1' placements enable its DLA
core, fp16/int8 only: the EP turns DLA on only with one of them, and then always with GPU fallback). Option keys
are passed only where the running onnxruntime knows them (TRT_EP_OPTION_SINCE). onnxruntime-gpu lists TensorrtExecutionProvider even where TensorRT is absent (the provider loads
libnvinfer only when a session is created), so supports() also checks that libnvinfer can be loaded.
TensorRT engines are cached under <cache>/ort-trt/ (keyed by ORT itself on the model and GPU).

ORT's session warnings (nodes not assigned to the requested provider, an initializer no node uses, an output of
another shape than the model declares) are the row's where it has a probe (accuracy samples, the profiles' default,
or a kernel/layer profile): the probe process (runner/probe.py) opens the row's session inside
models/framework_log.framework_log(), where ORT (1.32+) hands them to a Python callback, and row.json keeps them as
`probe.framework_log` (an older ORT: the probe follows the stderr rule below). A measuring instance logs them only
where its stderr is already a file (`2> run.log`, the remote agent's launch log; an instance inherits the harness's
stderr): ORT's C++ logger writes to file descriptor 2 itself, and on a terminal or a pipe those warnings would flood
the console of every row, so there it logs errors only (session_log_severity); a warning ORT logs at every run never
reaches a terminal from inside a timed loop.
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, Any, Literal, get_args

from edgebench.backends import trt_logic  # module-qualified: tests stand in for the board probes
from edgebench.backends.base import Env, Placement, Prepared
from edgebench.backends.options import BackendOptions, validated
from edgebench.backends.ort_dla import core_mismatch, dla_core_check
from edgebench.config.typed import Field
from edgebench.errors import BackendError
from edgebench.models.framework_log import capturing
from edgebench.models.model_artifact import ModelArtifact
from edgebench.placement import Placement as ParsedPlacement

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts

ONNX_PRECISIONS = ("fp32", "fp16", "int8")
CUDA_MATH_PRECISIONS = ("tf32",)  # the fp32 file under a CUDA math mode
OrtProvider = Literal["cuda", "tensorrt"]
ORT_PROVIDERS: tuple[str, ...] = get_args(OrtProvider)  # values of the `ort_provider` option


class OrtOptions(BackendOptions):
    """The ort backend's one option: which execution provider runs GPU placements."""

    ort_provider: OrtProvider = Field(default="cuda", description="cuda: CUDA EP; tensorrt: ORT's TensorRT EP "
                                                                  "(CUDA EP behind it), which also reaches a DLA")
LIBNVINFER_NAMES = ("libnvinfer.so.10", "libnvinfer.so.8", "libnvinfer.so")


def libnvinfer_missing_reason(names: tuple[str, ...] = LIBNVINFER_NAMES) -> str | None:
    """None when TensorRT's runtime library loads in this process, else why not."""
    import ctypes

    errors = []
    for name in names:
        try:
            ctypes.CDLL(name)
            return None
        except OSError as exc:
            errors.append(str(exc).split(":")[-1].strip() or name)
    return (f"TensorrtExecutionProvider needs TensorRT's runtime library, which is not loadable here "
            f"(tried {', '.join(names)}: {errors[0]}); TensorRT comes with JetPack on a Jetson, "
            f"or NVIDIA's TensorRT packages on x86")


# The ORT release that introduced each TensorRT EP option edgebench passes. ORT's option parser rejects a key
# it does not know ("Unknown provider option" / "Invalid TensorRT EP option"), and onnxruntime's Python
# InferenceSession then falls back to the next providers, so one unknown key turns every `ort_provider: tensorrt`
# row into a CUDA EP session. Sources: microsoft/onnxruntime PRs #14767/#15113 (timing cache, merged
# March 2023 -> 1.15) and #17865 (trt_timing_cache_path, merged October 2023 -> 1.17; 1.16.0 shipped in
# September 2023). The other keys are older than the 1.10 wheels of JetPack 4.6.
TRT_EP_OPTION_SINCE: dict[str, tuple[int, int]] = {
    "device_id": (1, 10), "trt_fp16_enable": (1, 10), "trt_int8_enable": (1, 10), "trt_dla_enable": (1, 10),
    "trt_dla_core": (1, 10), "trt_engine_cache_enable": (1, 10), "trt_engine_cache_path": (1, 10),
    "trt_timing_cache_enable": (1, 15), "trt_timing_cache_path": (1, 17),
}
DLA_PRECISIONS = ("fp16", "int8")  # ORT's TensorRT EP enables DLA only when trt_fp16_enable or trt_int8_enable is on
EP_DLA_NOTE = ("ORT's TensorRT EP always sets GPU fallback with DLA (layers DLA cannot run go to the GPU, "
               "unreported)")


def ort_version_tuple(version: str | None) -> tuple[int, int]:
    """'1.16.3' -> (1, 16); unknown -> (0, 0)."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def trt_provider_options(device: str, precision: str, cache_dir: str,
                         ort_version: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """TensorrtExecutionProvider options for a placement and artifact precision; None for no GPU/DLA.

    Precision still comes from the artifact: fp16 ONNX enables the builder's FP16 flag (a weakly typed
    network would otherwise pick FP32 kernels), QDQ int8 enables INT8 (explicit quantization, no
    calibration table); fp32 enables neither, so fp32 stays strict. Keys this onnxruntime (`ort_version`;
    None = the newest) does not know are left out (TRT_EP_OPTION_SINCE).
    """
    where = ParsedPlacement(device)
    if where.is_dla:
        opts: dict[str, Any] = {"device_id": 0, "trt_dla_enable": True, "trt_dla_core": where.number}
    else:
        cuda = provider_for(device)
        if cuda is None or cuda[0] != "CUDAExecutionProvider":
            return None
        opts = {"device_id": cuda[1]["device_id"]}
    opts.update(trt_fp16_enable=precision == "fp16", trt_int8_enable=precision == "int8",
                trt_engine_cache_enable=True, trt_engine_cache_path=cache_dir,
                trt_timing_cache_enable=True, trt_timing_cache_path=cache_dir)
    if ort_version is not None:
        have = ort_version_tuple(ort_version)
        opts = {k: v for k, v in opts.items() if have >= TRT_EP_OPTION_SINCE[k]}
    return "TensorrtExecutionProvider", opts


ORT_WARNING, ORT_ERROR = 2, 3  # ORT's log severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal


def session_log_severity(fd: int = 2) -> int:
    """The log_severity_level of this process's sessions: warnings where `fd` (stderr, to which ORT's C++ logger
    writes) is a regular file, a log the user reads later; errors only on a terminal, a pipe (the console, a
    subprocess's captured output), /dev/null, or where it cannot be told."""
    try:
        return ORT_WARNING if stat.S_ISREG(os.fstat(fd).st_mode) else ORT_ERROR
    except OSError:
        return ORT_ERROR


def provider_for(device: str) -> tuple[str, dict[str, Any]] | None:
    """The execution provider (and options) a placement label asks for; None when ORT has none."""
    where = ParsedPlacement(device)
    if where.kind == "cpu":
        return "CPUExecutionProvider", {}
    if where.is_gpu:
        return "CUDAExecutionProvider", {"device_id": where.number}
    return None


class OrtBackend:
    name = "ort"
    framework_modules = ("onnxruntime",)  # the framework server imports it (no session, no CUDA context)

    @staticmethod
    def preload(device: str) -> None:
        """A warm worker's start (runner/warm_pool.py): import onnxruntime once per process, not once per row."""
        import onnxruntime  # noqa: F401

    def supports(self, cfg: RunConfig, env: Env) -> str | None:
        if env.ort_missing_reason:
            return env.ort_missing_reason
        unknown = [k for k, _ in cfg.options if k != "ort_provider"]
        if unknown:
            return f"the ort backend takes only the option ort_provider (got {', '.join(unknown)})"
        try:
            which = validated(OrtOptions, "ort", dict(cfg.options)).ort_provider
        except BackendError as exc:
            return str(exc)
        if cfg.precision not in ONNX_PRECISIONS + CUDA_MATH_PRECISIONS:
            return (
                f"ort runs the precision stored in the ONNX ({', '.join(ONNX_PRECISIONS)}) or tf32 on CUDA; "
                f"{cfg.precision} is a runtime mode of the torch/TensorRT backends"
            )
        if which == "tensorrt":
            if cfg.precision in CUDA_MATH_PRECISIONS:
                return "tf32 through the TensorRT EP is not a separate mode (TensorRT allows TF32 by default)"
            return self._tensorrt_reason(cfg, env)
        for device in set(cfg.placements):
            provider = provider_for(device)
            if provider is None:
                return f"placement {device!r} has no ONNX Runtime execution provider (DLA needs the trt backend)"
            name, opts = provider
            if name not in env.ort_providers:
                return f"{name} is not available in this onnxruntime (providers: {', '.join(env.ort_providers)})"
            if name == "CUDAExecutionProvider" and opts["device_id"] >= max(env.cuda_devices, 1):
                return f"placement {device!r}: this machine has {env.cuda_devices} CUDA device(s)"
            if name == "CPUExecutionProvider" and cfg.precision in CUDA_MATH_PRECISIONS:
                return f"{cfg.precision} is a CUDA math mode; the CPU provider computes in float32"
            if name == "CPUExecutionProvider" and cfg.precision == "fp16":
                # Measured with onnxruntime 1.31 on x86-64: the CPU EP accepts an fp16 graph but its optimizer
                # wraps the ops in Casts (resnet18: 2 -> 43 Cast nodes) and computes in float32, so the
                # row would be an fp32 measurement labelled fp16.
                return ("CPUExecutionProvider computes float16 graphs in float32 (inserts Casts), "
                        "so it is not an fp16 measurement; fp16 needs a GPU provider")
        return None

    @staticmethod
    def _tensorrt_reason(cfg: RunConfig, env: Env) -> str | None:
        if "TensorrtExecutionProvider" not in env.ort_providers:
            return ("TensorrtExecutionProvider is not in this onnxruntime build "
                    f"(providers: {', '.join(env.ort_providers)}); it needs onnxruntime-gpu with TensorRT")
        dla = []
        for device in sorted(set(cfg.placements)):
            target = trt_provider_options(device, cfg.precision, "")
            if target is None:
                return f"placement {device!r} has no TensorRT target (use cuda:N or dla0/dla1)"
            if target[1].get("trt_dla_enable"):
                dla.append((device, int(target[1]["trt_dla_core"])))
            elif target[1]["device_id"] >= max(env.cuda_devices, 1):
                return f"placement {device!r}: this machine has {env.cuda_devices} CUDA device(s)"
        if dla and cfg.precision not in DLA_PRECISIONS:
            return (f"ORT's TensorRT EP enables DLA only with fp16 or int8 (trt_fp16_enable/trt_int8_enable); "
                    f"{cfg.precision} on {', '.join(d for d, _ in dla)} would silently run on the GPU")
        if dla:
            cores = trt_logic.count_dla_cores() if trt_logic.jetson_model() else 0
            for device, core in dla:
                if core >= cores:  # the EP would quietly use the GPU (no DLA) or DLA core 0 (core out of range)
                    return (f"placement {device!r}: this machine has {cores} DLA core(s); ORT's TensorRT EP would "
                            "not refuse it but run on the GPU or on DLA core 0 instead")
        return libnvinfer_missing_reason()

    def prepare(self, cfg: RunConfig, model: ModelArtifact, cache: Artifacts) -> Prepared:
        options = dict(cfg.options)
        info: dict[str, Any] = {"onnx_sha256": model.sha256}
        if options.get("ort_provider") == "tensorrt":
            trt_dir = cache.root / "ort-trt"
            trt_dir.mkdir(parents=True, exist_ok=True)
            options["trt_cache_dir"] = str(trt_dir)
            provider = "TensorrtExecutionProvider"
            dla = [d for d in cfg.placements if ParsedPlacement(d).is_dla]
            if dla:
                provider += f" (DLA: {EP_DLA_NOTE})"
                info["dla_gpu_fallback"] = "always (set by ORT's TensorRT EP)"
        else:
            provider = "+".join(sorted({provider_for(d)[0] for d in cfg.placements}))  # type: ignore[index]
        if options.get("ort_provider") == "tensorrt":
            if (check := dla_core_check(cfg.placements)) is not None:  # ORT does not report the core it used
                info["row_fields"] = {"dla_core_check": check}
        return Prepared.for_artifact(self.name, cfg, model, precision=cfg.precision, options=options,
                                     info={"provider": provider, **info})

    def open(self, prepared: Prepared, placement: Placement) -> OrtSession:
        return OrtSession(prepared, placement)


class OrtSession:
    def __init__(self, prepared: Prepared, placement: Placement) -> None:
        import onnxruntime as ort

        if prepared.options.get("ort_provider") == "tensorrt":
            provider = trt_provider_options(placement.device, prepared.precision, prepared.options["trt_cache_dir"],
                                            ort_version=ort.__version__)
        else:
            provider = provider_for(placement.device)
            if provider is not None and provider[0] == "CUDAExecutionProvider":
                provider = (provider[0], {**provider[1], "use_tf32": int(prepared.precision == "tf32")})
        if provider is None:
            raise BackendError(f"instance {placement.instance}: no ONNX Runtime provider for {placement.device!r}")
        name, opts = provider
        so = ort.SessionOptions()
        so.intra_op_num_threads = placement.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # warnings where a framework_log() block takes them (the probe) or where stderr is a log file
        so.log_severity_level = ORT_WARNING if capturing() else session_log_severity()
        providers: list[Any] = [(name, opts)]
        if name == "TensorrtExecutionProvider":  # nodes TensorRT rejects run on the CUDA EP
            providers.append(("CUDAExecutionProvider", {"device_id": opts["device_id"]}))
        if name != "CPUExecutionProvider":
            providers.append("CPUExecutionProvider")
        try:
            self._sess = ort.InferenceSession(prepared.model_path, sess_options=so, providers=providers)
        except Exception as exc:  # ORT raises its own exception types for bad files / missing kernels
            raise BackendError(f"{prepared.model_path}: ONNX Runtime could not load it: {exc}") from None
        if name not in self._sess.get_providers():
            raise BackendError(f"instance {placement.instance}: {name} was requested but ORT fell back to "
                               f"{self._sess.get_providers()}")
        if name == "TensorrtExecutionProvider":  # what ORT says about the DLA core (reported to ignore core 1)

            if (mismatch := core_mismatch(placement.device, self._sess.get_provider_options())) is not None:
                raise BackendError(f"instance {placement.instance}: {mismatch}")
        self._device = "cpu" if name == "CPUExecutionProvider" else "cuda"
        self._device_id = int(opts.get("device_id", 0))
        self._output_names = [o.name for o in self._sess.get_outputs()]
        self._feed: dict[str, np.ndarray] = {}
        self._binding: Any = None
        self._last: list[Any] | None = None

    def feed(self, inputs: dict[str, np.ndarray]) -> None:
        self._feed = dict(inputs)
        if self._device == "cpu":
            self._binding = None
            return
        import onnxruntime as ort

        binding = self._sess.io_binding()
        for key, arr in inputs.items():
            value = ort.OrtValue.ortvalue_from_numpy(arr, "cuda", self._device_id)
            binding.bind_ortvalue_input(key, value)
        for out in self._output_names:
            binding.bind_output(out, "cuda", self._device_id)
        self._binding = binding

    def infer(self) -> None:
        if self._binding is None:
            self._last = self._sess.run(self._output_names, self._feed)
        else:
            self._sess.run_with_iobinding(self._binding)
            self._binding.synchronize_outputs()

    def outputs(self) -> dict[str, np.ndarray]:
        if self._binding is not None:
            return dict(zip(self._output_names, self._binding.copy_outputs_to_cpu()))
        if self._last is None:
            self.infer()
        assert self._last is not None
        return dict(zip(self._output_names, self._last))

    def close(self) -> None:
        self._binding = None
        self._sess = None  # type: ignore[assignment]
