"""torch nn.Module -> one self-contained ONNX file, checked and compared against torch; ONNX inspection.

Exporter: torch >= 2.9 defaults to the torch.export-based ("dynamo") exporter, whose lowest opset is 18
(asking it for 17 leaves the model at 18: the onnx version converter fails on its ReduceMean). So a spec
with opset < 18 goes through the TorchScript exporter (`dynamo=False`, deprecated but present in
torch 2.15), and opset >= 18 through the dynamo exporter. Which one ran is recorded in the sidecar
and is part of the cache key.

Random-init models: torchvision's default init leaves activations vanishing in some networks (the
depthwise convs of MobileNet/EfficientNet get kaiming std computed without `groups`, so logits end up
~1e-15, which FP16 flushes to zero and INT8 cannot represent). Before export, the BatchNorm running
statistics of a random-init model are re-estimated on a few seeded synthetic batches (BN layers in
train mode, everything else in eval mode), which gives unit-scale activations like a trained network.
A Linear layer initialised to all zeros (torchvision's ViT head) gets seeded N(0, 0.02) weights, so the
outputs are not identically zero. Weights loaded from a file are never touched.

Size: export and the ONNX inspection it checks its output with (inputs, opset, parity) share the
torch/onnx loading and the cache record; the external-ONNX import is the same checks on a file given.
"""

from __future__ import annotations

import re
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import ModelError, exc_message, exc_text
from edgebench.models.artifacts import Artifact, Artifacts, file_sha256, sha256_file
from edgebench.models.builtin import build_builtin
from edgebench.models.in_child import run_in_child
from edgebench.models.inputs import GraphInput, synthetic, tensor_dtype, value_dims
from edgebench.models.weights import is_torchvision, resolve_weights

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from edgebench.models.spec import ModelSpec

EXPORT_RECIPE = 1  # bump when the export procedure changes in a way that changes the file
DYNAMO_MIN_OPSET = 18
BN_RECALIBRATION_BATCHES = 2
BN_RECALIBRATION_BATCH_SIZE = 8
PARITY_BATCH = 2


# --------------------------------------------------------------------------- torch model

def build_torch_model(spec: ModelSpec, seed: int = 0) -> torch.nn.Module:
    """The spec's torch module in eval mode: torchvision weights (`torchvision:IMAGENET1K_V2`, loaded by torchvision
    from torch's cache, see edgebench.models.weights), weights from `spec.weights` if that file exists, else seeded
    random init (with BatchNorm statistics re-estimated on seeded synthetic inputs, see the module doc)."""
    import torch


    torch.manual_seed(seed)
    resolved = resolve_weights(spec)
    if spec.source == "torchvision" and resolved.kind == "torchvision":
        return _torchvision_pretrained(spec, _torchvision_ctor(spec), resolved).eval()
    model = construct_torch_model(spec)
    weights = resolved.path
    if weights is not None:
        _load_weights(model, weights)
    else:
        _reinit_zero_linears(model, seed)
        _recalibrate_batchnorm(model, spec, seed)
    return model.eval()


def construct_torch_model(spec: ModelSpec) -> torch.nn.Module:
    """The spec's module as its constructor makes it (random init, no weights, train mode); under
    `torch.device("meta")` the same module with no storage and no init (models/torch_state.py fills it)."""
    if spec.source == "torchvision":
        ctor = _torchvision_ctor(spec)
        import inspect

        kwargs: dict[str, Any] = {"num_classes": spec.num_classes, **dict(spec.config)}
        try:
            if "weights" in inspect.signature(ctor).parameters:  # model builders; classes (VisionTransformer) lack it
                kwargs["weights"] = None
        except (TypeError, ValueError):
            kwargs["weights"] = None
        try:
            return ctor(**kwargs)
        except TypeError as exc:
            raise ModelError(f"{spec.spec_file or spec.name}: torchvision.models.{spec.arch}: {exc}") from None
    if spec.source == "builtin":
        return build_builtin(spec.arch, spec.num_classes, **dict(spec.config))
    raise ModelError(f"{spec.spec_file or spec.name}: source {spec.source!r} has no torch model")


def _torchvision_ctor(spec: ModelSpec) -> Any:
    import torchvision

    ctor = getattr(torchvision.models, spec.arch, None)
    if ctor is None or not callable(ctor):
        raise ModelError(f"{spec.spec_file or spec.name}: torchvision.models has no model {spec.arch!r}")
    return ctor


