"""One drawn goal of a small grid (draw seed 0) replayed step by step with the kernel variant EB_KERNEL. From the
repository root: EB_KERNEL=v5 PYTHONPATH=$PWD .venv/bin/python docs/results/search/tried-2026-11-30/harness/trace_drawn.py
h200-ort "#1:" 0   (grid, the goal name's start, search seed)"""
import sys, random, zlib, os
sys.path[:0] = ["docs/results/search/tried-2026-11-30/harness", "benchmarks", "."]
import variants  # noqa
import search_eval as se
from edgebench.search.decide import decide
grid_name, prefix, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
path = se.GRIDS[grid_name]
points, grid, live = se._grid(path)
point_of = {h: p.key for p in points for h in p.hashes}
rng = random.Random(0 * 1_000_003 + zlib.crc32(grid_name.encode()))
goals = dict(se.draw_goals(live, 50, rng))
name = next(n for n in goals if n.startswith(prefix))
goal = goals[name]
print(os.environ.get("EB_KERNEL"), name)
measured = {}
while True:
    d = decide(points, measured, goal, budget_left=len(live) - len(measured), seed=seed, point_of=point_of)
    if d.pick is None: break
    print(f"{len(measured):3d} {d.pick.phase:8s} {d.pick.why[:140]}")
    for h in d.pick.hashes: measured[h] = grid[h]
print("STOP", d.stop[:250])
