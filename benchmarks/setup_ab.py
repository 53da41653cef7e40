"""A change to a row's set-up against the code before it, as a user runs it: `edgebench bench` (the CLI, in a
subprocess) on one profile, from two checkouts of edgebench (BEFORE, AFTER: e.g. a `git worktree` of the parent
commit and this one), PAIRS times each, interleaved (before, after, after, before, ...), one shared artifact cache
filled first by AFTER (not counted). Reads each run's one row's row.json `phases` and prints, per run, its set-up
(row wall time minus window and warm-up), `spawn` (until the last instance began opening its session), `load`
(until the last began warm-up: the model built or loaded, copied to the device) and `prepare` (the harness's
backend step), then the medians and the after/before ratio of the set-up with a distribution-free interval of the
per-pair ratio's median at its real coverage (edgebench.answer.intervals).

    git worktree add /tmp/before HEAD~1
    .venv/bin/python benchmarks/setup_ab.py --before /tmp/before --after $PWD --profile P.yaml --pairs 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WAYS = ("before", "after")


def one_run(checkout: Path, profile: Path, out: Path, cache: Path) -> dict[str, float | str]:
    # `python -m` puts its working folder first on sys.path: run it outside both checkouts, or the one it is run
    # from is measured both ways
    env = {**os.environ, "PYTHONPATH": str(checkout), "EDGEBENCH_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-m", "edgebench", "bench", "--device", str(profile), "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=1800, cwd=out.parent)
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: bench exited {done.returncode}:\n{done.stderr[-2000:]}")
    (row_json,) = sorted(out.glob("*/rows/*/row.json"))[:1]
    row = json.loads(row_json.read_text())
    origin = subprocess.run([sys.executable, "-c", "import edgebench, sys; sys.stdout.write(edgebench.__file__)"],
                            capture_output=True, text=True, env=env, cwd=out.parent).stdout
    if not origin.startswith(str(checkout)):
        raise SystemExit(f"{checkout}: edgebench came from {origin}, not from this checkout")
    ph = row["phases"]
    return {"setup_s": ph["total"] - ph.get("window", 0.0) - ph.get("warmup", 0.0), "spawn_s": ph.get("spawn", 0.0),
            "load_s": ph.get("load", 0.0), "prepare_s": ph.get("prepare", 0.0), "status": row["status"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, type=Path, help="a checkout of the code before the change")
    ap.add_argument("--after", required=True, type=Path, help="a checkout with the change")
    ap.add_argument("--profile", required=True, type=Path, help="a profile of one configuration, one repeat")
    ap.add_argument("--pairs", type=int, default=4)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from edgebench.answer.intervals import median_ci

    work = Path(tempfile.mkdtemp(prefix="setup-ab-"))
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    fill = one_run(checkouts["after"], args.profile, work / "fill", work / "cache")
    print(f"fill   after  setup_s {fill['setup_s']:6.2f} spawn_s {fill['spawn_s']:6.2f} load_s {fill['load_s']:6.2f} "
          f"prepare_s {fill['prepare_s']:5.2f} status {fill['status']} (a fresh cache: not counted)", flush=True)
    runs: dict[str, list[dict[str, float | str]]] = {w: [] for w in WAYS}
    for i in range(args.pairs):
        for way in (WAYS if i % 2 == 0 else WAYS[::-1]):
            r = one_run(checkouts[way], args.profile, work / f"{way}-{i}", work / "cache")
            runs[way].append(r)
            print(f"pair {i} {way:6s} setup_s {r['setup_s']:6.2f} spawn_s {r['spawn_s']:6.2f} load_s {r['load_s']:6.2f} "
                  f"prepare_s {r['prepare_s']:5.2f} status {r['status']}", flush=True)
    print(f"\n{'way':8s} {'setup s (median)':>17s} {'spawn s':>8s} {'load s':>7s}")
    for way in WAYS:
        med = {k: statistics.median(float(r[k]) for r in runs[way]) for k in ("setup_s", "spawn_s", "load_s")}
        print(f"{way:8s} {med['setup_s']:17.2f} {med['spawn_s']:8.2f} {med['load_s']:7.2f}")
    ratios = [float(a["setup_s"]) / float(b["setup_s"]) for a, b in zip(runs["after"], runs["before"])]
    ci = median_ci(ratios)
    print(f"set-up after/before per pair: {', '.join(f'{r:.3f}' for r in ratios)}; median {ci.text(3)}")


if __name__ == "__main__":
    main()
