"""Time one Pareto decide step (the surrogates' fits and the candidates' scores) at a mid-search state of the
reference-shape grid: 2 rows of every 4th configuration, 1 of every other one (63 rows), the seed phase skipped so
the step explores. The median of 3. Run from the repository root:

    PYTHONPATH=$PWD .venv/bin/python docs/results/search/pareto-noise/time_pareto_step.py
"""
import sys
import time

sys.path.insert(0, "benchmarks")
sys.path.insert(0, ".")

import search_eval as se  # noqa: E402

import edgebench.search.decide as decide_module  # noqa: E402
from edgebench.search.goal import Goal  # noqa: E402

points, grid, _live = se._grid("docs/results/search/refgrid/results.csv")
point_of = {h: p.key for p in points for h in p.hashes}
measured = {}
for i, p in enumerate(points):
    if i % 2 == 0:
        for h in p.hashes[:2 if i % 4 == 0 else 1]:
            measured[h] = grid[h]
decide_module.spread_seeds = lambda *_args: []  # no seed phase: time an explore step
times = []
for _ in range(3):
    t0 = time.perf_counter()
    d = decide_module.decide(points, measured, Goal("pareto"), budget_left=100, seed=0, point_of=point_of)
    times.append(time.perf_counter() - t0)
print(f"{len(measured)} rows measured: decide {sorted(times)[1]:.2f} s (median of 3); pick: {d.pick.phase}, "
      f"{d.pick.why[:70]}")
