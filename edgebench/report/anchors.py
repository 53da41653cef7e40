"""Reference anchors: published results (references/*.yaml, each with its provenance) beside matching rows.

"My board is slow" or "my setup differs"? An anchor is one published number (e.g. NVIDIA's MLPerf Inference
v3.1 closed ResNet-50 Offline throughput on a Jetson AGX Orin) with the setup it was measured in. A row
matches an anchor only when the model, backend, board and scenario shape match (`match:`); it is then set
beside the anchor with every setup difference listed (JetPack, L4T, TensorRT, CUDA, precision, accelerators,
power mode, weights). Runs with no matching row get one line saying what an anchor needs, never a comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import EdgebenchError
from edgebench.report.table_format import Col, Table
from edgebench.results.runs import Run

REFERENCES_DIR = Path(__file__).resolve().parent.parent.parent / "references"


@dataclass
class Anchor:
    id: str
    benchmark: str
    model: str
    scenario: str
    metric: str
    value: float
    unit: str
    match: dict[str, Any]
    setup: dict[str, str]
    provenance: dict[str, str]
    system: str = ""
    source_file: str = ""


@dataclass
class AnchorMatch:
    anchor: Anchor
    run: Run
    row: dict[str, str]
    measured: float
    differences: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.measured / self.anchor.value


def load_anchors(directory: Path = REFERENCES_DIR) -> list[Anchor]:
    import yaml

    anchors = []
    for path in sorted(Path(directory).glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise EdgebenchError(f"{path}: unreadable reference file ({exc})") from None
        for i, entry in enumerate(data.get("anchors") or []):
            where = f"{path}: anchors[{i}]"
            missing = [k for k in ("id", "model", "scenario", "metric", "value", "provenance") if k not in entry]
            if missing:
                raise EdgebenchError(f"{where}: missing {', '.join(missing)}")
            if not isinstance(entry["value"], (int, float)):
                raise EdgebenchError(f"{where}.value: expected a number, got {entry['value']!r}")
            anchors.append(Anchor(
                id=str(entry["id"]), benchmark=str(entry.get("benchmark", "")), model=str(entry["model"]),
                scenario=str(entry["scenario"]), metric=str(entry["metric"]), value=float(entry["value"]),
                unit=str(entry.get("unit", "")), match=dict(entry.get("match") or {}),
                setup={k: str(v) for k, v in (entry.get("setup") or {}).items()},
                provenance={k: str(v) for k, v in (entry.get("provenance") or {}).items()},
                system=str(entry.get("system", "")), source_file=path.name))
    return anchors


def _board(run: Run) -> str:
    system = run.system or {}
    return " ".join(str(x) for x in (run.device(), (system.get("board") or {}).get("model", ""),
                                     (system.get("jetson") or {}).get("board_model", "")) if x)


def why_not(anchor: Anchor, run: Run, row: dict[str, str]) -> str | None:
    """None when the row's setup matches the anchor's shape, else the first reason it does not."""
    if row.get("status") != "ok":
        return f"row status {row.get('status')}"
    if row.get("model") != anchor.model:
        return f"model {row.get('model')} (anchor: {anchor.model})"
    m = anchor.match
    if m.get("backend") and row.get("backend") != m["backend"]:
        return f"backend {row.get('backend')} (anchor: {m['backend']})"
    boards = m.get("board_contains") or []
    if boards and not any(b.lower() in _board(run).lower() for b in boards):
        return f"board {run.device()} (anchor: {' or '.join(boards)})"
    for key in ("batch", "instances"):
        if key in m and row.get(key) != float(m[key]):
            return f"{key} {row.get(key)} (anchor: {m[key]})"
    if row.get("scenario") not in ("", "closed-loop"):
        return f"scenario {row.get('scenario')} (anchors are closed-loop shapes)"
    if row.get(anchor.metric) is None:
        return f"no {anchor.metric} in the row"
    return None


def setup_differences(anchor: Anchor, run: Run, row: dict[str, str]) -> list[str]:
    """Every setup fact of the row that differs from (or cannot be checked against) the anchor's."""
    jetson = (run.system or {}).get("jetson") or {}
    trt = jetson.get("tensorrt")
    trt_text = " ".join(str(v) for v in trt.values() if v) if isinstance(trt, dict) else str(trt or "")
    mine = {
        "jetpack": str(jetson.get("jetpack") or ""), "l4t": str(jetson.get("l4t") or ""),
        "tensorrt": trt_text, "cuda": str(jetson.get("cuda") or ""),
        "precision": row.get("precision") or "", "accelerators": row.get("placement") or "",
        "power_mode": row.get("power_mode") or str(((jetson.get("nvpmodel") or {}).get("name")) or ""),
    }
    out = []
    for key, theirs in anchor.setup.items():
        ours = mine.get(key, "")
        if theirs.startswith("not stated"):
            out.append(f"{key}: row {ours or 'not recorded'}; anchor {theirs}")
        elif not ours:
            out.append(f"{key}: not recorded in this run (anchor {theirs})")
        elif theirs.lower() not in ours.lower() and ours.lower() not in theirs.lower():
            out.append(f"{key}: {ours} vs anchor {theirs}")
    weights = row.get("weights") or ""
    if weights.startswith("random-init") or not weights:
        out.append(f"weights: {weights or 'not recorded'} (anchor: trained weights; accuracy not comparable, "
                   "speed is)")
    return out


