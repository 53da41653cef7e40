"""Rows grouped into candidate configurations: what the answer layer (best, Pareto front) ranks.

A *candidate* is one configuration measured one or more times: the rows that differ only in `repeat` (and in
what a measurement gives: numbers, run id, start time). What a configuration is (answer.identity.IDENTITY,
re-exported here) is everything that changes what runs: the sweep's axes, the threads, the workload (shapes,
values, data, weights, model file ...), the inputs fed, the ONNX file, the int8 calibration data; a cell an older
results.csv does not record is unknown, pooled with other unknowns only. Two candidates whose labels would read
alike are labelled with what tells them apart (`detail`, answer.identity.tell_apart).

Its value for a metric is the median over its usable repeats (ok, with every column the answer reads) with the
median's order-statistic interval (answer.intervals, the method every report table uses). Its other measured
repeats are kept beside them: *invalid* ones (their headline could not be trusted) and ok ones that lack a column
the answer reads (*incomplete*: a p99 left empty below 662 inferences). Neither is pooled into the median, but a
limit is checked on every repeat that measured the limit's column, whatever its status (a measured violation is
a violation), and every line that names the configuration names them with why. Rows are read through the one
typed reader (results.reader via results.runs); a results.csv given as a file (not a run folder) is read the same
way and labelled by its device.

Only comparable runs are ranked together: runs are put in one *setup* when no fact that can move a number
(answer.comparability: board, GPU, CPU, versions, clocks, MPS) has two different recorded values; a fact one run
does not record is named as a caveat, never taken as a match or a mismatch.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.answer.comparability import UNKNOWN, run_facts
from edgebench.answer.identity import DETAIL_COLUMNS, IDENTITY, known_within_run, tell_apart
from edgebench.answer.intervals import Interval, median_ci
from edgebench.errors import EdgebenchError
from edgebench.placement import compact_placement
from edgebench.results.reader import read_lines_table
from edgebench.results.runs import Run, load_run, profile_name
from edgebench.results.schema import COLUMN_NAMES

# facts that split runs into setups that are not ranked together (power mode is an axis, not a setup: it is in
# IDENTITY through the row, and a run-level mode is named in the candidate's label below)
SETUP_FACTS = ("device", "GPU(s)", "CPU", "JetPack", "L4T", "CUDA", "TensorRT", "tensorrt (pip)", "onnxruntime",
               "onnxruntime-gpu", "torch", "clocks locked (jetson_clocks)", "CUDA MPS active", "weights",
               "edgebench version", "results.csv columns")
PERCENTILES = ("p99", "p95", "p90", "p50")
# inferences a latency percentile needs before a row reports it (runner.metrics.min_inferences_for: LoadGen's
# floors; report/ may not import runner/, so the four values are copied here and tested against it)
PERCENTILE_FLOORS = {"p50": 10, "p90": 64, "p95": 130, "p99": 662}
PRECISION_ORDER = ("fp32", "tf32", "bf16", "fp16", "amp", "int8")
# a number standing alone (16, 2.5, 30%), never the digits of a name (float16, p99, cuda:0, resnet50, b16)
_NUMBER = re.compile(r"(?<![\w.:])\d+(\.\d+)?(?![\w.])")


def precision_rank(precision: str) -> tuple[int, str]:
    return (PRECISION_ORDER.index(precision) if precision in PRECISION_ORDER else len(PRECISION_ORDER), precision)


@dataclass
class Candidate:
    identity: dict[str, Any]
    setup: str
    rows: list[dict[str, Any]] = field(default_factory=list)  # the usable (ok) repeats
    run_mode: str = ""  # the run-level power mode when the rows do not record one
    invalid_rows: list[dict[str, Any]] = field(default_factory=list)  # measured repeats whose headline is not trusted
    # ok repeats without a column the answer reads (a p99 too few inferences back): not pooled, limits checked
    incomplete_rows: list[dict[str, Any]] = field(default_factory=list)
    detail: list[str] = field(default_factory=list)  # what tells it from a candidate whose label reads alike
    needed: tuple[str, ...] = ()  # the columns a usable repeat has (what an incomplete one lacks some of)

    @property
    def model(self) -> str:
        return str(self.identity.get("model") or "")

    def label(self) -> str:
        """'torch fp16 b64 cuda:0', 'ort fp32 b1 2x cpu' and whatever else is set: options, power mode, load,
        sharing. The placement is named as the console names it (placement.compact_placement), which also counts
        the instances; a row with no placement recorded (an older results.csv) says `xN` instead."""
        ident = self.identity
        placement = str(ident.get("placement") or "")
        parts = [str(ident.get("backend") or ""), str(ident.get("precision") or ""), f"b{ident.get('batch')}",
                 compact_placement(placement) if placement else f"x{ident.get('instances')}"]
        if ident.get("mode") and ident.get("mode") != "process":
            parts.append(str(ident["mode"]))
        if ident.get("options"):
            parts.append(f"[{ident['options']}]")
        if ident.get("power_mode") or self.run_mode:
            parts.append(f"mode {ident.get('power_mode') or self.run_mode}")
        if ident.get("gpu_sharing") == "mps":
            parts.append("mps")
        if ident.get("scenario") and ident.get("scenario") != "closed-loop":
            rate = ident.get("rate_per_stream_hz")
            parts.append(f"{ident['scenario']}" + (f" {rate:g}Hz/stream" if isinstance(rate, float) else "")
                         + (f" {ident['arrival']}" if ident.get("arrival") else ""))
        if self.detail:
            parts.append(f"({'; '.join(self.detail)})")
        return " ".join(p for p in parts if p)

    def values(self, column: str) -> list[float]:
        """The usable repeats' values (what the median and its interval are over)."""
        return [float(r[column]) for r in self.rows if r.get(column) is not None]

    def every_value(self, column: str) -> list[tuple[float, dict[str, Any]]]:
        """(value, row) of every repeat that measured `column`, whatever its status (usable, incomplete, invalid):
        what a limit is checked on."""
        return [(float(r[column]), r) for r in [*self.rows, *self.incomplete_rows, *self.invalid_rows]
                if r.get(column) is not None]

    def lacks(self, row: dict[str, Any]) -> list[str]:
        """The columns the answer reads that `row` leaves empty."""
        return [c for c in self.needed if row.get(c) is None]

    def repeats_text(self) -> str:
        """'3 usable repeats', '1 usable repeat + 2 invalid' or '2 usable repeats + 1 ok without latency_ms_p99':
        how many repeats are behind the numbers."""
        usable = f"{len(self.rows)} usable repeat{'s' if len(self.rows) != 1 else ''}"
        lacking = sorted({c for r in self.incomplete_rows for c in self.lacks(r)})
        return (usable + (f" + {len(self.incomplete_rows)} ok without {', '.join(lacking)}"
                          if self.incomplete_rows else "")
                + (f" + {len(self.invalid_rows)} invalid" if self.invalid_rows else ""))

    def invalid_text(self, columns: list[str]) -> str:
        """One clause per measured repeat not pooled, with the values of `columns` it measured: 'repeat 2 invalid
        (p90 8.47 ms; throughput unstable across 5 sub-windows: 16% from the mean)', 'repeat 1 ok, not pooled
        (power 45 W; latency_ms_p99 empty: too few inferences for a p99 (< 662))'; '' when there is none."""
        parts = []
        for r in self.incomplete_rows:
            values = ", ".join(value_text(c, float(r[c])) for c in columns if r.get(c) is not None)
            why = "; ".join(f"{c} empty: {empty_reason(r, c, keep_numbers=True)}" for c in self.lacks(r))
            parts.append(f"repeat {r.get('repeat')} ok, not pooled ({values + '; ' if values else ''}{why})")
        for r in self.invalid_rows:
            values = ", ".join(value_text(c, float(r[c])) for c in columns if r.get(c) is not None)
            why = str(r.get("reason") or "no reason recorded")
            parts.append(f"repeat {r.get('repeat')} invalid ({values + '; ' if values else ''}{why})")
        return "; ".join(parts)

    def interval(self, column: str) -> Interval:
        return median_ci(self.values(column))

    def power_scope(self) -> str:
        scopes = sorted({str(r.get("power_scope")) for r in self.rows if r.get("power_scope")})
        return "+".join(scopes) if scopes else "not recorded"

    def sort_key(self) -> tuple:
        ident = self.identity
        return (self.model, str(ident.get("backend")), precision_rank(str(ident.get("precision") or "")),
                ident.get("batch") or 0, ident.get("instances") or 0, str(ident.get("placement")),
                str(ident.get("options")), str(ident.get("power_mode")),
                *(str(ident.get(k)) for k in DETAIL_COLUMNS))


