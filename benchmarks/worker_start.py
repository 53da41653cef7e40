"""Set-up of a row whose N instance workers all start fresh: forked from the framework server against spawned
(issue 37). Runs `edgebench bench` (the console script, as a user does) on a profile of one configuration at N
instances, PAIRS times each way, interleaved (server, spawn, spawn, server, ...; the profile's run.worker_start
picks the way), and reads each run's first row: its set-up (row wall time minus window and warm-up, row.json `phases`), the
time its workers took to start (`prewarm` + `spawn`: process start, framework import, CUDA context where there is
one) and the sweep's wall time. Prints the medians and the server/spawn ratio of the set-up with a distribution-free
interval of the per-pair ratio's median (edgebench.answer.intervals) at its real coverage.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/worker_start.py --backend torch --model tiny_cnn --instances 8 --pairs 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

WAYS = ("forkserver", "spawn")


def profile(args: argparse.Namespace, folder: Path, way: str) -> Path:
    data = {"name": "worker-start", "extends": args.extends,
            "sweep": {"models": [args.model], "backends": [args.backend], "precisions": [args.precision],
                      "batches": [1], "instances": [args.instances], "modes": ["process"],
                      **({"accelerator": args.accelerator} if args.accelerator else {})},
            "run": {"warmup_s": 0.2, "duration_s": args.duration_s, "max_duration_s": 4 * args.duration_s, "min_inferences": 10, "repeats": 1,
                    "kernel_profile_steps": 0, "accuracy_samples": 0, "workers": "warm",
                    "worker_start": way},
            "telemetry": {"idle_baseline_s": 0.0}}
    path = folder / f"worker-start-{way}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def one_run(way: str, prof: Path, out: Path, env: dict[str, str]) -> dict[str, float | str]:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "edgebench", "bench", "--device", str(prof), "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=900)
    wall_s = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"{way}: bench exited {done.returncode}:\n{done.stderr[-2000:]}")
    (row_json,) = sorted(out.glob("*/rows/*/row.json"))[:1]
    row = json.loads(row_json.read_text())
    ph = row["phases"]
    import csv

    with open(row_json.parents[2] / "results.csv", newline="") as fh:
        ips = float(next(csv.DictReader(fh))["throughput_ips"])
    return {"setup_s": ph["total"] - ph.get("window", 0.0) - ph.get("warmup", 0.0),
            "start_s": ph.get("prewarm", 0.0) + ph.get("spawn", 0.0), "wall_s": wall_s, "ips": ips,
            "status": row["status"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="torch")
    ap.add_argument("--model", default="tiny_cnn")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--instances", type=int, default=8)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--duration-s", type=float, default=0.5, help="each row's window (run.duration_s)")
    ap.add_argument("--extends", default="smoke")
    ap.add_argument("--accelerator", default="")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from edgebench.answer.intervals import median_ci

    work = Path(tempfile.mkdtemp(prefix="worker-start-"))
    env = {**os.environ, "EDGEBENCH_CACHE": str(work / "cache")}
    profiles = {way: profile(args, work, way) for way in WAYS}
    one_run("spawn", profiles["spawn"], work / "fill", env)  # the artifact cache filled, unmeasured
    runs: dict[str, list[dict[str, Any]]] = {w: [] for w in WAYS}
    for pair in range(args.pairs):
        for way in (WAYS if pair % 2 == 0 else WAYS[::-1]):
            runs[way].append(one_run(way, profiles[way], work / f"{way}-{pair}", env))
            print(f"pair {pair} {way:<10} " + " ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                                        for k, v in runs[way][-1].items()), flush=True)
    print(f"\n{args.backend} {args.model} {args.precision}, {args.instances} instances, {args.pairs} pairs "
          f"({os.cpu_count()} cores)")
    print(f"{'way':<10} {'setup s (median)':>17} {'workers start s':>16} {'sweep wall s':>13}")
    for way in WAYS:
        med = {k: statistics.median(r[k] for r in runs[way]) for k in ("setup_s", "start_s", "wall_s")}
        print(f"{way:<10} {med['setup_s']:17.2f} {med['start_s']:16.2f} {med['wall_s']:13.2f}")
    for key, what in (("setup_s", "set-up"), ("ips", "throughput")):
        ratios = [a[key] / b[key] for a, b in zip(runs["forkserver"], runs["spawn"], strict=True)]
        ci = median_ci(ratios)
        print(f"{what} forkserver/spawn per pair: {', '.join(f'{r:.3f}' for r in ratios)}; median "
              f"{statistics.median(ratios):.3f} [{ci.lo:.3f}, {ci.hi:.3f}] ({ci.coverage_text()} interval of the median, "
              "order statistics)")


if __name__ == "__main__":
    main()
