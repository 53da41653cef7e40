"""Every decision of the TensorRT backend, as pure functions over plain data (tested on a CPU).

trt.py keeps only the calls into TensorRT; what to call them with is decided here:
- which placements mean GPU or DLA core N, and what this machine offers (TrtEnv: TensorRT version and
  features, Jetson model, DLA cores from sysfs, all without initializing CUDA);
- supports(): the reason a config cannot run (precision, options, DLA rules, missing TensorRT/DLA);
- the precision strategy per TensorRT version (builder flags vs strongly typed network, explicit QDQ INT8 vs
  implicit entropy calibration) and the full BuildPlan that becomes the engine key;
Reading what TensorRT reports back (inspector JSON, the builder's DLA/GPU layer log) is in trt_reports.py;
the calibration batches an IInt8EntropyCalibrator2 feeds are in trt_calibration.py.

Size: one chain of decisions (placement -> environment -> supports -> precision strategy -> build plan),
each step feeding the next; split further, the DLA and TensorRT-version rules would be read in two places.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from edgebench.backends.options import BackendOptions, must, validated
from edgebench.backends.trt_engine_cache import EngineKey
from edgebench.backends.trt_profile import optimisation_profile
from edgebench.config.typed import Field
from edgebench.device.jetson import dla_nodes
from edgebench.errors import BackendError, exc_text
from edgebench.placement import Placement

if TYPE_CHECKING:  # pragma: no cover

    from edgebench.backends.trt_engine_cache import EngineKey
    from edgebench.config.run_config import RunConfig
    from edgebench.models.model_artifact import ModelArtifact

INSTALL_HINT = "TensorRT not installed (it comes with JetPack: python3-libnvinfer)"
TRT_PRECISIONS = ("fp32", "tf32", "fp16", "int8")
DLA_PRECISIONS = ("fp16", "int8")
CALIBRATION_BATCH = 8  # samples per implicit-calibration batch for a dynamic-batch ONNX (fewer if the set is smaller)
# TensorRT 8.x cannot build an explicitly quantized (Q/DQ) network for DLA: NVIDIA's own route for a QAT model
# on Orin's DLA under TensorRT 8.6 is to strip the Q/DQ nodes into a calibration cache (Deep-Learning-Accelerator-SW,
# scripts/qdq_translator). Below this version, INT8 on a DLA means implicit (entropy) calibration.
DLA_EXPLICIT_INT8_MIN_TRT = (10,)
# DLA and TensorRT: NVIDIA's "Working with DLA" (TensorRT 11.4.1): 10.7 was the last 10.x release with DLA;
# 11.0-11.3 have none; 11.4.0 only on Windows on ARM; 11.4.1+ on Jetson AGX Orin under JetPack 7.2.2+.
DLA_LAST_10X = (10, 7)
DLA_BACK_IN_11 = (11, 4, 1)


# --------------------------------------------------------------------------- placements and options

@dataclass(frozen=True)
class Target:
    """Where an engine runs: device_type "gpu" or "dla" (with its core)."""

    device_type: str
    dla_core: int | None = None

    @property
    def label(self) -> str:
        return "gpu" if self.device_type == "gpu" else f"dla{self.dla_core}"


def parse_placement(label: str) -> Target | None:
    """GPU 0 ('gpu', 'cuda', 'cuda:0') -> GPU; a DLA core ('dla0', 'dla1'; 'dla' = core 0) -> DLA; else None
    (TensorRT here builds for the first GPU only)."""
    where = Placement(label)
    if where.is_gpu and where.number == 0:
        return Target("gpu")
    if where.is_dla:
        return Target("dla", where.number)
    return None


class TrtOptions(BackendOptions):
    """The trt backend's options (an option set of the profile's sweep.option_sets)."""

    gpu_fallback: bool = Field(default=False, json_schema_extra=must("true or false"))
    int8_calibration: Literal["auto", "explicit", "entropy"] = Field(default="auto", json_schema_extra=must(
        "one of auto, explicit, entropy (explicit = the QDQ ONNX, entropy = IInt8EntropyCalibrator2, "
        "auto = explicit, except entropy on a DLA below TensorRT 10)"))
    cuda_graph: bool = Field(default=False, json_schema_extra=must("true or false"))
    workspace_mib: int = Field(default=1024, ge=1, json_schema_extra=must("a positive integer (MiB)"))
    layer_profile: int = Field(default=0, ge=0, json_schema_extra=must(  # inferences of a per-layer profile after
        "a count of inferences >= 0 (0 = off)"))                         # the window (0 = off)


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validated trt options with defaults filled in; BackendError names the bad option."""
    return validated(TrtOptions, "trt", options).model_dump()