# ------------------------------------------------------------------------------------ reading


def load_source(path: Path | str) -> Run:
    """A run folder (results.csv, system.json, profile.yaml) or a results.csv file on its own (the report's
    published grids are single CSVs): read by the one typed reader, rows of an older schema get the missing
    columns empty."""
    path = Path(path)
    if path.is_dir():
        return load_run(path)
    if path.name == "results.csv" and (path.parent / "system.json").is_file():
        return load_run(path.parent)  # the results.csv of a run folder: read with its system.json
    if not path.is_file():
        raise EdgebenchError(f"{path}: neither a run folder nor a results.csv file")
    names, read, notes = read_lines_table(path, required=("model", "backend", "precision", "batch", "status"))
    rows = [{c: None for c in COLUMN_NAMES} | r for r in read]
    run = Run(path=path, rows=rows, notes=notes, missing_columns=[c for c in COLUMN_NAMES if c not in names])
    notes.append(f"{path.name}: a results.csv without its run folder: system.json (versions, board) not recorded")
    return run


def load_sources(paths: list[Path | str]) -> list[Run]:
    runs = [load_source(p) for p in paths]
    for run in runs:
        prof = profile_name(run)
        name = prof or (run.path.name if run.path.is_file() else run.path.name)
        run.label = f"{name} on {run.device()}"
    return runs


