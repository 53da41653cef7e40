"""Replay one search on a stored grid and print every pick (a record: how pareto-seed4-trace.txt was written;
pareto-seed4-trace-53fc863.txt is the same command at commit 53fc863, before dc2a1b2 changed how a front's candidate
is judged).
Run from the repository root:

    PYTHONPATH=$PWD .venv/bin/python docs/results/search/refgrid/trace_search.py \\
        docs/results/search/refgrid/results.csv 3 4 > docs/results/search/refgrid/fixed/pareto-seed4-trace.txt

Arguments: the grid's results.csv, the index of the goal in benchmarks/search_eval.goals_for (0: best throughput, no
limit; 1: best throughput under the SLO; 2: lowest energy; 3: the Pareto front), the search seed. Each line: rows
measured before the pick, its phase, FRONT/ANSWER when the pick is in the full grid's answer, and the pick's reason."""
import sys

sys.path.insert(0, ".")
sys.path.insert(0, "benchmarks")

import search_eval as se  # noqa: E402

from edgebench.search.decide import decide  # noqa: E402

path, goal_index, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
points, grid, live = se._grid(path)
name, goal = se.goals_for(live)[goal_index]
print(name)
point_of = {h: p.key for p in points for h in p.hashes}
label = {p.key: p.label for p in points}
full = se.grid_answer(goal, live, point_of)
truth = {k for ks in full.truth.values() for k in ks}
print("truth", sorted(label[k] for k in truth))
measured: dict = {}
while True:
    d = decide(points, measured, goal, budget_left=len(live) - len(measured), seed=seed, point_of=point_of)
    if d.pick is None:
        print("STOP", d.stop)
        break
    mark = ("FRONT" if goal.mode == "pareto" else "ANSWER") if d.pick.key in truth else ""
    print(len(measured), d.pick.phase, mark, d.pick.why[:140])
    for h in d.pick.hashes:
        measured[h] = grid[h]
