"""Per configuration: the median over its repeats and its interval, with the coverage that interval really has
(answer.intervals: [min, max] of 2/3/4/5 repeats covers the median 50/75/87.5/93.8% of the time; >= 6 repeats reach
95%), and how many repeats were valid.

A configuration is every row field that decides what is measured except `repeat` (and the per-row ids), what
it ran on included (the workload column: shapes, values, data, model file ...); its repeats are the rows that
differ only by `repeat`. Only `ok` rows count as valid; a configuration with
fewer valid repeats than the run asked for (profile run.repeats) says so and names why the others are not.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from edgebench.answer.identity import IDENTITY
from edgebench.answer.intervals import LEVEL, METHOD, Interval, median_ci, percent, repeats_for
from edgebench.report.table_format import Col, Table, fmt_num, precision_rank
from edgebench.results.runs import Run

CONFIG_KEYS = IDENTITY + ("slo_ms",)  # what it ran on (answer/identity.py; written on every row, a failed one too)
METRICS = (("throughput_ips", "Throughput (img/s)"), ("latency_ms_p99", "p99 (ms)"),
           ("energy_per_inference_mj", "Energy (mJ/img)"))


def repeats_asked(run: Run) -> int | None:
    """run.repeats of the run's saved profile (None when the profile is not recorded)."""
    value = ((run.profile or {}).get("run") or {}).get("repeats")
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def interval_cell(iv: Interval, lower_bound: bool = False) -> str:
    """An interval as a table cell: '[100, 104]' when it covers >= 95%, '[100, 104] 50%' below (a ratio's coverage,
    a lower bound: '[1.8, 2.1] >=56.2%'); 'n=1, no CI' for one value, '' for none."""
    if iv.median is None:
        return ""
    if iv.lo is None or iv.hi is None:
        return "n=1, no CI"
    cell = f"[{fmt_num(iv.lo)}, {fmt_num(iv.hi)}]"
    if iv.coverage is None or iv.meets():  # None: an Interval built by hand, its coverage unknown
        return cell
    return f"{cell} {'>=' if lower_bound else ''}{iv.coverage_text()}"


CELL_NOTE = (f"an interval cell '[lo, hi]' holds the true median with >= {percent(LEVEL)} probability; '[lo, hi] 75%' "
             f"holds it with the probability shown ({percent(LEVEL)} needs >= {repeats_for()} repeats)")


def config_groups(run: Run) -> dict[tuple, list[dict[str, str]]]:
    groups: dict[tuple, list[dict[str, str]]] = defaultdict(list)
    for row in run.rows:
        if row.get("status") == "skipped":
            continue
        groups[tuple(row.get(k, "") for k in CONFIG_KEYS)].append(row)
    return groups


def shortfall(asked: int, rows: list[dict[str, str]]) -> str:
    """'' when every asked repeat is ok, else e.g. '2 of 3 valid: 1 invalid (unstable), 1 not run'."""
    ok = sum(r.get("status") == "ok" for r in rows)
    if ok >= asked:
        return ""
    why: dict[str, int] = defaultdict(int)
    for r in rows:
        if r.get("status") != "ok":
            why[f"{r.get('status')} ({r.get('reason') or 'no reason'})"] += 1  # whole: a cut reason misleads
    parts = [f"{n} {w}" for w, n in why.items()]
    if len(rows) < asked:
        parts.append(f"{asked - len(rows)} not run")
    return f"fewer valid repeats than asked: {ok} of {asked}: " + "; ".join(parts)


def repeat_records(runs: list[Run]) -> list[dict[str, Any]]:
    records = []
    for run in runs:
        asked_run = repeats_asked(run)
        for key, rows in config_groups(run).items():
            rec: dict[str, Any] = dict(zip(CONFIG_KEYS, key), run=run.label)
            rec["batch"], rec["instances"] = _int(key[3]), _int(key[4])
            asked = max(asked_run or 0, len(rows))
            ok_rows = [r for r in rows if r.get("status") == "ok"]
            rec.update(repeats_ok=len(ok_rows), repeats_asked=asked, ok_asked=f"{len(ok_rows)}/{asked}",
                       note=shortfall(asked, rows))
            for col, _header in METRICS:
                ci = median_ci([float(v) for r in ok_rows if (v := r.get(col)) is not None])
                rec[f"{col}_median"], rec[f"{col}_ci_lo"], rec[f"{col}_ci_hi"] = ci.median, ci.lo, ci.hi
                rec[f"{col}_ci_coverage"] = ci.coverage
                rec[f"{col}_text"] = ci.text()
            records.append(rec)
    records.sort(key=lambda r: (r["run"], r["model"], r["backend"], r["mode"], r["options"], r["instances"] or 0,
                                precision_rank(r["precision"]), r["batch"] or 0))
    return records


def repeats_table(runs: list[Run]) -> Table:
    records = repeat_records(runs)
    cols = [Col("run", "Run")] if len(runs) > 1 else []
    cols += [Col("model", "Model"), Col("backend", "Backend"), Col("precision", "Precision"),
             Col("batch", "Batch", True), Col("instances", "Inst.", True), Col("mode", "Mode")]
    for key, header in (("options", "Options"), ("power_mode", "Power mode")):
        if any(r.get(key) for r in records):
            cols.append(Col(key, header))
    cols.append(Col("ok_asked", "valid/asked repeats"))
    for col, header in METRICS:
        cols.append(Col(f"{col}_text", f"{header} median [interval] (coverage)"))
        cols += [Col(f"{col}_median", f"{header} median", True, csv_only=True),
                 Col(f"{col}_ci_lo", f"{header} interval low", True, csv_only=True),
                 Col(f"{col}_ci_hi", f"{header} interval high", True, csv_only=True),
                 Col(f"{col}_ci_coverage", f"{header} interval coverage (fraction)", True, csv_only=True)]
    cols.append(Col("note", "Note"))
    notes = [f"interval: {METHOD}; over the ok repeats of each configuration (rows differing only by `repeat`)",
             f"a cell says '(75% interval)' where its interval covers the median less than {percent(LEVEL)} of the "
             "time; without it the interval covers >= " + percent(LEVEL) + "; CSV: *_ci_coverage (a fraction)",
             f"n=1: one valid repeat, no interval; run with --repeats N (N >= 2 for an interval, N >= {repeats_for()} "
             f"for {percent(LEVEL)})"]
    short = sum(bool(r["note"]) for r in records)
    if short:
        notes.append(f"{short} configuration(s) have fewer valid repeats than asked (see Note)")
    return Table("repeats", "Median and its interval over repeats, per configuration (coverage stated per interval)",
                 cols, records, notes)


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
