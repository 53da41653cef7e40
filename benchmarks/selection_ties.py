"""How often `edgebench best` says "resolved at 95%" when no configuration is better: the selection made the way
`best` makes it (answer.best.answer_from_runs over rows), on cases built to break it.

Each trial builds one run of k configurations x n repeats in memory (rows as results.csv holds them: ok status,
throughput_ips, latency_ms_p90) and asks answer_from_runs for the best throughput, under no limit or a latency SLO.
A "false resolved" is a verdict that says resolved when the configurations are alike (drawn from one
distribution), or when the best's true median is not above every other's. The share over `--trials` trials is
printed with its 95% binomial interval (Wilson) against the stated 5%.

Cases (each at n = 3..10 repeats a configuration):
- ties: k = 2, 5, 20 alike configurations, lognormal(0, 0.1) throughputs (the issue's draws);
- ties with outliers: k = 5 alike, 10% of repeats 40% slower (a repeat a busy host hit);
- knife edge: k = 5 alike, a p90 SLO at the median of the latency draws, so the every-repeat limit removes most
  configurations and the best is picked among the survivors;
- near tie: k = 5, one configuration 0.1% better (true best exists but no test at this n can see it: any
  "resolved" naming another is false, one naming it is not);
- unequal spread (the rank test's assumption): k = 2 with the same median, one configuration's spread 2x, 4x, 10x
  or 100x the other's. The rank test compares the two distributions, not only their medians; `best` asks a
  wholly-apart best at >= 6 repeats where the repeats' ranges differ > 3x (answer.verdict.SPREAD_ALIKE_RATIO);
- power: k = 2, the best 3 standard deviations better (how often the verdict sees a real gap);
- unequal repeats (issue 54's review): k = 2 at n vs n + 2, n vs 2n, 2 vs n; k = 5 at (n, n, 2, 1, 1): counts
  where a rank test reaches 95% below 4 vs 4 (3 vs 5: 96.4%, 2 vs 8: 95.6%) and where configurations are left
  out as "not compared";
- adaptive (an adaptive search's shape): k = 5 or 20 alike, each measured once, the 2 or 5 with the highest first
  repeat measured to n (the first repeat kept), so which configurations have repeats was chosen from the values.
The column `old rule` is the verdict before issue 54 (one-sided rank test of the best against the runner-up at 95%,
computed from the same draws) for contrast.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/selection_ties.py --trials 2000 \
        --out docs/results/calibration/selection-ties.md

It measures nothing on a device: it checks the answer layer's statistics on known draws (why it may import
edgebench: tests/test_benchmarks.py INTERNAL_USERS).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.answer.best import Limits, answer_from_runs
from edgebench.answer.intervals import rank_test_confidence
from edgebench.answer.verdict import LEVEL_PROB
from edgebench.results.runs import Run

SIGMA = 0.1  # lognormal sigma of the throughput draws (the lognormal(0, 0.1))


@dataclass(frozen=True)
class Case:
    name: str
    k: int
    # throughput draws of trial config j: (rng, j, n) -> n values; true_best: the index whose true median is above
    # every other's (None: no configuration is better than all others)
    draw: Any
    true_best: int | None = None
    slo_ms: float | None = None
    is_power: bool = False  # the share reported is the share resolved on the true best (higher is better)
    # unequal repeats: n -> each configuration's repeat count (None: n each)
    counts: Any = None
    # an adaptive search's shape: every configuration measured once, the `adaptive_top` with the highest first
    # repeat measured to n repeats (the search repeats what looks best; the first repeat is kept)
    adaptive_top: int = 0


def _lognormal(scale_sigma: float = 1.0, median: float = 1.0):
    return lambda rng, j, n: median * np.exp(rng.normal(0.0, SIGMA * scale_sigma, n))


def _with_outliers(rng: np.random.Generator, j: int, n: int) -> np.ndarray:
    base = np.exp(rng.normal(0.0, SIGMA, n))
    return np.where(rng.random(n) < 0.1, base * 0.6, base)


def _spread(ratio: float):
    return lambda rng, j, n: np.exp(rng.normal(0.0, SIGMA * (ratio if j == 1 else 1.0), n))


def _shifted(best: int, factor: float):
    return lambda rng, j, n: (factor if j == best else 1.0) * np.exp(rng.normal(0.0, SIGMA, n))


CASES = [
    Case("ties k=2", 2, _lognormal()),
    Case("ties k=5", 5, _lognormal()),
    Case("ties k=20", 20, _lognormal()),
    Case("ties k=5, 10% outlier repeats", 5, _with_outliers),
    Case("knife edge k=5 (p90 SLO at the median)", 5, _lognormal(), slo_ms=1.0),
    Case("near tie k=5 (one 0.1% better)", 5, _shifted(0, 1.001), true_best=0),
    Case("same median, spread 2x", 2, _spread(2.0)),
    Case("same median, spread 4x", 2, _spread(4.0)),
    Case("same median, spread 10x", 2, _spread(10.0)),
    Case("same median, spread 100x", 2, _spread(100.0)),
    Case("power: k=2, best 3 sd better", 2, _shifted(0, math.exp(3 * SIGMA)), true_best=0, is_power=True),
    Case("unequal repeats k=2 (n vs n + 2)", 2, _lognormal(), counts=lambda n: [n, n + 2]),
    Case("unequal repeats k=2 (n vs 2n)", 2, _lognormal(), counts=lambda n: [n, 2 * n]),
    Case("unequal repeats k=2 (2 vs n)", 2, _lognormal(), counts=lambda n: [2, n]),
    Case("unequal repeats k=5 (n, n, 2, 1, 1)", 5, _lognormal(), counts=lambda n: [n, n, 2, 1, 1]),
    Case("adaptive k=5 (top 2 of one repeat to n)", 5, _lognormal(), adaptive_top=2),
    Case("adaptive k=20 (top 2 of one repeat to n)", 20, _lognormal(), adaptive_top=2),
    Case("adaptive k=20 (top 5 of one repeat to n)", 20, _lognormal(), adaptive_top=5),
]


def _rows(draws: list[np.ndarray], latencies: list[np.ndarray]) -> list[dict[str, Any]]:
    rows = []
    for j, (tputs, lats) in enumerate(zip(draws, latencies)):
        for r, (t, lat) in enumerate(zip(tputs, lats)):
            rows.append({"model": "m", "backend": "ort", "precision": "fp32", "batch": j + 1, "instances": 1,
                         "mode": "process", "placement": "cpu", "status": "ok", "reason": "", "repeat": r,
                         "config_hash": f"c{j}", "row_index": len(rows), "throughput_ips": float(t),
                         "latency_ms_p90": float(lat)})
    return rows


def _old_rule(draws: list[np.ndarray]) -> bool:
    """The verdict before issue 54: the best (highest median) against the runner-up, one-sided, at 95%."""
    order = sorted(range(len(draws)), key=lambda j: -statistics.median(draws[j]))
    conf = rank_test_confidence(list(draws[order[0]]), list(draws[order[1]]), True)
    return conf is not None and conf >= LEVEL_PROB - 1e-12


def run_case(case: Case, n: int, trials: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, CASES.index(case), n])
    counted = old = 0
    for _ in range(trials):
        if case.adaptive_top:
            first = [case.draw(rng, j, 1) for j in range(case.k)]
            top = set(sorted(range(case.k), key=lambda j: -float(first[j][0]))[:case.adaptive_top])
            draws = [np.concatenate([first[j], case.draw(rng, j, n - 1)]) if j in top else first[j]
                     for j in range(case.k)]
        else:
            counts = case.counts(n) if case.counts is not None else [n] * case.k
            draws = [case.draw(rng, j, counts[j]) for j in range(case.k)]
        lats = [np.exp(rng.normal(0.0, SIGMA, len(d))) for d in draws]
        limits = Limits(slo_ms=case.slo_ms, percentile="p90")
        answer = answer_from_runs([Run(path=Path("sim"), rows=_rows(draws, lats))], "throughput", limits)
        old += _old_rule(draws)
        if not answer.answers or not answer.answers[0].feasible:
            continue
        a = answer.answers[0]
        if not a.verdict.resolved:
            continue
        picked = int(a.feasible[0].candidate.identity["batch"]) - 1
        counted += (picked == case.true_best) if case.is_power else (picked != case.true_best)
    low, high = wilson(counted, trials)
    return {"case": case.name, "k": case.k, "n": n, "trials": trials, "count": counted, "share": counted / trials,
            "lo": low, "hi": high, "old": old / trials, "is_power": case.is_power}


def wilson(count: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval of a binomial share."""
    if trials == 0:
        return 0.0, 1.0
    p = count / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def verdict_of(r: dict[str, Any]) -> str:
    if r["is_power"]:
        return "power"
    stated = 1 - LEVEL_PROB
    if r["lo"] > stated:
        return "ABOVE"
    return "holds" if r["share"] <= stated else "holds (within interval)"


