"""The one search the level check made wrong, replayed step by step with the committed search: H100 grid, drawn
goal #38 (best throughput, p50 <= 5.23 ms, power <= 223 W, drop <= 0.5 pp; draw seed 0), search seed 1. Every pick,
the stop line, the predictions of fp32 at the stop, and fp32's rows in the grid. From the repository root:

    PYTHONPATH=$PWD .venv/bin/python docs/results/search/level-check/trace_h100_38.py

(Replayed here; its record, rows and stop line match the H200 machine's record of the same search in after.jsonl.gz.)"""
import random
import sys
import zlib

sys.path[:0] = ["benchmarks", "."]
import search_eval as se  # noqa: E402

from edgebench.search.decide import decide  # noqa: E402

points, grid, live = se._grid(se.GRIDS["h100-torch"])
point_of = {h: p.key for p in points for h in p.hashes}
goals = dict(se.draw_goals(live, 50, random.Random(0 * 1_000_003 + zlib.crc32(b"h100-torch"))))
name = next(n for n in goals if n.startswith("#38:"))
print(name, "seed 1")
measured: dict = {}
while True:
    d = decide(points, measured, goals[name], budget_left=len(live) - len(measured), seed=1, point_of=point_of)
    if d.pick is None:
        break
    print(f"{len(measured):3d} {d.pick.phase:8s} {d.pick.why[:150]}")
    if d.pick.phase == "check":  # what the model said of the checked configuration when it was picked
        pr = next(x for x in d.predictions if x.key == d.pick.key)
        m = {k: f"{v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]" for k, v in pr.metrics.items() if k in ("latency_ms_p50", "power_w_mean")}
        print(f"      when picked, {pr.label} ({pr.state}): {m}, P(meets every limit) = {pr.p_feasible}")
    for h in d.pick.hashes:
        measured[h] = grid[h]
print(f"STOP after {len(measured)} rows: {d.stop}")
print("at the stop, fp32 (mean [95%]):")
for pr in d.predictions:
    if pr.label.startswith("torch fp32 b") and pr.label.split()[2] in ("b1", "b2", "b4", "b8"):
        m = {k: f"{v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]" for k, v in pr.metrics.items() if k in ("latency_ms_p50", "power_w_mean")}
        print(f"  {pr.label} ({pr.state}): {m}, P(meets every limit) = {pr.p_feasible}")
print("fp32 in the grid, each repeat (p50 ms, power W, status):")
for p in points:
    if p.label.startswith("torch fp32"):
        rs = [(round(grid[h]["latency_ms_p50"], 2), round(grid[h]["power_w_mean"]), grid[h]["status"]) for h in p.hashes]
        print(f"  {p.label}: {rs}{' (measured)' if set(p.hashes) & set(measured) else ''}")
