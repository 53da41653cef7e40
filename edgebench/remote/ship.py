"""ONNX for a board without torch: export here, ship the files, point the board's model specs at them.

The board's copy of models/<name>.yaml is replaced by a spec with `source: onnx` and the same name,
input and output, whose `onnx_path` is the shipped file. `edgebench bench` on the board then takes the
external-ONNX path (validated, imported into the board's own cache by content hash, no torch needed);
fp16 and int8 variants are still built on the board from that file (onnx + ONNX Runtime). Rows from
such a board say `weights = from-onnx`, and the spec's description names the export it came from.

(Shipping this machine's cache instead would not work: the export cache key contains the torch
version, which a board without torch cannot compute.)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebench.commands.options import apply_overrides, parse_bench_args
from edgebench.config.profile import load_profile
from edgebench.models import export  # module-qualified: tests stand in for export_onnx
from edgebench.models.artifacts import Artifacts
from edgebench.models.spec import load_model_spec

SHIP_DIR = ".edgebench-remote/onnx"  # on the board, relative to the remote folder
# boards run in parallel threads; two exports of the same model into one cache folder at once would see each
# other's temporary files (export_onnx refuses "extra files"), and torch's exporters are not thread-safe
_EXPORT_LOCK = threading.Lock()


@dataclass(frozen=True)
class Shipment:
    """Files to copy to the board: staging/onnx/*.onnx and staging/models/*.yaml."""

    staging: Path
    models: list[str]


def sweep_models(bench_args: list[str]) -> list[str]:
    """The models the sweep of `edgebench bench <bench_args>` would run, resolved here (same project)."""

    args = parse_bench_args(bench_args)
    profile = apply_overrides(load_profile(args.device or "host"), args)
    return list(profile.sweep.models)


def export_for_board(models: list[str], remote_abs_dir: str, staging: Path, cache_root: str | None) -> Shipment:
    """Export every model here and write the board's replacement specs into `staging`."""
    import yaml


    cache = Artifacts(cache_root)
    (staging / "onnx").mkdir(parents=True, exist_ok=True)
    (staging / "models").mkdir(parents=True, exist_ok=True)
    for name in models:
        spec = load_model_spec(name)
        with _EXPORT_LOCK:  # one export at a time; the second board then finds it in the cache
            art = export.export_onnx(spec, cache)
        (staging / "onnx" / f"{name}.onnx").write_bytes(art.path.read_bytes())
        data: dict[str, Any] = {
            "name": name,
            "description": (f"exported off-board by edgebench remote from models/{name}.yaml "
                            f"({spec.source} {spec.arch or ''}, weights {spec.weights_label}, "
                            f"sha256 {art.sha256[:16]})"),
            "source": "onnx",
            "onnx_path": f"{remote_abs_dir}/{SHIP_DIR}/{name}.onnx",
            # the board resolves the inputs from the graph; the first one's keys say what it will find
            **({"input_shape": list(spec.first_input.shape), "input_name": spec.first_input.name,
                "input_dtype": spec.first_input.dtype} if spec.inputs else {}),
            "output_name": spec.output_name,
            "num_classes": spec.num_classes,
            "dynamic_batch": spec.dynamic_batch,
            "opset": spec.opset,
            "parity_atol": spec.parity_atol,
        }
        vocabs = [d.vocab for d in spec.inputs if d.vocab]
        if spec.vocab or vocabs:  # token-id inputs: the board resolves them from the graph and needs the vocabulary
            data["vocab"] = spec.vocab or vocabs[0]
        if spec.outputs:
            data["outputs"] = list(spec.outputs)
        fixed = {d.name: d.value for d in spec.inputs if d.value is not None}
        if fixed:  # fixed input values (a sample rate): the board feeds the same constants
            data["values"] = fixed
        axes = {d.name: d.batch_axis for d in spec.inputs if d.batch_axis != 0}
        if axes:  # inputs whose batch is not axis 0 (a state) or that have none: the board's plan must agree
            data["batch_axis"] = axes
        (staging / "models" / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return Shipment(staging, list(models))
