"""Issue 54, items 5 and 6, checked on every stored results.csv and on cases built to break them.

1. Identity. Per grid: configurations counted under the sweep's 13 axes alone (the answer layer's identity before
   issue 54) and under answer.identity.IDENTITY (the axes plus threads, workload, input shapes, ONNX file, int8
   calibration data). A grid whose configurations regroup held rows the old identity pooled as repeats of one
   configuration although they ran on different things.
2. Limits. Per grid and limit set (objective: highest throughput; a latency SLO on p90 or p99 at the 30% and 70%
   quantiles of the grid's measured values, a power cap at its 30% and 70% quantiles, each alone and crossed), an
   independent reading (the csv module, no edgebench import in that code: rows grouped by the identity columns; a
   configuration meets a limit when every measured row, ok or invalid, that has the limit's column meets it; its
   usable rows are the ok rows with the objective and every limit column; the best is the highest median of its
   usable rows) against edgebench's answer (answer.best.answer_from_runs): the same feasible configurations, the
   same best. The same independent reading under the rule before issue 54 (an ok row without a column the answer
   reads is dropped before the limits are checked) counts the limit sets that rule answers differently.
3. Built cases: the issue's two (an ok repeat whose p99 is empty and whose power breaks the cap; rows of two input
   sizes under one config hash) as CSVs, read by both.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/identity_and_limits.py --out docs/results/calibration/identity-limits.md

It measures nothing on a device: it reads recorded rows and checks the answer layer's grouping and limit rule
against a reading of its own (why it may import edgebench: tests/test_benchmarks.py INTERNAL_USERS).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from edgebench.answer.best import Limits, answer_from_runs
from edgebench.answer.candidates import load_source
from edgebench.answer.identity import IDENTITY

AXES = IDENTITY[:13]  # model ... arrival: the identity before issue 54
# the identity columns, written out here so the independent reading below does not take them from edgebench
IDENTITY_COLUMNS = ("model", "backend", "precision", "batch", "instances", "mode", "placement", "options",
                    "power_mode", "scenario", "gpu_sharing", "rate_per_stream_hz", "arrival", "threads_per_instance",
                    "workload", "input_shapes", "onnx_sha256", "calibration_source")
SKIP_NAMES = ("slo_search", "predictions", "-search.csv", "search.csv")
TPUT = "throughput_ips"
POWER = "power_w_mean"
LINE = "_line"  # a row's position in its file: what both readings name a configuration's rows by


def stored_grids(root: Path) -> list[Path]:
    files = sorted([*root.glob("docs/results/**/*.csv"), *root.glob("tests/fixtures/**/results.csv")])
    out = []
    for f in files:
        if any(s in f.name for s in SKIP_NAMES):
            continue
        with open(f, newline="") as fh:
            header = next(csv.reader(fh), [])
        if {"model", "status", TPUT, "config_hash"} <= set(header):
            out.append(f)
    return out


# ------------------------------------------------------------------------------------ the independent reading


def read_raw(path: Path) -> list[dict[str, str]]:
    """The file's rows as text, each with LINE: its position among them (row_index repeats in concatenated grids)."""
    with open(path, newline="") as fh:
        return [{**r, LINE: str(i)} for i, r in enumerate(csv.DictReader(fh))]


def _num(cell: str | None) -> float | None:
    try:
        return float(cell) if cell not in (None, "") else None
    except ValueError:
        return None


