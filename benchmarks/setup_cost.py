"""Per-row set-up of a cached grid, measured as a user runs it: the `edgebench bench` CLI in a subprocess.

Runs the grid once to fill the artifact cache (not counted), then again (the cached grid), reads every row's
row.json "phases" (pipeline/phases.py) and prints, per row, the wall time outside the measured window and
warm-up, the phases that make it up, and the mean against the target (issue 19: <= 2 s per row).

    python benchmarks/setup_cost.py --backends ort,torch --models resnet18 --out /tmp/setup_cost
    python benchmarks/setup_cost.py --device dgpu --backends torch,ort --batches 1,8,64 --instances 1,2 (GPU)

Exit status 0 always when the grid ran (the numbers are the result); 2 when the CLI failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 2.0
SHOWN = ("export", "precision", "prepare", "probe", "spawn", "load", "collect", "accuracy", "write", "runner_other")


def edgebench_command() -> list[str]:
    """The console script a user runs (next to this interpreter), else `python -m edgebench`."""
    script = Path(sys.executable).parent / "edgebench"
    return [str(script)] if script.exists() else [sys.executable, "-m", "edgebench"]


def profile_yaml(args: argparse.Namespace) -> str:
    return "\n".join([
        "name: setup-cost",
        f"extends: {args.device}",
        f"description: cached-grid set-up benchmark over {args.device}",
        "run:",
        f"  warmup_s: {args.warmup_s}",
        f"  duration_s: {args.duration_s}",
        f"  max_duration_s: {max(5.0, 4 * args.duration_s)}",
        "  min_inferences: 10",
        "",
    ])


def run_grid(args: argparse.Namespace, profile: Path, out: Path) -> Path:
    cmd = [*edgebench_command(), "bench", "--device", str(profile), "--models", args.models,
           "--backends", args.backends, "--precisions", args.precisions, "--batches", args.batches,
           "--instances", args.instances, "--out", str(out)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode not in (0, 3):
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        sys.stderr.write(f"setup_cost: {' '.join(cmd)} exited {proc.returncode}\n")
        raise SystemExit(2)  # the docstring's promise; SystemExit("message") would exit 1
    runs = sorted(p for p in out.iterdir() if p.is_dir())
    print(f"# {' '.join(cmd)}  ({wall:.1f} s wall)", flush=True)
    return runs[-1]


def row_table(run_dir: Path) -> list[dict]:
    rows = []
    for path in sorted((run_dir / "rows").glob("*/row.json")):
        doc = json.loads(path.read_text())
        cfg, phases = doc.get("config", {}), doc.get("phases") or {}
        if "total" not in phases:
            continue
        rows.append({"row": path.parent.name.split("-")[0], "backend": cfg.get("backend"), "batch": cfg.get("batch"),
                     "instances": len(cfg.get("placements") or []), "status": doc.get("status"), **phases})
    return rows


def add_grid_arguments(ap: argparse.ArgumentParser, *, models: str, backends: str, batches: str,
                       duration_s: float) -> None:
    """The grid options profile_yaml and run_grid read (warm_vs_fresh.py takes the same grid)."""
    ap.add_argument("--device", default="host", help="profile the grid extends (host, dgpu, ...)")
    ap.add_argument("--models", default=models)
    ap.add_argument("--backends", default=backends)
    ap.add_argument("--precisions", default="fp32")
    ap.add_argument("--batches", default=batches)
    ap.add_argument("--instances", default="1,2")
    ap.add_argument("--warmup-s", type=float, default=0.5)
    ap.add_argument("--duration-s", type=float, default=duration_s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_grid_arguments(ap, models="resnet18", backends="ort,torch", batches="1,2,4,8", duration_s=1.0)
    ap.add_argument("--out", help="folder for the run folders (default: a temporary one, removed)")
    ap.add_argument("--json", help="write the per-row phases here")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="edgebench-setup-cost-"))
    out.mkdir(parents=True, exist_ok=True)
    profile = out / "setup-cost.yaml"
    profile.write_text(profile_yaml(args))
    try:
        run_grid(args, profile, out / "fill")  # fills the artifact cache: export, precision variants
        run_dir = run_grid(args, profile, out / "cached")
        rows = row_table(run_dir)
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    head = ["row", "backend", "b", "n", "status", "setup s", "window s", "warmup s", *SHOWN]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join([r["row"], str(r["backend"]), str(r["batch"]), str(r["instances"]), str(r["status"]),
                                 f"{r['setup']:.2f}", f"{r.get('window', 0):.2f}", f"{r.get('warmup', 0):.2f}",
                                 *[f"{r.get(k, 0):.2f}" for k in SHOWN]]) + " |")
    for backend in sorted({str(r["backend"]) for r in rows}):
        mine = [r["setup"] for r in rows if str(r["backend"]) == backend]
        mean = sum(mine) / len(mine)
        later = mine[1:]  # the grid has one model x precision per backend: its first row pays the once-only costs
        print(f"{backend}: {len(mine)} rows, set-up per row mean {mean:.2f} s, max {max(mine):.2f} s "
              f"(target <= {TARGET_S:g} s: {'met' if mean <= TARGET_S else 'NOT met'}); first row {mine[0]:.2f} s "
              f"(once per model x backend: export check, probe, worker start)"
              + (f", later rows mean {sum(later) / len(later):.2f} s, max {max(later):.2f} s" if later else ""))
    print(f"cpu cores: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
