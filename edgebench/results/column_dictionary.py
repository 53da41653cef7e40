"""The column dictionary of results.csv (name, unit, type, counted per sample or per batch, meaning), generated
from the schema and written into every run folder (columns.csv, columns.md) and every report.

The schema says that counting is "the one thing to get right when citing a row": an *inference* is one batch,
a *sample* one input. `counts_per` states it for every column it matters for. It is derived from the schema
where the schema says it (unit samples/s, a description naming "one batch" or "per input sample"), and from
the short list below where the schema does not (counts of inferences per second, energy per sample columns).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from edgebench.results.schema import COLUMNS, REQUIRED, Column

DICTIONARY_CSV = "columns.csv"
DICTIONARY_MD = "columns.md"
PER_SAMPLE = "per sample"
PER_BATCH = "per batch (one inference)"
PER_WINDOW = "over the window"
# where the schema's words do not say it: columns counting inferences (batches) per second, energies per sample
_PER: dict[str, str] = {
    "rate_per_stream_hz": PER_BATCH, "offered_rate_hz": PER_BATCH, "achieved_rate_hz": PER_BATCH,
    "queue_ms_p99": PER_BATCH, "service_ms_p50": PER_BATCH, "slo_ms": PER_BATCH, "inferences": PER_BATCH,
    "samples": PER_SAMPLE, "energy_per_inference_mj": PER_SAMPLE,
    "energy_per_inference_dynamic_mj": PER_SAMPLE, "energy_per_inference_calibrated_mj": PER_SAMPLE,
    "power_w_mean": PER_WINDOW, "power_w_max": PER_WINDOW, "energy_j": PER_WINDOW, "window_s": PER_WINDOW,
    "power_w_mean_calibrated": PER_WINDOW,
}


@dataclass(frozen=True)
class Entry:
    name: str
    unit: str
    type: str
    counts_per: str  # PER_SAMPLE, PER_BATCH, PER_WINDOW or "" (not a count, rate or time of inferences)
    required: bool
    meaning: str


def counts_per(col: Column) -> str:
    if col.name in _PER:
        return _PER[col.name]
    words = col.description.lower()
    if col.unit == "samples/s" or "per input sample" in words:
        return PER_SAMPLE
    if col.name.startswith("latency_ms_") or "(one batch)" in words or "one inference (one batch)" in words:
        return PER_BATCH
    return ""


def entries() -> list[Entry]:
    return [Entry(c.name, c.unit, c.type.__name__, counts_per(c), c.name in REQUIRED, c.description)
            for c in COLUMNS]


def to_csv() -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["name", "unit", "type", "counts_per", "required", "meaning"])
    for e in entries():
        w.writerow([e.name, e.unit, e.type, e.counts_per, "yes" if e.required else "", e.meaning])
    return buf.getvalue()


def to_markdown() -> str:
    lines = ["# results.csv columns", "",
             "One row = one configuration measured once. An *inference* is one call of the model on one batch; a "
             "*sample* is one input (one image). `throughput_ips` and `energy_per_inference_mj` count samples; "
             "`inferences` and every `latency_ms_*` count batches. An empty cell means not measured, never 0.", "",
             "| column | unit | type | counts per | meaning |", "|---|---|---|---|---|"]
    for e in entries():
        name = f"**{e.name}**" if e.required else e.name
        lines.append(f"| {name} | {e.unit} | {e.type} | {e.counts_per} | {e.meaning.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def write_dictionary(folder: Path) -> list[Path]:
    """columns.csv and columns.md into `folder` (a run folder or a report)."""
    paths = [folder / DICTIONARY_CSV, folder / DICTIONARY_MD]
    paths[0].write_text(to_csv())
    paths[1].write_text(to_markdown())
    return paths