def _reinit_zero_linears(model: torch.nn.Module, seed: int) -> None:
    """Random init only: a Linear whose weight starts all zero (torchvision's ViT classifier head) makes every
    output exactly 0, so accuracy against FP32 would compare zeros. Such weights get seeded N(0, 0.02)."""
    import torch

    gen = torch.Generator().manual_seed(seed + 2)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and m.weight.numel() and not m.weight.any():
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen) * 0.02)


def _weights_file(spec: ModelSpec) -> Path | None:
    """The file the weights come from (a local state_dict, or torchvision's cached checkpoint); None = random init."""

    return resolve_weights(spec).path


def _torchvision_pretrained(spec: ModelSpec, ctor: Any, resolved: Any) -> torch.nn.Module:
    """torchvision's own builder with its weights enum: it reads the checkpoint from torch's hub cache, where
    resolve_weights() has made sure it is."""
    where = spec.spec_file or spec.name
    classes = len(resolved.enum.meta.get("categories") or [])
    if classes and classes != spec.num_classes:
        raise ModelError(f"{where}: num_classes is {spec.num_classes}, {resolved.name} has {classes} classes")
    try:
        return ctor(weights=resolved.enum)
    except Exception as exc:  # torch.load / load_state_dict raise many kinds
        raise ModelError(f"{resolved.path}: torchvision cannot load {resolved.name} "
                         f"({exc_text(exc, first_line=True)})") from None


def _load_weights(model: torch.nn.Module, path: Path) -> None:
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds (pickle, zip, runtime)
        raise ModelError(f"{path}: cannot load weights ({exc_text(exc, first_line=True)})") from None
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise ModelError(f"{path}: expected a state_dict, found {type(state).__name__}")
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise ModelError(f"{path}: weights do not fit the model ({exc_message(exc, first_line=True)})") from None


def _recalibrate_batchnorm(model: torch.nn.Module, spec: ModelSpec, seed: int) -> None:
    import torch


    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    model.eval()
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the batches below
        bn.train()
    gen = torch.Generator().manual_seed(seed + 1)
    inputs = spec.inputs
    with torch.no_grad():
        for i in range(BN_RECALIBRATION_BATCHES):
            if len(inputs) == 1 and inputs[0].dtype == "float32":  # the one-input draw, as before several inputs
                model(torch.randn((BN_RECALIBRATION_BATCH_SIZE, *inputs[0].shape), generator=gen))
            else:
                feeds = synthetic(inputs, BN_RECALIBRATION_BATCH_SIZE, seed + 1 + i)
                model(*(torch.from_numpy(feeds[d.name]) for d in inputs))
    model.eval()


# --------------------------------------------------------------------------- export

def export_onnx(spec: ModelSpec, cache: Artifacts, seed: int = 0) -> Artifact:
    """The spec's model as one self-contained ONNX file in the cache (built once per inputs).

    source "onnx": the external file, validated and copied into the cache (self-contained).
    """
    if spec.source == "onnx":
        return _import_external(spec, cache)
    weights = _weights_file(spec)
    exporter = "torchscript" if spec.opset < DYNAMO_MIN_OPSET else "dynamo"
    inputs = {
        "recipe": EXPORT_RECIPE,
        "spec": spec_key(spec),
        # read without importing them: a cached model costs the harness no torch (~0.5 GB resident; issue 37)
        "torch": installed_version("torch"),
        "torchvision": installed_version("torchvision") if spec.source == "torchvision" else None,
        "onnx": installed_version("onnx"),
        "exporter": exporter,
        "opset": spec.opset,
        "seed": seed,
        "weights_sha256": file_sha256(weights) if weights is not None else None,
    }

    def build(tmp: Path) -> dict[str, Any]:
        return _build_in_child(spec, seed, exporter, weights, tmp)

    return cache.get_or_build(kind="onnx", inputs=inputs, filename=f"{spec.name}.onnx", build=build)


def spec_key(spec: ModelSpec) -> dict[str, Any]:
    """The spec's fields that make its model, for a cache key: not its file, description or preprocess (which only
    shapes labelled inputs, never the model)."""
    return {k: v for k, v in spec.to_dict().items() if k not in ("spec_file", "description", "preprocess")}


