"""A/B here: the committed level check vs one that skips a check whose configuration the models give
P(meets every limit) < EB_GATE, on the 223 searches in which the check measured a row (after.jsonl.gz). From the
repository root (about 12 min each on 2 cores):

    EB_GATE=0 PYTHONPATH=$PWD .venv/bin/python docs/results/search/level-check/gate_ab.py > /tmp/gate0.jsonl
    EB_GATE=0.01 PYTHONPATH=$PWD .venv/bin/python docs/results/search/level-check/gate_ab.py > /tmp/gate1.jsonl
    python3 docs/results/search/level-check/gate_cmp.py /tmp/gate0.jsonl /tmp/gate1.jsonl
"""
import gzip
import json
import os
import random
import sys
import zlib
from multiprocessing import get_context

sys.path[:0] = ["benchmarks", "."]
import search_eval as se  # noqa: E402

from edgebench.answer.candidates import load_source  # noqa: E402
from edgebench.search import decide as dm  # noqa: E402

GATE = float(os.environ.get("EB_GATE", "0"))
SEEN: dict = {}
_p_change = dm._p_change
def p_change(p, *a, **k):
    out = _p_change(p, *a, **k)
    SEEN[p.key] = out[1]
    return out
_thin_level = dm.thin_level  # decide._level_check before commit 638cc28 moved it to design.thin_level
def thin_level(points, status, usable, candidates, best, encoder):
    keep = [c for c in candidates if SEEN.get(c.key) is None or SEEN[c.key] >= GATE]
    return _thin_level(points, status, usable, keep, best, encoder)
if GATE > 0:
    dm._p_change = p_change
    dm.thin_level = thin_level

PATHS = {**se.GRIDS, "h200-refgrid": "docs/results/search/refgrid/results.csv",
         "h200-refgrid-r18": "docs/results/search/refgrid-resnet18/results.csv"}

def jobs():
    with gzip.open("docs/results/search/level-check/after.jsonl.gz", "rt") as fh:
        fired = [json.loads(line) for line in fh]
    fired = [r for r in fired if r["phase_rows"].get("check")]
    goals = {}
    out = []
    for r in fired:
        g, path = r["grid"], PATHS[r["grid"]]
        key = (g, r["goal_set"], r["draw_seed"])
        if key not in goals:
            rows = list(load_source(path).rows)
            if r["goal_set"] == "fixed":
                goals[key] = dict(se.goals_for(rows))
            else:
                n = 25 if "refgrid" in g else 50
                goals[key] = dict(se.draw_goals(rows, n, random.Random(r["draw_seed"] * 1_000_003 + zlib.crc32(g.encode()))))
        out.append((r["draw_seed"], se.Job(g, path, r["goal_set"], r["goal"], goals[key][r["goal"]], "gp", r["seed"], 0.05)))
    return out

def run(item):
    ds, job = item
    rec = se.run_job(job)
    rec["draw_seed"] = ds
    rec.pop("truth", None)
    rec.pop("limits", None)
    return rec

if __name__ == "__main__":
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        pass
    with get_context("fork").Pool(2) as pool:
        for rec in pool.imap(run, jobs()):
            print(json.dumps(rec, default=str), flush=True)