# --------------------------------------------------------------------------- what this machine offers

def parse_version(text: str) -> tuple[int, ...]:
    """'10.3.0.30' -> (10, 3, 0, 30); non-numeric parts end the tuple."""
    out = []
    for part in text.split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group()))
    return tuple(out)


@dataclass(frozen=True)
class TrtEnv:
    """TensorRT and accelerator facts supports() and prepare() decide from."""

    trt_version: str | None
    missing_reason: str | None = None
    has_fp16_flag: bool = False
    has_int8_flag: bool = False
    has_strongly_typed: bool = False
    has_entropy_calibrator: bool = False
    jetson_model: str | None = None  # None: not a Jetson
    dla_cores: int | None = None  # None: unknown (not a Jetson); 0: a Jetson without DLA

    @property
    def major(self) -> int:
        v = parse_version(self.trt_version or "")
        return v[0] if v else 0


def dla_missing_reason(env: TrtEnv) -> str | None:
    """Why this TensorRT cannot build DLA engines whatever the board offers (None: it can, or unknown)."""
    v = parse_version(env.trt_version or "")
    if not v:
        return None
    where = "stay on the TensorRT 10.x of JetPack 6 (10.3) for DLA"
    if v[0] == 10 and v[:2] > DLA_LAST_10X:
        return f"TensorRT {env.trt_version} has no DLA support (10.7 was the last 10.x with DLA); {where}"
    if v[0] == 11 and v < DLA_BACK_IN_11:
        return (f"TensorRT {env.trt_version} has no DLA support on Jetson (DLA is absent from 11.0-11.3, 11.4.0 has it "
                f"only on Windows on ARM, 11.4.1 brings it back for AGX Orin on JetPack 7.2.2+); {where}")
    if v[0] >= 11 and env.jetson_model and "AGX Orin" not in env.jetson_model:
        return (f"TensorRT {env.trt_version} supports DLA on Jetson AGX Orin only (this is {env.jetson_model}); "
                f"{where}")
    return None


def int8_calibration_for(requested: str, target: Target, env: TrtEnv) -> str:
    """The INT8 route a target gets: 'auto' is the explicit Q/DQ ONNX, except on a DLA below TensorRT 10
    (no explicit quantization on DLA there), where it is entropy calibration."""
    if requested != "auto":
        return requested
    v = parse_version(env.trt_version or "")
    if target.device_type == "dla" and v and v[:1] < DLA_EXPLICIT_INT8_MIN_TRT:
        return "entropy"
    return "explicit"


def trt_features(trt: Any) -> dict[str, Any]:
    """Version and API features of an imported `tensorrt` module (or why it is not usable)."""
    if not hasattr(trt, "Builder"):
        # e.g. only the tensorrt-stubs type stubs are installed: `import tensorrt` yields an empty namespace
        return {"trt_version": None, "missing_reason": INSTALL_HINT + "; `import tensorrt` found no TensorRT API"}
    flags = getattr(trt, "BuilderFlag", None)
    net_flags = getattr(trt, "NetworkDefinitionCreationFlag", None)
    return {
        "trt_version": str(getattr(trt, "__version__", "unknown")),
        "missing_reason": None,
        "has_fp16_flag": hasattr(flags, "FP16"),
        "has_int8_flag": hasattr(flags, "INT8"),
        "has_strongly_typed": hasattr(net_flags, "STRONGLY_TYPED"),
        "has_entropy_calibrator": hasattr(trt, "IInt8EntropyCalibrator2"),
    }


