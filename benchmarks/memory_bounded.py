"""Issue 37: peak resident memory of the harness process and of an instance against the inference count.

Runs edgebench as a user does (`python -m edgebench bench` with a profile of the null backend, one instance) once
per target count, with run.min_inferences set to the target and a short duration_s, so the window ends when the
target is reached (max_duration_s is only a cap). Prints one Markdown table: the row's inferences and window, its
main_rss_mib_max (the harness process, from the row's start to its files written) and rss_mib_max (the instance),
the seconds spent summarising the timestamps and writing latencies.npz (row.json phases 'results', 'write'), the
wall time of the whole command, and the row's status.

    .venv/bin/python benchmarks/memory_bounded.py [--counts 1e5 1e6 1e7 1e8] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def profile(folder: Path, target: int) -> Path:
    path = folder / f"memory-{target}.yaml"
    path.write_text(f"""name: memory-{target}
extends: base
description: null backend, one instance, until {target} inferences (benchmarks/memory_bounded.py)
sweep:
  models: [tiny_cnn]
  backends: ["null"]
  precisions: [fp32]
  batches: [1]
  instances: [1]
  modes: [process]
run:
  warmup_s: 0.5
  duration_s: 0.1
  max_duration_s: 300
  min_inferences: {target}
  accuracy_samples: 0
telemetry:
  samplers: [host]
  interval_s: 0.01
""")
    return path


def measure(folder: Path, target: int) -> dict:
    out = folder / f"runs-{target}"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "edgebench", "bench", "--device", str(profile(folder, target)),
                           "--out", str(out)], capture_output=True, text=True, cwd=REPO, check=False)
    wall_s = time.monotonic() - t0
    if proc.returncode not in (0, 3):  # 3: the row is there but invalid (the status column says why)
        raise SystemExit(f"edgebench bench exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    with open(run_dir / "results.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    (row_json,) = run_dir.glob("rows/*/row.json")
    phases = json.loads(row_json.read_text())["phases"]
    return {"target": target, "inferences": int(row["inferences"]), "window_s": float(row["window_s"]),
            "main_mib": float(row["main_rss_mib_max"]), "instance_mib": float(row["rss_mib_max"] or "nan"),
            "results_s": phases.get("results", 0.0), "write_s": phases.get("write", 0.0), "wall_s": wall_s,
            "status": row["status"], "reason": row["reason"]}


def table(rows: list[dict]) -> str:
    lines = ["| target | inferences | window s | main_rss_mib_max | rss_mib_max (instance) | summary s | write s | "
             "wall s | status |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        lines.append(f"| {r['target']:.0e} | {r['inferences']:,} | {r['window_s']:.1f} | {r['main_mib']:.0f} | "
                     f"{r['instance_mib']:.0f} | {r['results_s']:.1f} | {r['write_s']:.1f} | {r['wall_s']:.0f} | "
                     f"{r['status']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", nargs="+", type=float, default=[1e5, 1e6, 1e7, 1e8])
    parser.add_argument("--out", type=Path, default=None, help="folder for the profiles and run folders (temporary)")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="memory-bounded-"))
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for count in args.counts:
        rows.append(measure(folder, int(count)))
        print(f"{int(count):.0e}: {rows[-1]}", file=sys.stderr, flush=True)
    print(table(rows))
    for r in rows:
        if r["reason"]:
            print(f"\n{r['target']:.0e}: {r['reason']}")


if __name__ == "__main__":
    main()
