"""How often the search's surrogates' 95% intervals hold what they predict, with no search in the way (a check of
coverage at 95%, not of the whole predictive distribution): fit a surrogate (edgebench.search.surrogate.fit, the
function `bench --search` fits) on a random share of a stored grid's configurations (every usable row of each; a
search mostly has one repeat of a configuration), predict the rest, and count the held-out rows inside the interval
it gives for one new row (mean +- 1.96 sd, in the modelled space), beyond the end that is better for an answer, and
the 95th percentile of |z| (what 1.96 would have to be for 95% coverage here). Rows are counted once per draw
they are held out in (the draws overlap), so the counts are not independent and no interval is given. Each cell
is scored twice: the fit alone (`fit(..., widen=False)`), and with the spread of unmeasured configurations
widened by the fit's cross-validated miss (surrogate.cv_scale), as the search uses it.

The search's own evaluation (search_eval.py, coverage_summary) scores the configurations a search left
unmeasured, a set the search chose, not a random sample; random training sets are. Proved on known distributions
in tests/search/test_surrogate_coverage.py (a smooth log-linear grid with Gaussian noise: gp 93% inside, |z| 2.15
at the 95th percentile; loglinear 94%, 2.09); `--known` prints those scores.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/surrogate_coverage.py --out docs/results/search/coverage/surrogate.md
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path
from typing import Any

from search_eval import GRIDS, HIGHER_IS_BETTER, _grid, ok_values

from edgebench.search.decide import Z95
from edgebench.search.space import Encoder, SearchPoint, make_point
from edgebench.search.surrogate import fit, transform

METRICS = ("throughput_ips", "latency_ms_p90", "power_w_mean", "energy_per_inference_mj")
# the known distribution the script is proved on (--known; tests/search/test_surrogate_coverage.py)
NOISE_LOG = 0.05
CLIFF = frozenset({("fp16", 16, 2), ("fp16", 32, 2), ("fp32", 8, 4), ("fp32", 16, 1), ("fp16", 4, 1), ("fp32", 64, 2)})


def log_linear_grid(cliff: frozenset[tuple[str, int, int]] = frozenset()
                    ) -> tuple[list[SearchPoint], dict[str, dict[str, Any]]]:
    """2 precisions x b1..64 x 1/2/4 instances, 3 repeats: log throughput linear-quadratic in log2 batch, linear in
    log2 instances, shifted by precision, plus N(0, NOISE_LOG), seeded; configurations in `cliff` at a third of
    that."""
    rng = random.Random(7)
    points, grid = [], {}
    for precision in ("fp32", "fp16"):
        for batch in (1, 2, 4, 8, 16, 32, 64):
            for instances in (1, 2, 4):
                lb, li = math.log2(batch), math.log2(instances)
                mean = 6.0 + 0.7 * lb - 0.05 * lb * lb + 0.3 * li + (0.4 if precision == "fp16" else 0.0)
                if (precision, batch, instances) in cliff:
                    mean -= math.log(3.0)
                fields = {"model": "m", "backend": "ort", "precision": precision, "batch": batch,
                          "instances": instances, "placement": "cpu"}
                hashes = [f"{precision}-{batch}-{instances}-{r}" for r in range(3)]
                for h in hashes:
                    grid[h] = {**fields, "config_hash": h, "status": "ok",
                               "throughput_ips": math.exp(mean + rng.gauss(0.0, NOISE_LOG))}
                points.append(make_point(fields, hashes))
    return points, grid


def known_scores(kind: str, cliff: bool, widen: bool) -> tuple[float, float]:
    """(share inside, 95th percentile of |z|) on the known grid: half its configurations trained on, 8 draws."""
    points, grid = log_linear_grid(CLIFF if cliff else frozenset())
    zs = [z for z, _t in zscores(points, grid, "throughput_ips", kind, 0.5, 8, widen)]
    inside, _better, q95 = summarize(zs, "throughput_ips")
    return inside, q95


def zscores(points: list[SearchPoint], grid: dict[str, dict[str, Any]], col: str, kind: str, share: float,
            trials: int, widen: bool = True) -> list[tuple[float, float]]:
    """(z, the row's modelled value) of every held-out usable row over `trials` random training sets; `widen`:
    the spread widened by the fit's cross-validated miss, as the search fits it (False: the fit alone)."""
    enc = Encoder(points)
    out: list[tuple[float, float]] = []
    for trial in range(trials):
        train = random.Random(trial).sample(points, max(4, round(share * len(points))))
        xs, ys = [], []
        for p in train:
            for v in ok_values(p, grid, col):
                xs.append(p)
                ys.append(v)
        fitted = fit(col, kind, enc, xs, ys, trial, widen)
        if fitted is None:
            continue
        test = [p for p in points if p not in train]
        mus, sds = fitted.predict(test)
        for p, mu, sd in zip(test, mus, sds):
            for v in ok_values(p, grid, col):
                t = transform(col, v)
                if t is not None:
                    out.append(((t - mu) / sd, t))
    return out


def quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def summarize(zs: list[float], col: str) -> tuple[float, float, float]:
    """(share inside the 95% interval, share beyond the end better for an answer, 95th percentile of |z|)."""
    inside = sum(abs(z) <= Z95 for z in zs) / len(zs)
    better = sum((z > Z95) if col in HIGHER_IS_BETTER else (z < -Z95) for z in zs) / len(zs)
    return inside, better, quantile([abs(z) for z in zs], 0.95)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grids", default=",".join(GRIDS))
    ap.add_argument("--surrogates", default="gp")
    ap.add_argument("--shares", default="0.2,0.35", help="shares of the grid's configurations to train on")
    ap.add_argument("--trials", type=int, default=12, help="random training sets per grid, share and metric")
    ap.add_argument("--out", help="write the table here (markdown)")
    ap.add_argument("--known", action="store_true",
                    help="print the scores on the known distribution the tests prove the script on, and exit")
    args = ap.parse_args(argv)
    unknown = [n for n in args.grids.split(",") if n not in GRIDS]
    if unknown:
        ap.error(f"--grids: no stored grid {', '.join(map(repr, unknown))} (one of {', '.join(GRIDS)})")
    try:  # tiny matrices: BLAS threads only fight over the cores
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover - scikit-learn brings it
        pass
    if args.known:
        print("| surrogate | grid | inside: fit alone -> widened | 95th percentile of abs(z): fit alone -> widened |\n"
              "| --- | --- | ---: | ---: |")
        for kind in args.surrogates.split(","):
            for cliff in (False, True):
                (in0, q0), (in1, q1) = (known_scores(kind, cliff, c) for c in (False, True))
                print(f"| {kind} | log-linear{' with a cliff' if cliff else ''} | {in0:.1%} -> {in1:.1%} | "
                      f"{q0:.2f} -> {q1:.2f} |")
        return 0
    lines = ["| grid | surrogate | trained on | metric | held-out rows | inside the 95% interval: fit alone -> "
             "widened (as the search uses it) | beyond the better end (2.5% if calibrated) | 95th percentile of "
             "abs(z) (1.96 if calibrated) |", "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for name in args.grids.split(","):
        points, grid, _rows = _grid(GRIDS[name])
        for kind in args.surrogates.split(","):
            for share in (float(s) for s in args.shares.split(",")):
                for col in METRICS:
                    cells = []
                    for widen in (False, True):
                        zs = [z for z, _t in zscores(points, grid, col, kind, share, args.trials, widen)]
                        if zs:
                            cells.append((len(zs), *summarize(zs, col)))
                    if len(cells) < 2:
                        continue
                    (n, in0, be0, q0), (_n, in1, be1, q1) = cells
                    lines.append(f"| {name} | {kind} | {share:.0%} | {col} | {n} | {in0:.1%} -> {in1:.1%} | "
                                 f"{be0:.1%} -> {be1:.1%} | {q0:.2f} -> {q1:.2f} |")
                    print(lines[-1], flush=True)
    command = " ".join(["PYTHONPATH=$PWD .venv/bin/python benchmarks/surrogate_coverage.py", *(argv or sys.argv[1:])])
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(f"# The surrogates' 95% intervals on held-out configurations\n\n`{command}`\n\n"
                                  + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
