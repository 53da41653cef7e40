"""rows/<i>/layers.csv: the per-layer TensorRT profile of a row (trt option `layer_profile: N`), its format.

One line per engine layer: engine (the placement label the engine was built for), layer (TensorRT's name),
type (the engine inspector's LayerType, or what the name says), device (GPU or DLA), time_ms (mean per
inference), share_pct (of that engine's total). The backend that profiles (backends/trt_layers.py) writes it
through `write_layers_csv`; the report (report/layers.py) reads it through `read_layers_csv`. The format
belongs here, with the row's other files, so the reading side never depends on a backend.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

LAYERS_CSV_COLUMNS = ("engine", "layer", "type", "device", "time_ms", "share_pct")


@dataclass(frozen=True)
class LayerRow:
    """One layer of one engine: mean ms per inference and its share of the engine's total."""

    engine: str
    layer: str
    type: str
    device: str
    time_ms: float
    share_pct: float


def top_layers(rows: Iterable[LayerRow], n: int) -> list[LayerRow]:
    """The n slowest layers, slowest first."""
    return sorted(rows, key=lambda r: r.time_ms, reverse=True)[:n]


def write_layers_csv(rows: list[LayerRow], path: Path) -> None:
    """Write the file whole (a temp name renamed when complete)."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(LAYERS_CSV_COLUMNS)
        for r in rows:
            w.writerow([r.engine, r.layer, r.type, r.device, f"{r.time_ms:.6g}", f"{r.share_pct:.4f}"])
    tmp.replace(path)


def read_layers_csv(path: Path) -> list[LayerRow]:
    with open(path, newline="") as fh:
        return [LayerRow(d["engine"], d["layer"], d["type"], d["device"], float(d["time_ms"]), float(d["share_pct"]))
                for d in csv.DictReader(fh)]