def jetson_model(root: Path | str = "/") -> str | None:
    """The board model ('NVIDIA Jetson AGX Orin Developer Kit') when this is a Jetson, else None."""
    base = Path(root)
    compatible = base / "proc/device-tree/compatible"
    try:
        tegra = b"nvidia,tegra" in compatible.read_bytes()
    except OSError:
        tegra = (base / "etc/nv_tegra_release").exists()
    if not tegra:
        return None
    try:
        return (base / "proc/device-tree/model").read_bytes().rstrip(b"\x00\n").decode(errors="replace") or "Jetson"
    except OSError:
        return "Jetson (model unknown)"


def count_dla_cores(root: Path | str = "/") -> int:
    """DLA cores the kernel exposes, read from files only (no CUDA init): edgebench.device.jetson.dla_nodes, the
    rule `edgebench doctor` and system.json use too. NOT YET CHECKED on a real board; prepare() cross-checks
    with TensorRT's builder.num_DLA_cores, which is authoritative."""

    return len(dla_nodes(root)[0])


def detect_env(root: Path | str = "/") -> TrtEnv:
    try:
        import tensorrt

        facts = trt_features(tensorrt)
    except ImportError as exc:
        facts = {"trt_version": None, "missing_reason": f"{INSTALL_HINT} ({exc.msg})"}
    except Exception as exc:  # a broken install (missing libnvinfer.so) raises OSError and friends
        facts = {"trt_version": None, "missing_reason": f"{INSTALL_HINT}; import failed: {exc_text(exc)}"}
    model = jetson_model(root)
    return TrtEnv(**facts, jetson_model=model, dla_cores=count_dla_cores(root) if model else None)


# --------------------------------------------------------------------------- supports()

def supports_reason(cfg: RunConfig, env: TrtEnv, cuda_devices: int) -> str | None:
    """None when `cfg` can run on the trt backend here, else the reason (config reasons come first, so a
    dry run on any machine shows them; then what the machine lacks)."""
    if cfg.precision not in TRT_PRECISIONS:
        return f"trt builds {', '.join(TRT_PRECISIONS)} engines; {cfg.precision} is a torch runtime mode"
    try:
        opts = check_options(dict(cfg.options))
    except BackendError as exc:
        return str(exc)
    targets = []
    for label in sorted(set(cfg.placements)):
        target = parse_placement(label)
        if target is None:
            return f"placement {label!r} is not a TensorRT target (gpu, cuda, cuda:0, dla0, dla1)"
        targets.append(target)
    dla = [t for t in targets if t.device_type == "dla"]
    if dla and cfg.precision not in DLA_PRECISIONS:
        return f"DLA is FP16/INT8 only: {cfg.precision} cannot run on {', '.join(t.label for t in dla)}"
    if dla and opts["cuda_graph"]:
        return "cuda_graph is GPU only: a DLA engine is not captured into a CUDA graph"
    routes = {int8_calibration_for(opts["int8_calibration"], t, env) for t in targets}
    if cfg.precision == "int8" and "entropy" in routes and env.trt_version is not None:
        if env.major >= 11 or not env.has_entropy_calibrator or not env.has_int8_flag:
            return (f"int8_calibration: entropy (implicit INT8, IInt8EntropyCalibrator2) is gone in TensorRT "
                    f"{env.trt_version}; use the explicit QDQ ONNX (int8_calibration: explicit)")
    if (cfg.precision == "int8" and dla and opts["int8_calibration"] == "explicit" and env.trt_version is not None
            and parse_version(env.trt_version)[:1] < DLA_EXPLICIT_INT8_MIN_TRT):
        return (f"int8_calibration: explicit (the Q/DQ ONNX) cannot build for {', '.join(t.label for t in dla)} on "
                f"TensorRT {env.trt_version}: explicit quantization on DLA needs TensorRT 10; use "
                "int8_calibration: entropy (or auto, which picks it for DLA targets)")
    if env.missing_reason:
        return env.missing_reason
    if dla and (why := dla_missing_reason(env)):
        return f"placement {', '.join(t.label for t in dla)}: {why}"
    for t in dla:
        if env.dla_cores is None:
            return f"placement {t.label}: DLA needs a Jetson with DLA cores (Xavier, Orin AGX/NX); this is not a Jetson"
        if t.dla_core is not None and t.dla_core >= env.dla_cores:
            have = "no DLA" if env.dla_cores == 0 else f"{env.dla_cores} DLA core(s)"
            return f"placement {t.label}: this device ({env.jetson_model}) has {have}"
    if any(t.device_type == "gpu" for t in targets) and cuda_devices == 0 and env.jetson_model is None:
        return "placement gpu needs a CUDA GPU; none found on this machine"
    return None


