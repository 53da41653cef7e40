"""Two searches on this grid replayed step by step, for what its README says of them. Run from the repository root:

    PYTHONPATH=$PWD .venv/bin/python docs/results/search/refgrid-resnet18/trace_unmeasured.py

1. The fixed goal "best throughput, p90 <= 1.868 ms, drop <= 1 pp", search seed 3: every pick, the stop line, the
   amp rows it measured, and its prediction of amp b32 (the grid's answer) against the grid's rows.
2. The drawn goal #5 (lowest p50 latency, p50 <= 7.53 ms, power <= 496 W; draw seed 0), search seed 0: its seeds'
   batches, and, for every configuration left unmeasured, whether a row of it lies beyond the better (lower) end of
   the predicted p50 interval, inside it, or beyond the worse end, with the prediction's excess over the median of
   the rows where it misses low.
With centre-seed.diff applied to a copy of the repository, the same command gives the centre seed's tally."""
import random
import statistics
import sys
import zlib

sys.path.insert(0, ".")
sys.path.insert(0, "benchmarks")

import search_eval as se  # noqa: E402

from edgebench.answer.candidates import load_source  # noqa: E402
from edgebench.search.decide import decide  # noqa: E402

PATH = "docs/results/search/refgrid-resnet18/results.csv"
points, grid, live = se._grid(PATH)
point_of = {h: p.key for p in points for h in p.hashes}
by_key = {p.key: p for p in points}


def run(goal, seed):
    measured = {}
    while True:
        d = decide(points, measured, goal, budget_left=len(live) - len(measured), seed=seed, point_of=point_of)
        if d.pick is None:
            return d, measured
        print(f"  {len(measured):3d} {d.pick.phase:8s} {d.pick.why[:110]}")
        for h in d.pick.hashes:
            measured[h] = grid[h]


name, goal = se.goals_for(live)[1]
print(f"1. {name}, seed 3")
d, measured = run(goal, 3)
print("  STOP", d.stop[:200])
print("  amp rows measured:", sorted({by_key[point_of[h]].label for h in measured if " amp " in by_key[point_of[h]].label}))
for pr in d.predictions:
    if pr.label.startswith("torch amp b32 cuda:0"):
        rows = [float(grid[h]["throughput_ips"]) for h in by_key[pr.key].hashes]
        m, lo, hi = pr.metrics["throughput_ips"]
        print(f"  {pr.label}: predicted {m:.0f} [{lo:.0f}, {hi:.0f}] img/s, rows {rows[0]:.0f} and {rows[1]:.0f}")

rows = list(load_source(PATH).rows)
rng = random.Random(0 * 1_000_003 + zlib.crc32(b"h200-refgrid-r18"))
name, goal = next(g for g in se.draw_goals(rows, 25, rng) if g[0].startswith("#5:"))
print(f"2. {name}, seed 0")
d, measured = run(goal, 0)
print("  seeds' batches:", sorted({by_key[point_of[h]].batch for h in list(measured)[:9]}))
tally = {"better": 0, "inside": 0, "worse": 0}
excess = []
for pr in d.predictions:
    if pr.state != "predicted":
        continue
    vals = [float(grid[h]["latency_ms_p50"]) for h in by_key[pr.key].hashes if grid[h].get("latency_ms_p50")]
    m, lo, hi = pr.metrics["latency_ms_p50"]
    where = "better" if any(v < lo for v in vals) else "worse" if any(v > hi for v in vals) else "inside"
    tally[where] += 1
    if where == "better":
        excess.append(m / statistics.median(vals) - 1)
where = (f"predicted over measured where beyond the better end: {min(excess):.0%} to {max(excess):.0%}" if excess
         else "none beyond the better end")
print(f"  {sum(tally.values())} unmeasured: {tally}; {where}")