# ------------------------------------------------------------------------------------ setups


@dataclass
class Setup:
    label: str
    runs: list[Run]
    caveats: list[str] = field(default_factory=list)  # facts some run does not record


def _facts(run: Run) -> dict[str, str]:
    facts = run_facts(run)
    return {k: facts.get(k, UNKNOWN) for k in SETUP_FACTS}


def _clash(a: dict[str, str], b: dict[str, str]) -> list[str]:
    return [k for k in SETUP_FACTS if a[k] != UNKNOWN and b[k] != UNKNOWN and a[k] != b[k]]


def setups(runs: list[Run]) -> tuple[list[Setup], list[str]]:
    """(runs grouped into comparable setups, one line per split saying which facts differ). A run joins the first
    setup none of whose runs records a different value of a setup fact."""
    groups: list[tuple[list[Run], list[dict[str, str]]]] = []
    splits: list[str] = []
    for run in runs:
        facts = _facts(run)
        for members, member_facts in groups:
            clashes = [c for f in member_facts for c in _clash(facts, f)]
            if not clashes:
                members.append(run)
                member_facts.append(facts)
                break
        else:
            for members, member_facts in groups:
                diff = sorted({c for f in member_facts for c in _clash(facts, f)})
                splits.append(f"{run.label} is not ranked with {members[0].label}: they differ in "
                              + ", ".join(f"{k} ({member_facts[0][k]} vs {facts[k]})" for k in diff))
            groups.append(([run], [facts]))
    devices = [members[0].device() for members, _ in groups]
    out = []
    for i, (members, member_facts) in enumerate(groups):
        label = devices[i] if devices.count(devices[i]) == 1 else f"{devices[i]} (setup {i + 1})"
        # a fact one run records and another does not: they may differ there, nobody can tell
        caveats = sorted(k for k in SETUP_FACTS if {f[k] == UNKNOWN for f in member_facts} == {True, False})
        out.append(Setup(label, members, caveats))
    return out, splits


# ------------------------------------------------------------------------------------ candidates


@dataclass
class LeftOut:
    """Rows not ranked, counted by why. `counts` is keyed by the cause with a row's own numbers as N ('invalid:
    throughput unstable across N sub-windows: N% from the mean'), so equal causes count together; what is printed
    is the first such row's reason verbatim, never rewritten."""
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    examples: dict[str, str] = field(default_factory=dict)  # key -> the first row's words, verbatim

    def add(self, why: str, verbatim: str | None = None) -> None:
        self.counts[why] += 1
        self.examples.setdefault(why, verbatim if verbatim is not None else why)

    def total(self) -> int:
        return sum(self.counts.values())

    def lines(self) -> list[str]:
        out = []
        for why, n in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])):
            example = self.examples.get(why, why)
            alike = f" (and {n - 1} more of this cause)" if n > 1 and example != why else ""
            out.append(f"{n} row(s): {example}{alike}")
        return out


def _short_reason(text: str) -> str:
    """The first clause of a row's reason (numbers of one row cut off, so equal causes count together)."""
    text = _NUMBER.sub("N", (text or "no reason given").split(";")[0].strip())
    return text if len(text) <= 90 else text[:87] + "..."


