"""Per-layer timing of a TensorRT engine (trt option `layer_profile: N`), like `trtexec --dumpProfile
--separateProfileRun`: after a row's measured window, in the sweep's own process (so never inside the window),
the engine of each placement is opened once more, a `tensorrt.IProfiler` is set on its execution context and
N inferences run synchronously through `execute_v2` (TensorRT calls `report_layer_time(layer_name, ms)` once
per layer per `execute_v2`: TensorRT 8.6 and 10 Python API docs). rows/<i>/layers.csv gets one line per
engine layer (the format, LayerRow and its reader/writer belong to results/layer_profile.py).

The layer names are TensorRT's: fused layers ("conv1 + relu1"), "Reformatting CopyNode for Input Tensor 0
to X", and a subgraph TensorRT hands to another compiler as one "{ForeignNode[first...last]}" entry: on a DLA
engine that is one DLA loadable (device DLA; its inner layers have no separate times), on a GPU engine a
Myelin subgraph (device GPU). Everything here but `profile_engine` is pure and tested on CPU with captured
profiler output (tests/fixtures/trt/profile_*.json, trtexec --exportProfile layout).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.backends.base import Placement
from edgebench.backends.trt import TrtSession
from edgebench.backends.trt_logic import parse_placement
from edgebench.backends.trt_reports import parse_inspector_json
from edgebench.errors import BackendError
from edgebench.results.layer_profile import LayerRow, write_layers_csv

# runner/probe.py writes a profile through here (the runner stage may import backends, not results)
__all__ = ["LayerTimes", "aggregate", "parse_trtexec_profile", "profile_prepared", "write_layers_csv"]


@dataclass
class LayerTimes:
    """Per-layer totals over `runs` inferences, in the order TensorRT first reported the layers."""

    runs: int = 0
    total_ms: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def add(self, layer_name: str, ms: float) -> None:
        self.total_ms[layer_name] = self.total_ms.get(layer_name, 0.0) + float(ms)
        self.calls[layer_name] = self.calls.get(layer_name, 0) + 1


def parse_trtexec_profile(text: str) -> LayerTimes:
    """trtexec --exportProfile JSON ([{"count": N}, {"name", "timeMs", "averageMs", ...}, ...]) -> LayerTimes."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BackendError(f"layer profile JSON unreadable: {exc}") from None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict) or "count" not in data[0]:
        raise BackendError("layer profile JSON: expected a list starting with {\"count\": N}")
    runs = int(data[0]["count"])
    times = LayerTimes(runs=runs)
    for item in data[1:]:
        if not isinstance(item, dict) or "name" not in item or "timeMs" not in item:
            raise BackendError(f"layer profile JSON: entry without name/timeMs: {str(item)[:80]}")
        times.total_ms[str(item["name"])] = float(item["timeMs"])
        times.calls[str(item["name"])] = runs
    return times


def is_foreign_node(name: str) -> bool:
    return name.startswith("{ForeignNode[") and name.endswith("]}")


def layer_type(name: str, inspector_types: dict[str, str]) -> str:
    """The engine inspector's LayerType where it names the layer, else what the name itself says."""
    if inspector_types.get(name):
        return inspector_types[name]
    if name.startswith("Reformatting CopyNode"):
        return "Reformat"
    if is_foreign_node(name):
        return "ForeignNode"
    return ""


def layer_device(name: str, engine_device: str) -> str:
    """DLA for a DLA engine's ForeignNode (one DLA loadable), GPU for everything else (GPU fallback layers,
    reformats between DLA and GPU, Myelin ForeignNodes of GPU engines)."""
    return "DLA" if engine_device == "dla" and is_foreign_node(name) else "GPU"


def aggregate(times: LayerTimes, engine: str, engine_device: str,
              inspector_types: dict[str, str] | None = None) -> list[LayerRow]:
    """One row per layer: mean ms per inference and its share of the engine's total (sums to 100)."""
    if times.runs <= 0:
        raise BackendError(f"layer profile of {engine}: no profiled inference")
    total = sum(times.total_ms.values())
    types = inspector_types or {}
    return [LayerRow(engine, name, layer_type(name, types), layer_device(name, engine_device),
                     ms / times.runs, 100.0 * ms / total if total > 0 else 0.0)
            for name, ms in times.total_ms.items()]


def inspector_types(inspector_json: str | None) -> dict[str, str]:
    """layer name -> LayerType from the engine inspector JSON (DETAILED verbosity), {} when absent."""
    if not inspector_json:
        return {}

    return {layer.name: layer.layer_type for layer in parse_inspector_json(inspector_json) if layer.layer_type}


# --------------------------------------------------------------------------- the TensorRT call (-m tensorrt)

def make_profiler(times: LayerTimes) -> Any:
    """A tensorrt.IProfiler that adds every report_layer_time(layer_name, ms) to `times`."""
    import tensorrt as trt

    class Collector(trt.IProfiler):
        def __init__(self) -> None:
            trt.IProfiler.__init__(self)  # TensorRT's docs: instantiate the base class explicitly

        def report_layer_time(self, layer_name: str, ms: float) -> None:
            times.add(layer_name, ms)

    return Collector()


def profile_engine(context: Any, bindings: list[int], runs: int, synchronize: Callable[[], None]) -> LayerTimes:
    """Run `runs` synchronous inferences (execute_v2) with a profiler set on `context`; the per-layer totals.
    One warm-up inference first (not counted): TensorRT allocates on the first call."""
    if runs < 1:
        raise BackendError(f"layer_profile: runs must be >= 1, got {runs}")
    if not context.execute_v2(bindings):
        raise BackendError("TensorRT execute_v2 failed (layer profile warm-up)")
    synchronize()
    times = LayerTimes()
    profiler = make_profiler(times)
    context.profiler = profiler
    try:
        for _ in range(runs):
            if not context.execute_v2(bindings):
                raise BackendError("TensorRT execute_v2 failed during the layer profile")
            times.runs += 1
    finally:
        synchronize()
    return times


def profile_prepared(prepared: Any, runs: int) -> list[LayerRow]:
    """Every engine of a prepared trt config, profiled in this process after the row's window (needs TensorRT
    and a CUDA device: runs only on a board / a TensorRT machine)."""
    import numpy as np


    rows: list[LayerRow] = []
    engines = prepared.options.get("engines", {})
    done: set[str] = set()
    for label, path in sorted(engines.items()):
        if path in done:
            continue
        done.add(path)
        target = parse_placement(label)
        session = TrtSession(prepared, Placement(device=label, instance=0))
        try:
            session.feed({n: np.zeros(session.host[n].shape, session.host[n].dtype) for n in session.inputs})
            names = [session.engine.get_tensor_name(i) for i in range(session.engine.num_io_tensors)]
            def synchronize(s: TrtSession = session) -> None:
                s.cuda.synchronize(s.stream)

            times = profile_engine(session.context, [session.buffers[n] for n in names], runs, synchronize)
        finally:
            session.close()
        rows += aggregate(times, label, target.device_type if target else "gpu", inspector_types(sidecar_inspector(Path(path))))
    return rows


def sidecar_inspector(engine_path: Path) -> str | None:
    """The engine inspector JSON kept in the engine cache's sidecar (<engine>.json), None when absent."""
    try:
        data = json.loads(Path(f"{engine_path}.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    value = data.get("inspector") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None