def match_anchors(runs: list[Run], anchors: list[Anchor]) -> tuple[list[AnchorMatch], list[str]]:
    """(one match per anchor and run: the best ok row for a throughput anchor, the lowest latency for a latency
    anchor; lines for anchors no row matches, with the closest reason)."""
    matches: list[AnchorMatch] = []
    unmatched: list[str] = []
    for anchor in anchors:
        found = False
        reasons: dict[str, int] = {}
        for run in runs:
            candidates = []
            for row in run.rows:
                why = why_not(anchor, run, row)
                if why is None:
                    candidates.append(row)
                else:
                    reasons[why] = reasons.get(why, 0) + 1
            if not candidates:
                continue
            lower_better = anchor.metric.startswith("latency")
            pick = (min if lower_better else max)(candidates, key=lambda r: r.get(anchor.metric) or 0.0)
            value = pick.get(anchor.metric)
            assert value is not None
            matches.append(AnchorMatch(anchor, run, pick, value, setup_differences(anchor, run, pick)))
            found = True
        if not found:
            common = sorted(reasons.items(), key=lambda kv: -kv[1])[:2]
            unmatched.append(f"{anchor.id}: no matching row (needs {anchor.model} on {anchor.match.get('backend', '?')} "
                             f"on a {' or '.join(anchor.match.get('board_contains') or ['?'])}"
                             + (f", batch {anchor.match['batch']}" if "batch" in anchor.match else "")
                             + (f", {anchor.match['instances']} instance" if "instances" in anchor.match else "")
                             + "); rows here: " + ("; ".join(f"{w} ({n})" for w, n in common) or "none") + ")")
    return matches, unmatched


def anchors_table(matches: list[AnchorMatch]) -> Table:
    records = []
    for m in matches:
        a = m.anchor
        records.append({
            "anchor": a.id, "benchmark": f"{a.benchmark} ({a.scenario})", "metric": a.metric,
            "anchor_value": a.value, "measured": m.measured, "ratio": m.ratio, "run": m.run.label,
            "row_index": m.row.get("row_index", ""),
            "row": f"{m.row.get('precision')} b{m.row.get('batch')} x{m.row.get('instances')} {m.row.get('placement')}",
            "setup_differences": "; ".join(m.differences) or "none recorded",
            "source": f"{a.provenance.get('repository', '')}@{a.provenance.get('commit', '')[:12]}: "
                      f"{a.provenance.get('result_file', '')}",
        })
    cols = [Col("anchor", "Anchor"), Col("benchmark", "Published"), Col("metric", "Metric"),
            Col("anchor_value", "Published value", True), Col("measured", "This row", True),
            Col("ratio", "Row / published (x)", True), Col("run", "Run"), Col("row", "Row"),
            Col("setup_differences", "Setup differences"), Col("source", "Source")]
    notes = ["a row is set beside an anchor only when model, backend, board and scenario shape match; the setup "
             "differences say what else differs (a ratio far from 1 with differences listed is not 'a slow board')"]
    return Table("anchors", "Published reference results beside matching rows", cols, records, notes)
