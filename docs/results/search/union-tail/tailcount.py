"""How many of a best-goal search's rows are taken only because of the union of many small chances: explore
picks where the most likely candidate's P(changes the answer) is below the stop threshold (0.05) while
1 - prod(1 - P_i) over every candidate is not. Counted along the searches as they ran, so it is not what stopping
sooner would save (a search that stops sooner confirms or checks another way): stopvariant.py replays that.
Fixed best goals of the 4 small stored grids, gp, search seeds 0-4, replayed here (2 cores). From the repository
root:

    PYTHONPATH=$PWD .venv/bin/python docs/results/search/union-tail/tailcount.py
"""
import collections
import sys
sys.path[:0] = ["benchmarks", "."]
import search_eval as se  # noqa: E402
from edgebench.search.decide import decide  # noqa: E402
from multiprocessing import Pool  # noqa: E402
def run(args):
    gname, gi, seed = args
    points, grid, live = se._grid(se.GRIDS[gname])
    point_of = {h: p.key for p in points for h in p.hashes}
    name, goal = se.goals_for(live)[gi]
    if goal.mode != "best": return None
    measured = {}; tail = 0
    while True:
        d = decide(points, measured, goal, budget_left=len(live) - len(measured), seed=seed, point_of=point_of)
        if d.pick is None: break
        if d.pick.phase == "explore" and not d.pick.no_answer and (d.pick.p_change or 0) < 0.05 <= (d.pick.score or 0):
            tail += len(d.pick.hashes)
        for h in d.pick.hashes: measured[h] = grid[h]
    return gname, name, seed, len(measured), tail
if __name__ == "__main__":
    jobs = []
    for g in ["h100-torch", "h200-ort", "h200-instances", "cpu-small_cnn"]:
        points, grid, live = se._grid(se.GRIDS[g])
        for gi in range(len(se.goals_for(live))):
            for s in range(5): jobs.append((g, gi, s))
    with Pool(2) as pool:
        out = [r for r in pool.map(run, jobs) if r]
    tot = collections.defaultdict(lambda: [0, 0, 0])
    for g, _n, _s, rows, tail in out:
        t = tot[g]; t[0] += 1; t[1] += rows; t[2] += tail
    for g, (n, rows, tail) in tot.items(): print(g, n, "searches", rows, "rows", tail, "tail rows (max P < 0.05 <= union)")
