"""Speedup of each precision over strict FP32, per batch, with the spread over repeats: the records behind the
report's one speedup table (tables/speedup.{csv,md,tex}, written by report.tables.speedup_table, per run).

Input: result rows (results.csv of one or more runs). Only `ok` rows count; how many repeats were
ok is in the table, so a precision with failed/invalid repeats is visible, not silently averaged.
Speedup = median throughput of the precision / median throughput of fp32 for the same model,
backend, batch, instances, mode, placement and options. Its range is the most pessimistic and most
optimistic pairing of the repeats: min(p)/max(fp32) .. max(p)/min(fp32). The interval of each median
throughput is the order-statistic interval of its repeats with the coverage it really has (answer/intervals.py:
[min, max] of 3 repeats covers the median 75% of the time); the speedup's interval is made from the two sides'
intervals, [lo_p / hi_fp32, hi_p / lo_fp32], and its coverage is the product of theirs, a lower bound (3 and 3
repeats: >= 56.2%). With 5 or fewer repeats a side it is the range above. Each coverage is a column
(*_ci_coverage, a fraction) beside its interval.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from edgebench.answer.intervals import median_ci, ratio_ci
from edgebench.results.reader import typed_row
from edgebench.results.runs import load_run

# power_mode (Jetson nvpmodel): rows of different power modes are different configurations, not repeats
GROUP_KEYS = ("model", "backend", "batch", "instances", "mode", "placement", "options", "power_mode")
COLUMNS = (*GROUP_KEYS, "precision", "repeats_ok", "repeats_all", "throughput_ips_median", "throughput_ips_min",
           "throughput_ips_max", "throughput_ips_ci_lo", "throughput_ips_ci_hi", "throughput_ips_ci_coverage",
           "speedup_vs_fp32", "speedup_min", "speedup_max", "speedup_ci_lo", "speedup_ci_hi", "speedup_ci_coverage",
           "tensor_core_time_pct_median",
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
                       speedup_ci_hi=None, speedup_ci_coverage=None)
            ci = median_ci(tput)
            rec.update(throughput_ips_ci_lo=ci.lo, throughput_ips_ci_hi=ci.hi, throughput_ips_ci_coverage=ci.coverage)
            if tput and base:
                if precision != BASELINE:  # fp32 over itself is 1 by definition: no interval (its sides are one)
                    ratio = ratio_ci(tput, base)  # coverage: the product of the sides' (a lower bound)
                    rec.update(speedup_ci_lo=ratio.lo, speedup_ci_hi=ratio.hi, speedup_ci_coverage=ratio.coverage)
                rec["speedup_vs_fp32"] = statistics.median(tput) / statistics.median(base)
                rec["speedup_min"] = min(tput) / max(base)
                rec["speedup_max"] = max(tput) / min(base)
            out.append(rec)
    return out


def read_rows(run_dirs: list[Path]) -> list[dict[str, Any]]:
    """The intact rows of each run's results.csv (a cut last line is set aside: results.runs.load_run)."""
    rows: list[dict[str, Any]] = []
    for run_dir in run_dirs:
        rows.extend(load_run(run_dir).rows)
    return rows