def to_markdown(rows: list[dict[str, Any]], command: str, seconds: float) -> str:
    lines = ["# `best`'s \"resolved at 95%\" with the selection it makes (issue 54)", "",
             f"Command: `{command}` ({seconds:.0f} s on this 2-core CPU, {time.strftime('%Y-%m-%d')}).", "",
             "Each trial: k configurations x n repeats as rows, `answer_from_runs` (the code `edgebench best` runs)",
             "picks the best throughput and says whether it is resolved. `false resolved`: resolved while no",
             "configuration is better than all the others (ties), or naming one that is not the true best; 95%",
             "Wilson interval of the share. It must be <= 5%. `old rule`: the verdict before issue 54 (one-sided",
             "rank test of the best against the runner-up), on the same draws. `power` rows: the share resolved on",
             "the true best.", "",
             "| case | k | n | trials | false resolved (power) | 95% interval | old rule | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['k']} | {r['n']} | {r['trials']} | {r['share'] * 100:.2f}% | "
                     f"[{r['lo'] * 100:.2f}, {r['hi'] * 100:.2f}] | {r['old'] * 100:.2f}% | {verdict_of(r)} |")
    bad = [r for r in rows if verdict_of(r) == "ABOVE"]
    lines += ["", f"Cells above the stated 5% (interval wholly above): {len(bad)} of "
              f"{sum(1 for r in rows if not r['is_power'])}"
              + (": " + "; ".join(f"{r['case']} n={r['n']}" for r in bad) if bad else "") + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--n", default="3,4,5,6,7,8,9,10")
    ap.add_argument("--cases", default="", help="comma-separated case-name prefixes (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    wanted = [c for c in CASES if not args.cases or any(c.name.startswith(p) for p in args.cases.split(","))]
    rows = []
    for case in wanted:
        for n in [int(x) for x in args.n.split(",")]:
            rows.append(run_case(case, n, args.trials, args.seed))
            print(f"{case.name} n={n}: {rows[-1]['share'] * 100:.2f}% (old {rows[-1]['old'] * 100:.2f}%)",
                  file=sys.stderr, flush=True)
    text = to_markdown(rows, "PYTHONPATH=$PWD .venv/bin/python benchmarks/selection_ties.py "
                             + " ".join(argv if argv is not None else sys.argv[1:]), time.monotonic() - t0)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    ties_bad = [r for r in rows if r["case"].startswith("ties") and verdict_of(r) == "ABOVE"]
    return 1 if ties_bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
