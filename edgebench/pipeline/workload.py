"""A configuration's workload: what it runs on that the sweep's axes (model name, backend, precision, batch,
placement, options, load ...) do not say, so that rows pool as repeats and --resume skips a row only when it is
equal too (RunConfig.workload is in config_hash; results.csv's workload column is in answer.candidates.IDENTITY).

Each entry is a (key, text) pair, present only when it is not the model spec's own or the profile's default, so a
sweep of model specs as they are keeps the hashes its rows had before the workload existed:

  onnx         an external ONNX file's content (run --onnx, a model spec with source: onnx): sha256, 16 hex
  inputs       an external ONNX's inputs as resolved from its graph and --shapes / --batch-axis / --vocab / --value /
               --data: 'name:dtype[dims]' with N on the batch axis, then ' vocab V' or '=value', ','-joined
  shapes       a model spec's input shapes as the profile gives them (sweep.shapes, run --model --shapes), sorted
  data         real inputs (--data, a spec's data:) for the accuracy check and int8 calibration: sha256 of the .npz
               file, or of a folder's files with their names
  weights      accuracy.weights / --weights over the specs' own (a file: its name and sha256)
  dataset, labels   accuracy.dataset / accuracy.labels as given: the labelled images the accuracy columns score
  calibration  int8 rows: calibration source, samples and seed when they are not the defaults

The fixed input values and the synthetic inputs' seed are RunConfig fields of their own; the row's workload cell
writes them too (RunConfig.workload_cell).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from edgebench.config.profile import Profile
from edgebench.config.sections import CalibrationSection
from edgebench.config.shapes import parse_shapes
from edgebench.models.artifacts import file_sha256
from edgebench.models.inputs import InputDesc
from edgebench.models.spec import ModelSpec, list_models, load_model_spec

Workload = tuple[tuple[str, str], ...]
DIGEST_HEX = 16  # hex digits of a sha256 kept, as results.csv's other hashes


def content_digest(path: str | Path) -> str:
    """sha256 (16 hex) of a file's bytes, or of a folder's files (each one's path inside it and its sha256, in
    name order); a path that does not exist reads as 'missing: <path>' (the row will say why it failed)."""
    p = Path(path)
    if p.is_file():
        return file_sha256(p)[:DIGEST_HEX]
    if p.is_dir():
        h = hashlib.sha256()
        for f in sorted(q for q in p.rglob("*") if q.is_file()):
            h.update(f"{f.relative_to(p).as_posix()}\0{file_sha256(f)}\n".encode())
        return h.hexdigest()[:DIGEST_HEX]
    return f"missing: {path}"


def inputs_text(inputs: tuple[InputDesc, ...]) -> str:
    """'x:float32[Nx3x640x640],ids:int64[Nx128] vocab 30522,sr:int64[]=16000': every input as fed, N where the
    batch goes (the batch itself is an axis of its own)."""
    parts = []
    for d in inputs:
        dims = [str(n) for n in d.shape]
        if d.batch_axis is not None:
            dims.insert(d.batch_axis, "N")
        text = f"{d.name}:{d.dtype}[{'x'.join(dims)}]"
        if d.vocab is not None:
            text += f" vocab {d.vocab}"
        if d.value is not None:
            text += f"={d.value:g}" if isinstance(d.value, float) else f"={d.value}"
        parts.append(text)
    return ",".join(parts)


def shapes_text(text: str) -> str:
    """A trtexec shape text in one order: 'b:1x8,a:1x3x224x224' -> 'a:1x3x224x224,b:1x8'."""
    return ",".join(f"{name}:{'x'.join(map(str, dims))}" for name, dims in sorted(parse_shapes(text).items()))


def _weights_text(weights: str) -> str:
    p = Path(weights)
    return f"{p.name} sha256:{content_digest(p)}" if p.is_file() else weights


def model_workload(profile: Profile, model: str, spec: ModelSpec | None = None) -> Workload:
    """The workload every row of `model` shares. `spec`: the spec the sweep runs it from when the command line
    made one (run --onnx's, run --model --data's: ModelCache's onnx_specs); else the model's spec file's."""
    external = spec is not None and spec.source == "onnx"
    if spec is None and model in list_models():
        spec = load_model_spec(model)
    out: list[tuple[str, str]] = []
    if spec is not None and spec.source == "onnx" and spec.onnx_path:
        out.append(("onnx", content_digest(spec.onnx_path)))
    if external and spec is not None and spec.inputs:
        out.append(("inputs", inputs_text(spec.inputs)))
    given = (profile.sweep.shapes or {}).get(model)
    if given and not external:  # an external ONNX's shapes are in its inputs (ModelCache ignores sweep.shapes)
        out.append(("shapes", shapes_text(given)))
    if spec is not None and spec.data:
        out.append(("data", content_digest(spec.data)))
    acc = profile.accuracy
    if acc.weights and not (spec is not None and spec.source == "onnx"):  # ModelCache: an ONNX keeps its weights
        out.append(("weights", _weights_text(acc.weights)))
    if acc.dataset:
        out.append(("dataset", str(acc.dataset)))
    if acc.labels:
        out.append(("labels", str(acc.labels)))
    return tuple(sorted(out))


def with_precision(workload: Workload, profile: Profile, precision: str) -> Workload:
    """The workload of one precision's rows: int8 adds the calibration settings when they are not the defaults."""
    cal = profile.calibration
    if precision != "int8" or cal.model_dump() == CalibrationSection().model_dump():
        return workload
    return tuple(sorted((*workload, ("calibration", f"{cal.source}, {cal.samples} samples, seed {cal.seed}"))))
