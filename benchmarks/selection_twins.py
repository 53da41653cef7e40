"""`best`'s "resolved at 95%" on real measurements of identical configurations, as users run the CLI, on a quiet
or a busy host: a case the statistics were not designed on (drift, outliers, a CPU-bound process beside the run).

Each sweep is `edgebench bench` with a profile of k twin configurations: the null backend sleeping a fixed
`sleep_s` per inference, the twins differing only in an option that changes nothing that runs (`fail_instance`
set to an instance index the row does not have), so each twin is its own configuration (its own identity and
label) and none is better than another. Repeats run in the order `run.repeat_order` gives (`--orders`: the sweeps
alternate between the orders named, so both see the same host): grouped (a configuration's repeats back to back,
the order before issue 54) or interleaved (rounds, each reversed); host drift between twins measured at different
times is part of the case. `--hog N` starts N
CPU-bound processes beside every sweep (busy host).

From each sweep's results.csv, through `answer_from_runs` (the code `edgebench best` runs):
- pairs: twins (0, 1), (2, 3), ... each ranked alone (k = 2);
- all: the k twins together;
and counts the verdicts that say "resolved" (every one is false: the twins are alike), with the 95% Wilson
interval of the share, against the stated 5%. Rows are as the sweep marked them (ok rows are ranked, invalid ones
are named and not pooled), so a trial without two usable repeats a side says "cannot tell" and counts as not
resolved; the table gives how many trials had every repeat usable.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/selection_twins.py --sweeps 60 --hog 2 \
        --out docs/results/calibration/selection-twins-busy.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from edgebench.answer.best import Limits, answer_from_runs
from edgebench.results.runs import load_run

HOG = "while True: pass"


def twins_profile(folder: Path, k: int, repeats: int, sleep_s: float, duration_s: float, order: str) -> Path:
    sets = [{"sleep_s": sleep_s, "fail_instance": 100 + j} for j in range(k)]
    data = {"name": "twins", "extends": "base",
            "description": f"{k} identical null-backend configurations (fail_instance names no instance)",
            "sweep": {"models": ["tiny_cnn"], "backends": ["null"], "precisions": ["fp32"], "batches": [1],
                      "instances": [1], "modes": ["process"], "option_sets": sets},
            "run": {"accuracy_samples": 0, "repeats": repeats, "repeat_order": order, "warmup_s": 0.2,
                    "duration_s": duration_s,
                    "max_duration_s": max(5.0, duration_s * 2)},
            "telemetry": {"samplers": ["host"]}}
    path = folder / f"twins-{order}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def one_sweep(profile: Path, out: Path, cache: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    subprocess.run([sys.executable, "-m", "edgebench", "--cache", str(cache), "bench", "--device", str(profile),
                    "--out", str(out)], check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (run,) = set(out.iterdir()) - before
    return run


def judge(run_dir: Path, k: int) -> list[dict[str, Any]]:
    """One record per trial of the sweep: (kind, resolved, every repeat usable)."""
    run = load_run(run_dir)
    by_twin: dict[int, list[dict[str, Any]]] = {}
    for r in run.rows:
        opts = str(r.get("options") or "")
        twin = next((j for j in range(k) if f"fail_instance={100 + j}" in opts), None)
        if twin is not None:
            by_twin.setdefault(twin, []).append(r)
    out = []
    groups = [("pair", (j, j + 1)) for j in range(0, k - 1, 2)] + [("all", tuple(range(k)))]
    for kind, members in groups:
        rows = [r for j in members for r in by_twin.get(j, [])]
        answer = answer_from_runs([type(run)(path=run.path, rows=rows, system=run.system)], "throughput",
                                  Limits(percentile="p90"))
        verdict = answer.answers[0].verdict if answer.answers else None
        out.append({"kind": kind, "k": len(members), "resolved": bool(verdict and verdict.resolved),
                    "all_usable": all(r.get("status") == "ok" for r in rows),
                    "text": verdict.text if verdict else "no answer"})
    return out


def wilson(count: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    if trials == 0:
        return 0.0, 1.0
    p = count / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * (p * (1 - p) / trials + z * z / (4 * trials * trials)) ** 0.5 / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--k", type=int, default=8, help="twins per sweep (pairs are (0,1), (2,3), ...)")
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--sleep-s", type=float, default=0.0005)
    ap.add_argument("--duration-s", type=float, default=0.5)
    ap.add_argument("--hog", type=int, default=0, help="CPU-bound processes beside every sweep")
    ap.add_argument("--orders", default="grouped,interleaved", help="run.repeat_order values, alternated by sweep")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    records: list[dict[str, Any]] = []
    loads = []
    with tempfile.TemporaryDirectory(prefix="twins-") as tmp:
        folder = Path(tmp)
        orders = args.orders.split(",")
        profiles = {o: twins_profile(folder, args.k, args.repeats, args.sleep_s, args.duration_s, o) for o in orders}
        hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(args.hog)]
        try:
            for s in range(args.sweeps):
                order = orders[s % len(orders)]
                run = one_sweep(profiles[order], folder / "runs", folder / "cache")
                loads.append(os.getloadavg()[0])
                trial = [{**t, "order": order} for t in judge(run, args.k)]
                records += trial
                print(f"sweep {s} ({order}): load {loads[-1]:.1f}, resolved "
                      f"{sum(t['resolved'] for t in trial)} of {len(trial)}", file=sys.stderr, flush=True)
        finally:
            for h in hogs:
                h.kill()
    command = "PYTHONPATH=$PWD .venv/bin/python benchmarks/selection_twins.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    lines = ["# `best`'s \"resolved\" on identical configurations measured through the CLI (issue 54)", "",
             f"Command: `{command}` ({time.monotonic() - t0:.0f} s, {time.strftime('%Y-%m-%d')}, 2-core CPU; "
             f"{args.hog} CPU-bound process(es) beside the sweeps; 1-min load average during the sweeps "
             f"{min(loads):.1f}-{max(loads):.1f}, other jobs on the host included).", "",
             f"{args.k} twins a sweep (null backend, sleep_s {args.sleep_s}, {args.repeats} repeats each, "
             f"{args.duration_s} s windows); every 'resolved' is false.", "",
             "A trial with an invalid repeat cannot resolve (fewer than 4 usable a side), so the share is given over",
             "the trials whose every repeat was usable.", "",
             "| repeat order | trial | k | trials | every repeat usable | resolved (false) | share of usable | 95% interval |",
             "|---|---|---|---|---|---|---|---|"]
    for order in orders:
        for kind in ("pair", "all"):
            mine = [r for r in records if r["kind"] == kind and r["order"] == order]
            if not mine:
                continue
            hits = sum(r["resolved"] for r in mine)
            usable = sum(r["all_usable"] for r in mine)
            lo, hi = wilson(hits, usable)
            lines.append(f"| {order} | {kind} | {mine[0]['k']} | {len(mine)} | {usable} | {hits} | "
                         f"{hits / max(usable, 1) * 100:.1f}% | [{lo * 100:.1f}, {hi * 100:.1f}] |")
    resolved_texts = [f"({r['order']}) {r['text']}" for r in records if r["resolved"]][:5]
    if resolved_texts:
        lines += ["", "Resolved verdicts (the first five):", ""] + [f"- {t}" for t in resolved_texts]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