# --------------------------------------------------------------------------- precision strategy and build plan

@dataclass(frozen=True)
class Strategy:
    name: str  # fp32-ieee, tf32, fp16-builder-flag, fp16-strongly-typed, int8-explicit-qdq, int8-entropy
    onnx: str  # "fp32" (the exported file) or "artifact" (the precision's own ONNX: fp16 / QDQ)
    set_flags: tuple[str, ...]
    clear_flags: tuple[str, ...] = ()
    strongly_typed: bool = False
    calibrate: bool = False


def precision_strategy(precision: str, env: TrtEnv, target: Target, int8_calibration: str) -> Strategy:
    """How `precision` is built on this TensorRT. DLA adds GPU-less needs: FP16 beside INT8 (DLA has no FP32).

    - fp32: IEEE fp32 (TF32 cleared: TensorRT enables TF32 by default); tf32: TF32 allowed.
    - fp16: BuilderFlag.FP16 on the FP32 ONNX where the flag exists and TensorRT < 11; else a strongly typed
      network from the fp16 ONNX (weights and math in fp16 as the file says).
    - int8 explicit: the QDQ ONNX, BuilderFlag.INT8 where it exists and TensorRT < 11, else strongly typed
      (not on a DLA below TensorRT 10); int8 entropy: the FP32 ONNX + INT8 flag + IInt8EntropyCalibrator2
      (TensorRT 8.6 / 10 only); auto (default): explicit, or entropy on a DLA below TensorRT 10.
    """
    dla = target.device_type == "dla"
    legacy = env.major < 11
    int8_calibration = int8_calibration_for(int8_calibration, target, env)
    if precision == "fp32":
        return Strategy("fp32-ieee", "fp32", (), ("TF32",))
    if precision == "tf32":
        return Strategy("tf32", "fp32", ("TF32",))
    if precision == "fp16":
        if env.has_fp16_flag and legacy:
            return Strategy("fp16-builder-flag", "fp32", ("FP16",))
        if not env.has_strongly_typed:
            raise BackendError(f"TensorRT {env.trt_version}: neither BuilderFlag.FP16 nor strongly typed networks")
        return Strategy("fp16-strongly-typed", "artifact", (), strongly_typed=True)
    if precision == "int8":
        extra = ("FP16",) if dla and env.has_fp16_flag and legacy else ()
        if int8_calibration == "entropy":
            if not (env.has_int8_flag and env.has_entropy_calibrator and legacy):
                raise BackendError(f"TensorRT {env.trt_version} has no implicit INT8 calibration")
            return Strategy("int8-entropy", "fp32", ("INT8", *extra), calibrate=True)
        if dla and parse_version(env.trt_version or "")[:1] < DLA_EXPLICIT_INT8_MIN_TRT:
            raise BackendError(f"TensorRT {env.trt_version} cannot build the explicit Q/DQ INT8 ONNX for "
                               f"{target.label} (explicit quantization on DLA needs TensorRT 10)")
        if env.has_int8_flag and legacy:
            return Strategy("int8-explicit-qdq", "artifact", ("INT8", *extra))
        if not env.has_strongly_typed:
            raise BackendError(f"TensorRT {env.trt_version}: neither BuilderFlag.INT8 nor strongly typed networks")
        return Strategy("int8-explicit-qdq-strongly-typed", "artifact", (), strongly_typed=True)
    raise BackendError(f"trt backend: precision {precision!r} is not one of {', '.join(TRT_PRECISIONS)}")