def _build_in_child(spec: ModelSpec, seed: int, exporter: str, weights: Path | None, tmp: Path) -> dict[str, Any]:
    """_build_export in a spawned process of its own (models/in_child.py), so torch and the exporter's memory
    (~0.5 GB and up) never stay in the harness, which on an 8 GB board runs the whole sweep (issue 37: the harness
    <= 300 MiB); a killed export is a ModelError ('the export process died with SIGKILL ...')."""
    return run_in_child(spec.name, "export", _build_export, spec, seed, exporter, weights, tmp)


def _build_export(spec: ModelSpec, seed: int, exporter: str, weights: Path | None, tmp: Path) -> dict[str, Any]:
    import onnx
    import torch

    model = build_torch_model(spec, seed)
    batch = PARITY_BATCH if spec.dynamic_batch else 1
    feeds = synthetic(spec.inputs, batch, seed)
    example = tuple(torch.from_numpy(feeds[d.name]) for d in spec.inputs)
    before = set(tmp.parent.iterdir())
    t0 = time.perf_counter()
    _run_exporter(spec, model, example, exporter, tmp)
    export_s = time.perf_counter() - t0
    extra_files = sorted(p.name for p in set(tmp.parent.iterdir()) - before - {tmp})
    if extra_files:
        for p in extra_files:
            (tmp.parent / p).unlink()
        raise ModelError(f"{spec.name}: exporter wrote external data files {extra_files}; expected one file")

    proto = onnx.load(str(tmp))
    opset = _default_opset(proto)
    if opset != spec.opset:
        raise ModelError(f"{spec.name}: the {exporter} exporter produced opset {opset}, the spec asks {spec.opset}")
    try:
        onnx.checker.check_model(proto, full_check=True)
        proto = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
    except Exception as exc:  # onnx raises ValidationError / InferenceError / RuntimeError
        raise ModelError(f"{spec.name}: exported ONNX fails the checker "
                         f"({exc_message(exc, first_line=True)})") from None
    onnx.save(proto, str(tmp))

    parity = _parity(spec, model, tmp, example)
    if not parity["passed"]:
        raise ModelError(
            f"{spec.name}: ONNX output differs from torch by {parity['max_abs_err']:.3g} "
            f"(parity_atol {spec.parity_atol}) on a seeded batch of {batch}"
        )
    info = inspect_onnx(tmp)
    out_shape = _value_shape(proto.graph.output[0])
    import onnxruntime

    return {
        "model": spec.name,
        "spec": spec.to_dict(),
        "versions": {
            "torch": torch.__version__,
            "torchvision": installed_version("torchvision"),
            "onnx": onnx.__version__,
            "onnxscript": installed_version("onnxscript") if exporter == "dynamo" else None,
            "onnxruntime": onnxruntime.__version__,
        },
        "exporter": exporter,
        "opset": opset,
        "seed": seed,
        "weights": spec.weights_label,
        "weights_sha256": sha256_file(weights) if weights is not None else None,
        "weights_missing": spec.weights if spec.weights and weights is None else None,
        "init": ("torchvision weights (torchvision's loader, torch hub cache)" if _is_torchvision(spec) else
                 "weights file") if weights is not None else (
            f"seeded random init (seed {seed}); BatchNorm statistics re-estimated on "
            f"{BN_RECALIBRATION_BATCHES}x{BN_RECALIBRATION_BATCH_SIZE} seeded synthetic samples"
        ),
        "input": first_input_record(info),
        "output": {"name": info.output_names[0], "shape": out_shape},
        "inputs": [{"name": g.name, "shape": list(g.dims), "dtype": g.dtype} for g in info.inputs],
        "outputs": [{"name": o.name, "shape": _value_shape(o)} for o in proto.graph.output],
        "dynamic_batch": info.dynamic_batch,
        "export_s": round(export_s, 3),
        "parity": parity,
    }


