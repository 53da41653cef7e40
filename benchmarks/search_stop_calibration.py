"""How often the search's stop was wrong at the probability it stated: the calibration table of issue 54.

A settled best-goal stop states a number: with an answer, "P(any of the N changes it) = p < 0.05" (or, with one
candidate, "the most likely, ..., P = p < 0.05"); with none, "P(any meets every limit) = p < 0.01". Read as a
probability, p bounds the chance that the stop is wrong. This script bins stops by the p they printed and counts
the wrong ones: an answer that is not right by search_eval.score_best (neither the truth's configuration nor a
median inside the truth's repeat range), a "no answer" where the grid has one. Each bin's wrong share comes with
its exact (Clopper-Pearson) 95% binomial interval; a stated p holds where that interval reaches down to the largest
p the bin's stops stated (a lenient test: a calibrated p puts the expected wrong share at the mean stated p, also
printed). Records are replays (benchmarks/search_eval.py: eval.json or one JSON object a line, gzipped or not);
those made before issue 54 are scored from their grid first (benchmarks/search_rescore.py). Stops that state no p
(every configuration measured or exhausted; budget spent) are counted apart. gp, best goals.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/search_stop_calibration.py \\
        --set "drawn, draw seed 0=docs/results/search/eval.json" \\
        --set "knife-edge=docs/results/calibration/search-stop/knife-edge.jsonl.gz"
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import search_eval as se
import search_rescore as sr

# (pattern, kind): the p a stop line printed, in the words of the search before issue 54 and after it
STOP_P = [
    (re.compile(r"P\(any of the \d+ changes it\) = ([0-9.]+) < "), "answer"),
    (re.compile(r"P\(any meets every limit\) = ([0-9.]+) < "), "no answer"),
    (re.compile(r"the most likely, [^;()]*?, P = ([0-9.]+) < "), "answer"),  # one candidate: its own P is the stop's
]
BINS = [(0.0, 0.0), (0.001, 0.004), (0.005, 0.009), (0.010, 0.019), (0.020, 0.049)]  # as printed, 3 decimals


def stated_p(stop: str) -> tuple[str, float] | None:
    """(kind, p) the stop line printed ('answer' or 'no answer'), or None for a stop that states none."""
    for pattern, kind in STOP_P:
        m = pattern.search(stop or "")
        if m:
            return kind, float(m.group(1))
    return None


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval of k successes in n trials."""
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def wrong(r: dict[str, Any]) -> bool:
    return not se.correct(r)


def without_check(r: dict[str, Any]) -> dict[str, Any]:
    """The search without the decider check, from a decider-check replay (search_eval's `without_check`: where the
    check was first measured, that search stopped)."""
    w = r["without_check"]
    return {**r, "variant": "shipped", "stop": w["stop"], "answer": w["answer"], "rows": w["rows"],
            "right": w["right"], "same": w["same"], "gap_pct": w["gap_pct"]}


def load(spec: str, synthetic_dir: Path, variant: str | None) -> list[dict[str, Any]]:
    """The gp best-goal records of one set ('NAME=FILE[,FILE...]'), scored (search_rescore) where they were not;
    `variant`: keep only the records of that variant (None: those of the shipped search, which a decider-check
    replay also holds: without_check)."""
    _name, _, files = spec.rpartition("=")
    files, _, only = files.partition(":")  # FILES:drawn keeps one goal set (fixed, drawn, given)
    out = []
    for f in files.split(","):
        for r in sr.load_records(Path(f)):
            if r.get("surrogate") != "gp" or r.get("mode") != "best" or (only and r.get("goal_set") != only):
                continue
            if (variant or "shipped") == "shipped" and "decider-check" in str(r.get("variant")) and "without_check" in r:
                r = without_check(r)
            if (r.get("variant") or "shipped") != (variant or "shipped"):
                continue
            if "right" not in r:
                path = sr.grid_path(r["grid"], synthetic_dir)
                if path is None:
                    continue
                r.update(sr.rescore(r, path))
            out.append(r)
    return out


def _cell(k: int, n: int) -> str:
    if n == 0:
        return "-"
    lo, hi = clopper_pearson(k, n)
    return f"{k / n:.1%} [{lo:.1%}, {hi:.1%}]"


def table(sets: list[tuple[str, list[dict[str, Any]]]]) -> str:
    """The calibration table: per set, stop kind and printed-p bin, and cumulative 'said p < a'."""
    lines = ["| set | stop | stated P (as printed) | stops | mean stated P | wrong (not right) | wrong share [95% "
             "interval] | not exact | holds (interval reaches the largest P stated) |",
             "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | --- |"]
    for name, records in sets:
        by_kind: dict[str, list[tuple[float, dict[str, Any]]]] = defaultdict(list)
        unstated = []
        for r in records:
            got = stated_p(str(r.get("stop")))
            if got is None:
                unstated.append(r)
            else:
                by_kind[got[0]].append((got[1], r))
        for kind in ("answer", "no answer"):
            rows = by_kind.get(kind, [])
            if not rows:
                continue
            for lo, hi in BINS + [(0.0, 1.0)]:
                cell = [(p, r) for p, r in rows if lo <= p <= hi + 1e-12]
                if not cell:
                    continue
                k = sum(wrong(r) for _p, r in cell)
                label = (f"{lo:.3f}" if lo == hi else f"{lo:.3f}-{hi:.3f}") if (lo, hi) != (0.0, 1.0) else "all"
                # a printed p of 0.004 stands for one under 0.0045: the largest p the cell's stops stated
                top = max(p for p, _r in cell) + 0.0005
                holds = "yes" if clopper_pearson(k, len(cell))[0] <= top else "**no**"
                mean = sum(p for p, _r in cell) / len(cell)
                lines.append(f"| {name} | {kind} | {label} | {len(cell)} | {mean:.4f} | {k} | {_cell(k, len(cell))} | "
                             f"{sum(not r['same'] for _p, r in cell)} | {holds} |")
        if unstated:
            k = sum(wrong(r) for r in unstated)
            lines.append(f"| {name} | no P stated (all measured or exhausted) | - | {len(unstated)} | - | {k} | "
                         f"{_cell(k, len(unstated))} | {sum(not r['same'] for r in unstated)} | - |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True, metavar="NAME=FILE[,FILE...][:GOALSET]",
                    help="a set of replay records, named (repeatable); ':drawn' (or fixed, given) keeps one goal set")
    ap.add_argument("--variant", default=None, help="the records of this variant of the search (search_eval "
                                                    "--compare); default: the shipped search's")
    ap.add_argument("--synthetic-dir", type=Path, default=Path("/tmp/edgebench-synthetic-grids"))
    ap.add_argument("--out", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    sets = [(spec.rpartition("=")[0], load(spec, args.synthetic_dir, args.variant)) for spec in args.set]
    text = table(sets)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
