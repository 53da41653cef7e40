"""What differs between runs that can move a number: "my board is slow" vs "my setup differs".

Facts come from system.json (board, GPU, CPU, JetPack/L4T, CUDA, TensorRT, ONNX Runtime, torch, power mode,
clocks locked, MPS, edgebench version and commit) and from the rows (threads, execution provider, weights,
input shapes and data, ONNX file, engine cache hit or build). A fact one run does not record is "not recorded"
and listed apart: an unknown is not a match. The report lists the differences at the top and on every
cross-run table; a ratio between two runs that differ in more than one fact is labelled as confounded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgebench.results.runs import Run
from edgebench.results.store import written_by

UNKNOWN = "not recorded"


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _text(value: Any) -> str:
    if value is None or value == "" or value == {}:
        return UNKNOWN
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in sorted(value.items()) if v not in (None, ""))
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _package(name: str) -> Callable[[Run], str]:
    def get(run: Run) -> str:
        if run.system is None:
            return UNKNOWN
        version = _get(run.system, "packages", name)
        return str(version) if version else "not installed"
    return get


def _jetson(*path: str) -> Callable[[Run], str]:
    def get(run: Run) -> str:
        if run.system is None:
            return UNKNOWN
        if not _get(run.system, "jetson", "is_jetson"):
            return "n/a (not a Jetson)"
        return _text(_get(run.system, "jetson", *path))
    return get


def _gpus(run: Run) -> str:
    if run.system is None:
        return UNKNOWN
    gpus = _get(run.system, "gpus") or []
    names = [str(g.get("name", "?")) for g in gpus if isinstance(g, dict)]
    return ", ".join(names) if names else "none"


def _clocks_locked(run: Run) -> str:
    if run.system is None:
        return UNKNOWN
    if not _get(run.system, "jetson", "is_jetson"):
        return "n/a (not a Jetson)"
    state = _get(run.system, "jetson", "jetson_clocks")
    if not isinstance(state, dict):
        return UNKNOWN
    active = state.get("active", state.get("locked"))
    return _text(active) if active is not None else _text(state)


def _power_mode(run: Run) -> str:
    swept = sorted({r.get("power_mode") or "" for r in run.rows} - {""})
    if swept:
        return "swept: " + ", ".join(swept)
    if run.system is None:
        return UNKNOWN
    if not _get(run.system, "jetson", "is_jetson"):
        return "n/a (not a Jetson)"
    return _text(_get(run.system, "jetson", "nvpmodel", "name"))


def _system(*path: str) -> Callable[[Run], str]:
    def get(run: Run) -> str:
        return UNKNOWN if run.system is None else _text(_get(run.system, *path))
    return get


def _commit(run: Run) -> str:
    git = _get(run.system, "git") or {}
    commit = str(git.get("commit") or "")[:12]
    return (commit + (" (dirty)" if git.get("dirty") else "")) if commit else UNKNOWN


# run-level facts: (name, how to read it from a run)
RUN_FACTS: tuple[tuple[str, Callable[[Run], str]], ...] = (
    ("device", lambda r: r.device()),
    ("GPU(s)", _gpus),
    ("CPU", _system("cpu", "model")),
    ("usable CPU cores", _system("cpu", "usable_cores")),
    ("CPU governor", _system("cpu", "governor")),
    ("JetPack", _jetson("jetpack")),
    ("L4T", _jetson("l4t")),
    ("CUDA", _jetson("cuda")),
    ("TensorRT", _jetson("tensorrt")),
    ("tensorrt (pip)", _package("tensorrt")),
    ("onnxruntime", _package("onnxruntime")),
    ("onnxruntime-gpu", _package("onnxruntime-gpu")),
    ("torch", _package("torch")),
    ("power mode", _power_mode),
    ("clocks locked (jetson_clocks)", _clocks_locked),
    ("CUDA MPS active", _system("cuda_mps", "active")),
    ("edgebench version", lambda r: written_by(r.rows) or _text(_get(r.system, "edgebench_version"))),
    ("results.csv columns", lambda r: f"{len(r.rows[0]) - len(r.missing_columns) if r.rows else 0}"
                                      f"{' (older schema)' if r.missing_columns else ''}"),
    ("edgebench commit", _commit),
)

# row-level facts: (name, column); a run's value is every distinct non-empty value of its measured rows
ROW_FACTS: tuple[tuple[str, str], ...] = (
    ("threads per instance", "threads_per_instance"),
    ("execution provider", "provider"),
    ("weights", "weights"),
    ("input shapes", "input_shapes"),
    ("accuracy data", "accuracy_dataset"),
    ("int8 calibration data", "calibration_source"),
    ("ONNX file (sha256)", "onnx_sha256"),
    ("engine cache", "engine_cache"),
    ("power calibration", "power_calibration"),
)


def _engine_cache(value: str) -> str:
    """'hit' / 'built' per row: the reasons (paths, hashes) differ between runs even when both hit."""
    if not value:
        return ""
    return "hit" if all("hit" in part for part in value.split(";")) else "built (miss)"


def row_fact(rows: list[dict[str, Any]], column: str) -> str:
    measured = [r for r in rows if r.get("status") != "skipped"]
    cells = [("" if r.get(column) is None else str(r.get(column))) for r in measured]  # typed rows: as text
    if column == "engine_cache":
        values = {_engine_cache(c) for c in cells}
    elif column == "onnx_sha256":
        values = {f"{r.get('model')}:{c[:12]}" for r, c in zip(measured, cells) if c}
    else:
        values = set(cells)
    values.discard("")
    return "; ".join(sorted(values)) if values else UNKNOWN


def run_facts(run: Run, rows: list[dict[str, str]] | None = None) -> dict[str, str]:
    """Every fact of one run (rows: only these rows for the row-level facts, e.g. one configuration)."""
    facts = {name: get(run) for name, get in RUN_FACTS}
    for name, column in ROW_FACTS:
        facts[name] = row_fact(run.rows if rows is None else rows, column)
    return facts


@dataclass
class Difference:
    fact: str
    values: list[str]  # one per run, in run order
    unknown: bool  # some run does not record it: cannot tell whether they match


def differences(facts: list[dict[str, str]]) -> list[Difference]:
    """Facts whose value is not the same in every run; unknowns are listed with unknown=True."""
    out = []
    for name in facts[0] if facts else []:
        values = [f.get(name, UNKNOWN) for f in facts]
        known = {v for v in values if v != UNKNOWN}
        if UNKNOWN in values and len(values) > 1:
            if known:  # one run records it and another does not
                out.append(Difference(name, values, True))
            continue  # nobody records it: nothing to compare
        if len(set(values)) > 1:
            out.append(Difference(name, values, False))
    return out


def run_differences(runs: list[Run]) -> list[Difference]:
    return differences([run_facts(r) for r in runs])


def pair_label(diffs: list[Difference], compared: str | None = None) -> str:
    """How far a ratio between two setups can be read: 'same setup', 'differs only in X', or confounded."""
    known = [d.fact for d in diffs if not d.unknown]
    unknown = [d.fact for d in diffs if d.unknown]
    tail = f"; not recorded on one side: {', '.join(unknown)}" if unknown else ""
    if not known:
        return ("same setup (run-to-run variation)" if not unknown else "no recorded difference") + tail
    if len(known) == 1 or (compared is not None and known == [compared]):
        return f"differs only in {known[0]}" + tail
    return f"CONFOUNDED: differs in {len(known)} things: {', '.join(known)}" + tail


def summary_lines(runs: list[Run]) -> tuple[list[str], list[list[str]], list[str]]:
    """(intro lines, table rows [fact, value per run...], facts the runs share) for the report's top."""
    all_facts = [run_facts(r) for r in runs]
    diffs = differences(all_facts)
    rows = [[d.fact + (" (not recorded in some run)" if d.unknown else ""), *d.values] for d in diffs]
    differing = {d.fact for d in diffs}
    same = [f"{name}: {value}" for name, value in all_facts[0].items()
            if name not in differing and value != UNKNOWN] if all_facts else []
    known = [d.fact for d in diffs if not d.unknown]
    if len(runs) < 2:
        intro = ["one run: nothing to compare across runs"]
    elif not known:
        intro = ["the runs record the same setup in every fact that can move a number"
                 + (" (some facts are not recorded in every run: listed below)" if diffs else "")]
    else:
        intro = [f"the runs differ in {len(known)} fact(s) that can move a number: {', '.join(known)}",
                 "a ratio between these runs measures all of these together, not one factor"
                 if len(known) > 1 else f"a ratio between these runs measures the effect of {known[0]}"]
    return intro, rows, same
