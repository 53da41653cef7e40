"""How long an int8 row's calibration and quantization will take, before it runs (issue 37).

The first int8 row of a model builds its QDQ file: ONNX Runtime runs every calibration sample through a graph that
outputs every tensor (MinMax keeps each one's range), then quantizes the weights and rewrites the graph
(models/precision.py). That is set-up the window never shows (an int8 row estimated at 7-36 s took 2 min 06 s).
The estimate, in this order:

1. an int8 file of the model already in the artifact cache, made from as many calibration samples: reused, 0 s;
2. one made from another count: its measured `quantize_s` (the sidecar's), scaled by samples / its samples;
3. the rule QUANTIZE_FIXED_S + samples x activations (M values per sample, every tensor of the fp32 graph by ONNX
   shape inference, unknown axes counted as 1) x S_PER_SAMPLE_MACT + weights (MB) x S_PER_WEIGHT_MB, the --onnx
   file's or the model's exported ONNX in the cache. Its constants fit two builds on a 2-core AMD EPYC (ONNX
   Runtime, 32 samples): resnet18 (5.75 M activations, 47 MB: 6.6 s) and mobilenet_v2 (13.0 M, 14 MB: 10.4 s);
   tiny_cnn and small_cnn took 0.6 s, the fixed part. Without a file to read, DEFAULT_QUANTIZE_S.

It is paid once per model and calibration set (backends and batches share the file), so the estimate adds it to
the plan's first int8 row of the model that has no earlier int8 row of the same model/backend to time it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUANTIZE_FIXED_S = 0.6  # pre-processing, graph rewrite and load check of a tiny model (tiny_cnn: 0.66 s)
S_PER_SAMPLE_MACT = 0.0222  # per calibration sample and million activation values (fit, see above)
S_PER_WEIGHT_MB = 0.0406  # per MB of fp32 weights (per-channel quantization; fit, see above)
DEFAULT_QUANTIZE_S = 10.0  # no file to read: a mid-size CNN here (mobilenet_v2: 10.4 s)
MB = 1e6


@dataclass(frozen=True)
class QuantizeRecord:
    """One int8 file in the artifact cache: how long its build took, from how many samples, of how big an fp32."""

    model: str
    samples: int
    quantize_s: float
    fp32_mb: float | None


@dataclass(frozen=True)
class CalibrationEstimate:
    seconds: float
    basis: str  # how: 'cached', 'measured', 'rule', 'default'


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _size_mb(path: Any) -> float | None:
    try:
        return Path(str(path)).stat().st_size / MB
    except (OSError, ValueError):
        return None


def cached_quantizations(cache_root: Path | str | None) -> list[QuantizeRecord]:
    """The int8 files of the artifact cache whose sidecars say how long they took (older ones do not)."""
    if cache_root is None or not (Path(cache_root) / "int8").is_dir():
        return []
    out = []
    for sidecar in sorted((Path(cache_root) / "int8").glob("*/*.json")):
        data = _read_json(sidecar)
        if not data or data.get("quantize_s") is None:
            continue
        calibration = data.get("calibration")
        calibration = calibration if isinstance(calibration, dict) else {}
        samples = calibration.get("count") or calibration.get("samples")
        if not samples:
            continue
        fp32 = data.get("source_fp32")
        fp32 = fp32 if isinstance(fp32, dict) else {}
        out.append(QuantizeRecord(str(data.get("model")), int(samples), float(data["quantize_s"]),
                                  _size_mb(fp32.get("path"))))
    return out


def fp32_files(cache_root: Path | str | None) -> dict[str, str]:
    """Model name -> its exported fp32 ONNX in the artifact cache (the newest, when several)."""
    if cache_root is None or not (Path(cache_root) / "onnx").is_dir():
        return {}
    found: list[tuple[float, str, str]] = []
    for sidecar in (Path(cache_root) / "onnx").glob("*/*.json"):
        data = _read_json(sidecar)
        onnx_file = sidecar.with_suffix("")
        if data and data.get("model") and onnx_file.is_file():
            found.append((onnx_file.stat().st_mtime, str(data["model"]), str(onnx_file)))
    return {model: path for _, model, path in sorted(found)}


def activations_m(onnx_path: str) -> float | None:
    """Million values per sample over every tensor of the graph (ONNX shape inference; an unknown axis counts as
    1, so a graph with symbolic spatial axes is under-counted); None when the file cannot be read."""
    try:
        import onnx

        model = onnx.shape_inference.infer_shapes(onnx.load(onnx_path, load_external_data=False))
    except Exception:  # noqa: BLE001 - an estimate never stops a sweep
        return None
    total = 0
    for info in (*model.graph.value_info, *model.graph.output):
        count = 1
        for dim in info.type.tensor_type.shape.dim:
            count *= dim.dim_value if dim.dim_value > 0 else 1
        total += count
    return total / 1e6


class CalibrationBook:
    """The cache's int8 builds, looked up per model; the fp32 files of models without one."""

    def __init__(self, cache_root: Path | str | None, model_files: dict[str, str] | None = None) -> None:
        self.records = cached_quantizations(cache_root)
        self.files = fp32_files(cache_root)
        self.files.update(model_files or {})  # an --onnx file: its own

    def estimate(self, model: str, samples: int) -> CalibrationEstimate:
        own = [r for r in self.records if r.model == model]
        if any(r.samples == samples for r in own):
            return CalibrationEstimate(0.0, "cached")
        if own:
            closest = min(own, key=lambda r: abs(r.samples - samples))
            return CalibrationEstimate(closest.quantize_s * samples / closest.samples, "measured")
        path = self.files.get(model)
        acts = activations_m(path) if path else None
        size = _size_mb(path) if path else None
        if acts is None or size is None:
            return CalibrationEstimate(DEFAULT_QUANTIZE_S, "default")
        return CalibrationEstimate(QUANTIZE_FIXED_S + samples * acts * S_PER_SAMPLE_MACT + size * S_PER_WEIGHT_MB,
                                   "rule")
