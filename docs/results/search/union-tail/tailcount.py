"""How many of a best-goal search's rows are measured only because of the union of many small chances: explore
picks where the most likely candidate's P(changes the answer) is below the stop threshold (0.05) while
1 - prod(1 - P_i) over every candidate is not. Those are the most rows any sharper estimate of "some candidate
changes it" (a joint draw from the surrogates instead of the independence bound) could save: the joint chance is
never below the largest single one. Fixed best goals of the 4 small stored grids, gp, search seeds 0-4, replayed
here (2 cores). From the repository root:

    PYTHONPATH=$PWD .venv/bin/python docs/results/search/union-tail/tailcount.py
"""
import collections
import random
import sys
import zlib
sys.path[:0] = ["benchmarks", "."]
import search_eval as se
from edgebench.search.decide import decide
from multiprocessing import Pool
def run(args):
    gname, gi, seed, drawn = args
    points, grid, live = se._grid(se.GRIDS[gname])
    point_of = {h: p.key for p in points for h in p.hashes}
    goals = se.draw_goals(live, 50, random.Random(0 * 1_000_003 + zlib.crc32(gname.encode()))) if drawn else se.goals_for(live)
    name, goal = goals[gi]
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
            for s in range(5): jobs.append((g, gi, s, False))
    with Pool(2) as pool:
        out = [r for r in pool.map(run, jobs) if r]
    tot = collections.defaultdict(lambda: [0, 0, 0])
    for g, n, s, rows, tail in out:
        t = tot[g]; t[0] += 1; t[1] += rows; t[2] += tail
    for g, (n, rows, tail) in tot.items(): print(g, n, "searches", rows, "rows", tail, "tail rows (max P < 0.05 <= union)")