def _run_exporter(spec: ModelSpec, model: torch.nn.Module, example: tuple[torch.Tensor, ...], exporter: str,
                  out: Path) -> None:
    import torch

    in_names = [d.name for d in spec.inputs]
    out_names = list(spec.output_names)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's DeprecationWarning
            if exporter == "torchscript":  # each input's batch on its own axis (a state [layers, batch, hidden]: 1)
                axes = ({**{d.name: {d.batch_axis: "batch"} for d in spec.inputs if d.batch_axis is not None},
                         **{n: {0: "batch"} for n in out_names}} if spec.dynamic_batch else None)
                torch.onnx.export(
                    model, example, str(out), opset_version=spec.opset, dynamo=False,
                    dynamic_axes=axes, do_constant_folding=True, input_names=in_names, output_names=out_names,
                )
            else:
                dim = torch.export.Dim("batch", min=1)
                shapes = (tuple({d.batch_axis: dim} if d.batch_axis is not None else None for d in spec.inputs)
                          if spec.dynamic_batch else None)
                program = torch.onnx.export(
                    model, example, None, opset_version=spec.opset, dynamo=True,
                    dynamic_shapes=shapes, external_data=False, verbose=False, input_names=in_names,
                    output_names=out_names,
                )
                assert program is not None  # dynamo=True returns the ONNXProgram
                program.save(str(out), external_data=False)
    except ModelError:
        raise
    except Exception as exc:  # the exporters raise many kinds
        hint = ""
        if exporter == "torchscript":
            hint = f"; opset {spec.opset} needs the TorchScript exporter: try opset: {DYNAMO_MIN_OPSET} in the spec"
        raise ModelError(
            f"{spec.name}: torch.onnx.export ({exporter}) failed: {exc_text(exc, first_line=True)}{hint}"
        ) from None


def _parity(spec: ModelSpec, model: torch.nn.Module, path: Path, example: tuple[torch.Tensor, ...]) -> dict[str, Any]:
    """Every output of the ONNX (ORT CPU) against torch on the same seeded batch; max_abs_err is the worst."""
    import numpy as np
    import onnxruntime as ort
    import torch

    with torch.no_grad():
        out = model(*example)
    refs = [t.numpy() for t in (out if isinstance(out, (tuple, list)) else (out,))]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    gots = sess.run(None, {d.name: t.numpy() for d, t in zip(spec.inputs, example, strict=True)})
    per_output: dict[str, float] = {}
    for name, got, ref in zip(spec.output_names, gots, refs, strict=False):
        if got.shape != ref.shape:
            return {"passed": False, "max_abs_err": float("inf"), "atol": spec.parity_atol,
                    "reason": f"output '{name}': shape {got.shape} vs torch {ref.shape}"}
        per_output[name] = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if got.size else 0.0
    if len(gots) != len(refs):
        return {"passed": False, "max_abs_err": float("inf"), "atol": spec.parity_atol,
                "reason": f"the ONNX has {len(gots)} outputs, torch returned {len(refs)}"}
    err = max(per_output.values())
    return {
        "passed": bool(err <= spec.parity_atol),
        "max_abs_err": err,
        "max_abs_err_per_output": per_output,
        "atol": spec.parity_atol,
        "batch": int(example[0].shape[0]),
        "reference_max_abs": float(max(np.max(np.abs(r)) if r.size else 0.0 for r in refs)),
        "runtime": "onnxruntime CPUExecutionProvider",
    }


def _import_external(spec: ModelSpec, cache: Artifacts) -> Artifact:
    import onnx

    src = Path(spec.onnx_path or "")
    info = load_external_onnx(src, expected_shape=spec.first_input.shape if spec.inputs else None,
                              batch=None)
    inputs = {
        "recipe": EXPORT_RECIPE,
        "source": "onnx",
        "name": spec.name,
        "file_sha256": sha256_file(src),
        "onnx": onnx.__version__,
    }

    def build(tmp: Path) -> dict[str, Any]:
        proto = onnx.load(str(src))  # pulls external data in, so the cached copy is self-contained
        onnx.save(proto, str(tmp))
        return {
            "model": spec.name,
            "spec": spec.to_dict(),
            "source_path": str(src),
            "source_sha256": inputs["file_sha256"],
            "opset": info.opset,
            "weights": spec.weights_label,
            "input": first_input_record(info),
            "output": {"name": info.output_names[0]},
            "inputs": [{"name": g.name, "shape": list(g.dims), "dtype": g.dtype} for g in info.inputs],
            "resolved_inputs": [d.to_dict() for d in spec.inputs],
            "outputs": list(info.output_names),
            "dynamic_batch": info.dynamic_batch,
            "parity": {"passed": None, "reason": "external ONNX: no torch model to compare with"},
        }

    return cache.get_or_build(kind="onnx", inputs=inputs, filename=f"{spec.name}.onnx", build=build)


# --------------------------------------------------------------------------- inspection

