"""Speedup of each precision over strict FP32, per batch, with the spread over repeats.

Input: result rows (results.csv of one or more runs). Only `ok` rows count; how many repeats were
ok is in the table, so a precision with failed/invalid repeats is visible, not silently averaged.
Speedup = median throughput of the precision / median throughput of fp32 for the same model,
backend, batch, instances, mode, placement and options. Its range is the most pessimistic and most
optimistic pairing of the repeats: min(p)/max(fp32) .. max(p)/min(fp32); its confidence interval is a
bootstrap of the ratio of medians (report/intervals.py), as is the interval of the median throughput.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from edgebench.report.intervals import median_ci, ratio_ci
from edgebench.results.reader import read_table, typed_row

# power_mode (Jetson nvpmodel): rows of different power modes are different configurations, not repeats
GROUP_KEYS = ("model", "backend", "batch", "instances", "mode", "placement", "options", "power_mode")
COLUMNS = (*GROUP_KEYS, "precision", "repeats_ok", "repeats_all", "throughput_ips_median", "throughput_ips_min",
           "throughput_ips_max", "throughput_ips_ci_lo", "throughput_ips_ci_hi", "speedup_vs_fp32", "speedup_min",
           "speedup_max", "speedup_ci_lo", "speedup_ci_hi", "tensor_core_time_pct_median",
           "energy_per_inference_mj_median")
BASELINE = "fp32"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _key(value: Any) -> str:
    return "" if value is None else str(value)


def speedup_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records of the speedup table from result rows (typed, or text cells: results.reader.typed_row reads both)."""
    groups: dict[tuple, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in map(typed_row, rows):
        if row.get("status") == "skipped":
            continue
        key = tuple(_key(row.get(k)) for k in GROUP_KEYS)
        groups[key][str(row["precision"])].append(row)
    out = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], int(k[2] or 0), int(k[3] or 0), *k[4:])):
        by_prec = groups[key]
        base = [t for r in by_prec.get(BASELINE, []) if r.get("status") == "ok"
                and (t := r.get("throughput_ips")) is not None]
        for precision, prows in by_prec.items():
            ok = [r for r in prows if r.get("status") == "ok"]
            tput = [t for r in ok if (t := r.get("throughput_ips")) is not None]
            tc = [v for r in ok if (v := r.get("tensor_core_time_pct")) is not None]
            energy = [v for r in ok if (v := r.get("energy_per_inference_mj")) is not None]
            rec: dict[str, Any] = dict(zip(GROUP_KEYS, key))
            rec.update(precision=precision, repeats_ok=len(tput), repeats_all=len(prows),
                       throughput_ips_median=_median(tput), throughput_ips_min=min(tput, default=None),
                       throughput_ips_max=max(tput, default=None), tensor_core_time_pct_median=_median(tc),
                       energy_per_inference_mj_median=_median(energy),
                       speedup_vs_fp32=None, speedup_min=None, speedup_max=None, speedup_ci_lo=None,
                       speedup_ci_hi=None)
            ci = median_ci(tput)
            rec.update(throughput_ips_ci_lo=ci.lo, throughput_ips_ci_hi=ci.hi)
            if tput and base:
                ratio = ratio_ci(tput, base)
                rec.update(speedup_ci_lo=ratio.lo, speedup_ci_hi=ratio.hi)
                rec["speedup_vs_fp32"] = statistics.median(tput) / statistics.median(base)
                rec["speedup_min"] = min(tput) / max(base)
                rec["speedup_max"] = max(tput) / min(base)
            out.append(rec)
    return out


def per_run_speedup_rows(run_dirs: list[Path]) -> list[dict[str, Any]]:
    """speedup_rows of each run folder on its own, each record with its `run` folder: rows of different
    runs (boards) are never pooled, so fp32 of one board is never the baseline of another."""
    return [{"run": str(d), **rec} for d in run_dirs for rec in speedup_rows(read_rows([d]))]


def read_rows(run_dirs: list[Path]) -> list[dict[str, Any]]:
    """Typed rows of every run's results.csv (results.reader)."""
    return [row for run_dir in run_dirs for row in read_table(Path(run_dir) / "results.csv")]


def _cell(value: Any, digits: int = 3) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def _columns(records: list[dict[str, Any]]) -> list[str]:
    return (["run"] if any("run" in r for r in records) else []) + list(COLUMNS)


def write_csv(records: list[dict[str, Any]], path: Path) -> None:
    columns = _columns(records)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns)
        w.writeheader()
        for rec in records:
            w.writerow({k: "" if rec.get(k) is None else rec[k] for k in columns})


def to_markdown(records: list[dict[str, Any]]) -> str:
    with_run = "run" in _columns(records)
    head = ["model", "backend", "batch", "inst", "mode", "options", "precision", "ok/all", "img/s (median)",
            "speedup vs fp32", "range", "TC time %", "mJ/img"]
    head = ["run", *head] if with_run else head
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in records:
        rng = (f"{_cell(r['speedup_min'])}..{_cell(r['speedup_max'])}" if r["speedup_min"] is not None else "")
        lines.append("| " + " | ".join([
            *([str(r.get("run") or "")] if with_run else []),
            r["model"], r["backend"], r["batch"], r["instances"], r["mode"], r["options"] or "-", r["precision"],
            f"{r['repeats_ok']}/{r['repeats_all']}", _cell(r["throughput_ips_median"], 4),
            _cell(r["speedup_vs_fp32"]), rng, _cell(r["tensor_core_time_pct_median"]),
            _cell(r["energy_per_inference_mj_median"]),
        ]) + " |")
    return "\n".join(lines) + "\n"