def independent_answer(rows: list[dict[str, str]], limits: list[tuple[str, float]], old_rule: bool = False
                       ) -> dict[str, tuple[set[frozenset[str]], frozenset[str] | None]]:
    """model -> (feasible configurations, the best), each configuration as the LINE set of its usable rows."""
    needed = [TPUT, *[c for c, _b in limits]]
    groups: dict[tuple, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        groups[tuple(r.get(k) or "" for k in IDENTITY_COLUMNS)].append(r)
    out: dict[str, tuple[set[frozenset[str]], frozenset[str] | None]] = {}
    for key, members in groups.items():
        model = key[0]
        usable = [r for r in members if r["status"] == "ok" and all(_num(r.get(c)) is not None for c in needed)]
        if not usable:
            continue
        judged = [r for r in members if r["status"] == "invalid" or (r["status"] == "ok" and (
            not old_rule or r in usable))]
        feasible_set, best = out.setdefault(model, (set(), None))
        meets = all(v <= bound for c, bound in limits for r in judged if (v := _num(r.get(c))) is not None)
        if meets:
            ids = frozenset(r[LINE] for r in usable)
            feasible_set.add(ids)
            median = statistics.median(_num(r[TPUT]) or 0.0 for r in usable)
            if best is None or median > _best_median(rows, best):
                best = ids
            out[model] = (feasible_set, best)
    return out


def _best_median(rows: list[dict[str, str]], ids: frozenset[str]) -> float:
    return statistics.median(_num(r[TPUT]) or 0.0 for r in rows if r[LINE] in ids)


# ------------------------------------------------------------------------------------ edgebench's answer


def edgebench_answer(path: Path, limits: Limits) -> dict[str, tuple[set[frozenset[str]], frozenset[str] | None]]:
    run = load_source(path)
    for i, r in enumerate(run.rows):  # the typed reader keeps the file's order (a cut last line is set aside)
        r[LINE] = str(i)
    answer = answer_from_runs([run], "throughput", limits)
    out = {}
    for a in answer.answers:
        feasible = [frozenset(str(r[LINE]) for r in ranked.candidate.rows) for ranked in a.feasible]
        out[a.model] = (set(feasible), feasible[0] if feasible else None)
    return out


def limit_sets(rows: list[dict[str, str]]) -> list[tuple[str, Limits, list[tuple[str, float]]]]:
    measured = [r for r in rows if r["status"] in ("ok", "invalid")]

    def quantiles(col: str) -> list[float]:
        values = sorted(v for r in measured if (v := _num(r.get(col))) is not None)
        return [values[round(q * (len(values) - 1))] for q in (0.3, 0.7)] if values else []

    caps = quantiles(POWER)
    out: list[tuple[str, Limits, list[tuple[str, float]]]] = [("no limit", Limits(), [])]
    out += [(f"power <= {c:.4g} W", Limits(power_cap_w=c), [(POWER, c)]) for c in caps]
    for pct in ("p90", "p99"):
        col = f"latency_ms_{pct}"
        for slo in quantiles(col):
            out.append((f"{pct} <= {slo:.4g} ms", Limits(slo_ms=slo, percentile=pct), [(col, slo)]))
            out += [(f"{pct} <= {slo:.4g} ms, power <= {c:.4g} W", Limits(slo_ms=slo, percentile=pct, power_cap_w=c),
                     [(col, slo), (POWER, c)]) for c in caps]
    return out


def _same(a: dict, b: dict) -> bool:
    models = set(a) | set(b)
    return all(a.get(m, (set(), None)) == b.get(m, (set(), None)) for m in models)


# ------------------------------------------------------------------------------------ built cases


def built_cases(folder: Path) -> tuple[list[str], bool]:
    """The two built cases' table lines, and whether edgebench answers both as the issue asks."""
    base = {"backend": "ort", "precision": "int8", "batch": "1", "instances": "1", "mode": "process",
            "placement": "cpu", "options": "", "scenario": "closed-loop", "reason": "", "inferences": "1000"}
    lines = []
    power = folder / "ok-repeat-without-p99.csv"
    rows = [{**base, "model": "m", "row_index": str(i), "config_hash": "c1", "repeat": str(i), "status": "ok",
             TPUT: str(t), "latency_ms_p99": p99, POWER: str(w)}
            for i, (t, p99, w) in enumerate([(20.0, "75", 20.0), (20.5, "74", 20.0), (21.0, "", 45.0)])]
    rows += [{**base, "model": "m", "batch": "2", "row_index": str(3 + i), "config_hash": "c2", "repeat": str(i),
              "status": "ok", TPUT: str(10.0 + i), "latency_ms_p99": "150", POWER: "20"} for i in range(2)]
    _write(power, rows)
    limits = [("latency_ms_p99", 200.0), (POWER, 30.0)]
    eb = edgebench_answer(power, Limits(slo_ms=200.0, power_cap_w=30.0))
    new, old = independent_answer(read_raw(power), limits), independent_answer(read_raw(power), limits, old_rule=True)
    lines.append(f"| ok repeat with an empty p99 and 45 W under a 30 W cap | its configuration (b1) feasible: "
                 f"edgebench {_has(eb, '0')}, independent {_has(new, '0')}, rule before issue 54 {_has(old, '0')} |")
    shapes = folder / "two-input-sizes-one-hash.csv"
    rows = [{**base, "model": "det", "row_index": str(i), "config_hash": "65d067301bb089b3", "repeat": "0",
             "status": "ok", TPUT: str(t), "input_shapes": f"x:float32[1x3x{s}x{s}]"}
            for i, (t, s) in enumerate([(20.06, 224), (2.80, 640)])]
    _write(shapes, rows)
    eb_shapes = answer_from_runs([load_source(shapes)]).answers[0]
    axes = len({tuple(r.get(k) or "" for k in AXES) for r in read_raw(shapes)})
    labels = "; ".join(r.candidate.label() for r in eb_shapes.feasible)
    lines.append(f"| two input sizes under one config hash (the issue's PP-OCRv4 case) | configurations: 13 axes "
                 f"{axes}, edgebench {eb_shapes.considered} ({labels}) |")
    return lines, _has(eb, "0") == "no" and eb_shapes.considered == 2


def _has(answer: dict, line: str) -> str:
    return "yes" if any(line in ids for feas, _b in answer.values() for ids in feas) else "no"


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    names = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=names)
        w.writeheader()
        w.writerows(rows)