def empty_reason(row: dict[str, Any], column: str, keep_numbers: bool = False) -> str:
    """Why `column` is empty in this row, from its empty_reasons cell, else 'not recorded'. The cell's reason is cut
    to its first clause with numbers as N (so equal causes count together), or, with `keep_numbers`, given whole."""
    for part in str(row.get("empty_reasons") or "").split("; "):
        names, _, why = part.partition(": ")
        if column in [n.strip() for n in names.split(",")]:
            return why.strip() if keep_numbers and why else _short_reason(why)
    if column.startswith("latency_ms_p") and isinstance(row.get("inferences"), int):
        floor = PERCENTILE_FLOORS.get(column.removeprefix("latency_ms_"))
        if floor is not None and row["inferences"] < floor:
            return f"too few inferences for a {column.removeprefix('latency_ms_')} (< {floor})"
    source = str(row.get("energy_source") or "")
    if column in ("power_w_mean", "energy_per_inference_mj", "energy_j") and source.startswith("none:"):
        return _short_reason(source.removeprefix("none:").strip())
    return "why not recorded in the row"


def value_text(column: str, value: float) -> str:
    """'p90 8.47 ms', 'power 41.2 W', 'accuracy drop 1.5 pp', 'throughput_ips 812.3'."""
    unit = {"power_w_mean": " W", "accuracy_drop_pct": " pp"}.get(
        column, " ms" if column.startswith("latency_ms") else "")
    name = {"accuracy_drop_pct": "accuracy drop", "power_w_mean": "power"}.get(
        column, column.replace("latency_ms_", ""))
    return f"{name} {value:.4g}{unit}"


def candidates(runs: list[Run], setup_label: str, needed: tuple[str, ...], left_out: LeftOut,
               model: str | None = None) -> list[Candidate]:
    """Candidates of one setup's runs: ok rows with every `needed` column set, grouped by IDENTITY, each with its
    other measured repeats beside them (Candidate.invalid_rows, .incomplete_rows: checked against limits, never
    pooled). A configuration with no usable row is not a candidate. Every row not pooled is counted in `left_out`
    with why (its status and reason, or the empty column and why it is empty). Candidates whose labels would read
    alike get the detail that tells them apart."""
    by_key: dict[tuple, Candidate] = {}
    invalid: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    incomplete: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        run_mode = "" if run.system is None else str(
            ((run.system.get("jetson") or {}).get("nvpmodel") or {}).get("name") or "")
        for row in known_within_run(run.rows):
            if model is not None and row.get("model") != model:
                continue
            status = row.get("status") or ""
            key = tuple(row.get(k) for k in IDENTITY)
            if status != "ok":
                reason = str(row.get("reason") or "")
                left_out.add(f"{status or 'no status'}: {_short_reason(reason)}",
                             f"{status or 'no status'}: {reason or 'no reason given'}")
                if status == "invalid":
                    invalid[key].append(row)
                continue
            missing = next((c for c in needed if row.get(c) is None), None)
            if missing is not None:
                left_out.add(f"{missing} empty: {empty_reason(row, missing)}",
                             f"{missing} empty: {empty_reason(row, missing, keep_numbers=True)}")
                incomplete[key].append(row)  # measured: its other columns still meet the limits or break them
                continue
            cand = by_key.get(key)
            if cand is None:
                cand = by_key[key] = Candidate({k: row.get(k) for k in IDENTITY}, setup_label, run_mode=run_mode,
                                               needed=needed)
            cand.rows.append(row)
    for key, cand in by_key.items():
        cand.invalid_rows = invalid.get(key, [])
        cand.incomplete_rows = incomplete.get(key, [])
    out = sorted(by_key.values(), key=Candidate.sort_key)
    set_details(out)
    return out


def set_details(cands: list[Candidate]) -> None:
    """Give each candidate whose label reads like another's (same model and setup) the identity parts that
    tell them apart (answer.identity.tell_apart)."""
    groups: dict[tuple[str, str, str], list[Candidate]] = defaultdict(list)
    for c in cands:
        c.detail = []
        groups[(c.setup, c.model, c.label())].append(c)
    for group in groups.values():
        if len(group) > 1:
            for c, parts in zip(group, tell_apart([c.identity for c in group])):
                c.detail = parts