@dataclass(frozen=True)
class OnnxInfo:
    """What edgebench needs to know about an ONNX file's inputs; `batch` is the first input's axis 0."""

    path: str
    inputs: tuple[GraphInput, ...]  # every input (the graph's non-initializer inputs), in order; at least one
    batch: int | str | None  # fixed batch size, or the symbolic name / None when dynamic
    output_names: tuple[str, ...]
    opset: int

    @property
    def first_input(self) -> GraphInput:
        return self.inputs[0]

    @property
    def sample_dims(self) -> tuple[int | str | None, ...]:
        """The first input's per-sample dims (no batch axis); str/None for symbolic dims."""
        return tuple(self.first_input.dims[1:])

    @property
    def dynamic_batch(self) -> bool:
        return not isinstance(self.batch, int)


def inspect_onnx(path: Path | str) -> OnnxInfo:
    """Read an ONNX file's inputs and outputs. A file that is not a valid ONNX model raises ModelError."""
    import onnx

    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: no such ONNX file")
    try:
        proto = onnx.load(str(path), load_external_data=False)
        onnx.checker.check_model(str(path))  # by path: also works past 2 GB and with external data
    except Exception as exc:  # DecodeError, ValidationError, OSError, ...
        raise ModelError(f"{path}: not a valid ONNX model ({exc_text(exc, first_line=True)})") from None
    inits = {t.name for t in proto.graph.initializer}
    values = [i for i in proto.graph.input if i.name not in inits]
    if not values:
        raise ModelError(f"{path}: the graph has no inputs to feed")
    inputs = []
    for inp in values:
        if not inp.type.HasField("tensor_type") or not inp.type.tensor_type.HasField("shape"):
            raise ModelError(f"{path}: input '{inp.name}' has no tensor shape")
        dims = value_dims(inp)  # -1 / 0 dims read as dynamic (None), as inputs.resolve reads them
        inputs.append(GraphInput(inp.name, tensor_dtype(inp), dims))
    first = inputs[0]
    return OnnxInfo(
        path=str(path),
        inputs=tuple(inputs),
        batch=first.dims[0] if first.dims else None,
        output_names=tuple(o.name for o in proto.graph.output),
        opset=_default_opset(proto),
    )


def first_input_record(info: OnnxInfo) -> dict[str, Any]:
    """The sidecar's `input`: the graph's first input (name, full shape with the batch first, dtype)."""
    return {"name": info.first_input.name, "shape": [info.batch, *info.sample_dims], "dtype": info.first_input.dtype}


def load_external_onnx(
    path: Path | str, *, expected_shape: tuple[int, ...] | None = None, batch: int | None = None
) -> OnnxInfo:
    """inspect_onnx plus checks: per-sample shape matches `expected_shape`, a fixed batch matches `batch`."""
    info = inspect_onnx(path)
    name, sample = info.first_input.name, info.sample_dims
    full = [info.batch, *sample]
    if expected_shape is not None:
        expected = tuple(expected_shape)
        fits = len(expected) == len(sample) and all(
            not isinstance(got, int) or got == want for got, want in zip(sample, expected, strict=True)
        )
        if not fits:
            raise ModelError(
                f"{path}: input '{name}' has per-sample shape {list(sample)} "
                f"(full {full}), expected {list(expected)}"
            )
    if batch is not None and isinstance(info.batch, int) and info.batch != batch:
        raise ModelError(
            f"{path}: input '{name}' has a fixed batch of {info.batch} (shape {full}), "
            f"batch {batch} was requested (shape {[batch, *sample]}); export it with a dynamic batch axis"
        )
    return info


# --------------------------------------------------------------------------- helpers

def _value_shape(value: Any) -> list[int | str | None]:
    return list(value_dims(value))


def _default_opset(proto: Any) -> int:
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return 0


def _is_torchvision(spec: ModelSpec) -> bool:
    return is_torchvision(spec.weights)


def installed_version(package: str) -> str | None:
    """The package's __version__ as importing it would give it (torch's '2.14.1+cu130', local tag included), read
    without importing it (a cache key must not cost the harness a framework's memory): from its version.py (torch,
    torchvision write one), else a literal `__version__ = "..."` in its __init__.py (onnxruntime, also installed as
    onnxruntime-gpu, whose metadata is under that other name), else its installed metadata; None when it is not
    installed."""
    import importlib.metadata
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None
    files = [Path(folder) / "version.py" for folder in spec.submodule_search_locations or ()]
    if spec.origin and spec.origin.endswith("__init__.py"):
        files.append(Path(spec.origin))
    for file in files:
        try:
            text = file.read_text()
        except OSError:
            continue
        if match := re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M):
            return match.group(1)
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None