# ------------------------------------------------------------------------------------ main


def _machine() -> str:
    """'Intel(R) Xeon(R) Processor, 2 cores, load 12.3' (what the numbers were read on, and how busy it was)."""
    import os

    model = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                  if ln.startswith("model name")), "CPU not readable") if Path("/proc/cpuinfo").exists() else "?"
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{model}, {os.cpu_count()} cores{load}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="repository root (default: here)")
    ap.add_argument("--out", help="also write the table to this .md file")
    args = ap.parse_args(argv)
    t0 = time.time()
    root = Path(args.root)
    lines = ["| grid | rows | configurations (13 axes) | configurations (identity) | answers (limit sets x models) | "
             "edgebench = independent | rule before issue 54 differs |", "|---|---|---|---|---|---|---|"]
    totals = [0, 0, 0, 0, 0]
    for path in stored_grids(root):
        raw = read_raw(path)
        axes = len({tuple(r.get(k) or "" for k in AXES) for r in raw})
        ident = len({tuple(r.get(k) or "" for k in IDENTITY_COLUMNS) for r in raw})
        answers = agree = changed = 0
        for _name, lim, pairs in limit_sets(raw):
            eb, new, old = edgebench_answer(path, lim), independent_answer(raw, pairs), \
                independent_answer(raw, pairs, old_rule=True)
            n = len(set(eb) | set(new))
            answers += n
            agree += n if _same(eb, new) else sum(eb.get(m) == new.get(m) for m in set(eb) | set(new))
            changed += sum(old.get(m) != new.get(m) for m in set(old) | set(new))
        totals = [totals[0] + 1, totals[1] + int(ident != axes), totals[2] + answers, totals[3] + agree,
                  totals[4] + changed]
        lines.append(f"| {path.relative_to(root)} | {len(raw)} | {axes} | {ident} | {answers} | {agree} | {changed} |")
    lines.append(f"| **{totals[0]} grids** | | | {totals[1]} regrouped | {totals[2]} | {totals[3]} | {totals[4]} |")
    with tempfile.TemporaryDirectory() as tmp:
        case_lines, cases_hold = built_cases(Path(tmp))
    cases = ["", "| built case | result |", "|---|---|", *case_lines]
    head = ["# Identity and every-repeat limits on the stored grids (issue 54, items 5 and 6)", "",
            f"`PYTHONPATH=$PWD .venv/bin/python benchmarks/{Path(sys.argv[0]).name} {' '.join(sys.argv[1:])}`", "",
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {_machine()}. Columns: rows of the file; its "
            "configurations under the 13 sweep axes and under IDENTITY; the answers compared (limit sets x models); "
            "how many edgebench's answer (feasible configurations and best) matches the independent reading's; how "
            "many the rule before issue 54 (an ok row without a column the answer reads dropped before the limits) "
            "answers differently.", ""]
    text = "\n".join([*head, *lines, *cases, "", f"({time.time() - t0:.1f} s)"])
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0 if totals[2] == totals[3] and cases_hold else 1


if __name__ == "__main__":
    sys.exit(main())