def source_onnx(strategy: Strategy, model: ModelArtifact) -> tuple[str, str]:
    """(path, sha256) of the ONNX the strategy builds from: the artifact itself, or the FP32 file it came from."""
    if strategy.onnx == "artifact" or model.precision in ("fp32", "tf32"):
        return model.onnx_path, model.sha256
    src = model.sidecar.get("source_fp32")
    if not isinstance(src, dict) or not src.get("path") or not src.get("sha256"):
        raise BackendError(f"{model.onnx_path}: {strategy.name} builds from the FP32 ONNX, but the {model.precision} "
                           "artifact's sidecar names no source_fp32")
    return str(src["path"]), str(src["sha256"])


@dataclass(frozen=True)
class BuildPlan:
    """Everything trt.build_engine needs, as plain data; also the source of the engine key."""

    onnx_path: str
    onnx_sha256: str
    precision: str
    strategy: Strategy
    input_name: str
    min_shape: tuple[int, ...]
    opt_shape: tuple[int, ...]
    max_shape: tuple[int, ...]
    target: Target
    gpu_fallback: bool
    workspace_mib: int
    calibration_batch: int | None = None
    calibration_sha256: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    # min/opt/max of every dynamic input (trt_profile.optimisation_profile); empty = the one input above
    profile: tuple[tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = ()

    @property
    def set_flags(self) -> tuple[str, ...]:
        fallback = ("GPU_FALLBACK",) if self.target.device_type == "dla" and self.gpu_fallback else ()
        return (*self.strategy.set_flags, *fallback)

    @property
    def workspace_bytes(self) -> int:
        return self.workspace_mib << 20

    def builder_options(self) -> tuple[tuple[str, Any], ...]:
        opts: dict[str, Any] = {
            "set_flags": ",".join(self.set_flags),
            "clear_flags": ",".join(self.strategy.clear_flags),
            "strongly_typed": self.strategy.strongly_typed,
            "profiling_verbosity": "DETAILED",
        }
        if self.strategy.calibrate:
            opts["calibration_batch"] = self.calibration_batch
            opts["calibration_sha256"] = self.calibration_sha256
        if len(self.profile) > 1:  # several inputs: every one's shapes are in the key (one-input keys unchanged)
            opts["profile"] = ";".join(f"{n}:{'x'.join(map(str, lo))}/{'x'.join(map(str, op))}/{'x'.join(map(str, hi))}"
                                       for n, lo, op, hi in self.profile)
        return tuple(sorted(opts.items()))


def engine_key(plan: BuildPlan, trt_version: str, device_name: str, compute_capability: str) -> EngineKey:
    """The cache key of the engine `plan` builds with this TensorRT on this device."""

    return EngineKey(onnx_sha256=plan.onnx_sha256, precision=plan.precision, strategy=plan.strategy.name,
                     input_name=plan.input_name, min_shape=plan.min_shape, opt_shape=plan.opt_shape,
                     max_shape=plan.max_shape, device_type=plan.target.device_type, dla_core=plan.target.dla_core,
                     gpu_fallback=plan.gpu_fallback, trt_version=trt_version, device_name=device_name,
                     compute_capability=compute_capability, workspace_mib=plan.workspace_mib,
                     builder_options=plan.builder_options())


def build_plan(cfg: RunConfig, model: ModelArtifact, target: Target, env: TrtEnv, options: dict[str, Any],
               calibration: dict[str, Any] | None = None) -> BuildPlan:
    """The engine to build for one placement target. One static-shape profile (min = opt = max = the
    configured batch): the measured batch is the only one run, and DLA engines need static shapes anyway."""

    strategy = precision_strategy(cfg.precision, env, target, options["int8_calibration"])
    path, sha = source_onnx(strategy, model)
    shape = (cfg.batch, *model.first_input.shape)
    profile = tuple(e.as_tuple() for e in optimisation_profile(model.inputs, cfg.batch))
    if strategy.calibrate and len(model.inputs) > 1:
        raise BackendError(f"{model.model}: implicit INT8 calibration (int8_calibration=entropy) feeds one input; "
                           f"this model has {len(model.inputs)} - use the QDQ ONNX (int8_calibration=explicit)")
    notes = []
    if target.device_type == "dla":
        notes.append(f"DLA core {target.dla_core}, GPU fallback {'on' if options['gpu_fallback'] else 'off'}")
    calib_batch = calib_sha = None
    if strategy.calibrate:
        record = calibration or model.sidecar.get("calibration") or {}
        if not record.get("sha256") or not record.get("count"):
            raise BackendError(f"{model.onnx_path}: implicit INT8 needs the recorded calibration set "
                               "(the int8 artifact's sidecar has no calibration record)")
        calib_batch = calibration_batch_size(onnx_fixed_batch(path, model.first_input.name), int(record["count"]))
        calib_sha = str(record["sha256"])
    if strategy.calibrate and target.device_type == "dla" and options["int8_calibration"] == "auto":
        notes.append(f"INT8 on {target.label}: entropy calibration (auto: TensorRT {env.trt_version} has no explicit "
                     "Q/DQ INT8 on DLA)")
    return BuildPlan(onnx_path=path, onnx_sha256=sha, precision=cfg.precision, strategy=strategy,
                     input_name=model.first_input.name, min_shape=shape, opt_shape=shape, max_shape=shape, target=target,
                     gpu_fallback=bool(options["gpu_fallback"]) and target.device_type == "dla",
                     workspace_mib=int(options["workspace_mib"]), calibration_batch=calib_batch,
                     calibration_sha256=calib_sha, notes=tuple(notes), profile=profile)


def onnx_fixed_batch(path: str, input_name: str) -> int | None:
    """The fixed batch size of input `input_name` in the ONNX at `path`; None when its batch axis is dynamic."""
    import onnx

    try:
        proto = onnx.load(path, load_external_data=False)
    except Exception as exc:  # OSError, DecodeError, ...
        raise BackendError(f"{path}: cannot read the ONNX to size the calibration batch "
                           f"({exc_text(exc)})") from None
    for inp in proto.graph.input:
        if inp.name == input_name:
            dims = inp.type.tensor_type.shape.dim
            first = dims[0] if len(dims) else None
            return int(first.dim_value) if first is not None and first.HasField("dim_value") else None
    raise BackendError(f"{path}: no input {input_name!r} to calibrate")


def calibration_batch_size(fixed_batch: int | None, count: int) -> int:
    """Samples per calibration batch: the ONNX's own batch when it is fixed (TensorRT cannot run another
    batch through it), else min(CALIBRATION_BATCH, count)."""
    if fixed_batch is None:
        return min(CALIBRATION_BATCH, count)
    if count < fixed_batch:
        raise BackendError(f"calibration set has {count} samples, fewer than the ONNX's fixed batch of {fixed_batch}")
    return fixed_batch
