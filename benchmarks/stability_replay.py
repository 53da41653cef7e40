"""Replay the throughput stability rule over run folders already measured: old rule (run.stability_tolerance_pct
alone) against the rule with an interval (issue 34: the deviation must also exceed what the row's own
per-inference jitter explains, 99% over its sub-windows, Bonferroni).

Each measured row's per-inference timestamps (rows/<row>/latencies.npz, or an earlier edgebench's
latencies.csv.gz) go through edgebench.runner.metrics.summarize, the code that made the row's numbers, with the
row's own run.sub_windows and run.stability_tolerance_pct (its row.json). Per row it prints the recomputed
stability_pct (and the recorded one where they differ), the interval (sigma and the 99% bound), the stability verdict
under each rule, and the row's status under each: its recorded reason with the stability part replaced. Other
reasons (a short window, an overload, throttling) stay as recorded. At the end: the share of measured rows (ok or
invalid) that are ok under each rule, per run and in all.

It imports edgebench to read run folders (results.csv, row.json, latencies) and to apply the stability rule the
CLI ships to what was recorded; it measures nothing.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/stability_replay.py runs/<run-id> [runs/<run-id> ...] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edgebench.results.latency_file import latency_path, read_latencies
from edgebench.results.reader import read_table
from edgebench.runner.metrics import Summary, instability_reason, summarize

# the stability rule's part of a row's reason (reasons are joined with "; ")
UNSTABLE = re.compile(r"throughput unstable across \d+ sub-windows: [^;]*")


@dataclass
class InstanceStamps:
    start_ns: Any
    end_ns: Any
    issued_ns: Any = None  # fixed-rate rows only; summarize treats a row as open loop when every instance has it


@dataclass
class Replay:
    run: str
    row_index: int | None
    config: str
    inferences: int
    window_s: float
    per_sub_window: float
    stability_pct: float
    recorded_stability_pct: float | None
    sigma_pct: float | None
    bound_pct: float | None
    tolerance_pct: float
    old_stable: bool
    new_stable: bool
    recorded_status: str
    old_status: str
    new_status: str
    new_reason: str


def instances_of(path: Path) -> list[InstanceStamps]:
    """The row's instances as summarize takes them, in instance order."""
    lat = read_latencies(path)
    out = []
    for number in sorted(lat.placements):
        mine = lat.instance == number
        issued = None
        if lat.issued_ns is not None:
            issued = lat.issued_ns[mine]
            if len(issued) and (issued < 0).all():  # this instance recorded none
                issued = None
        out.append(InstanceStamps(lat.start_ns[mine], lat.end_ns[mine], issued))
    return out


def status_from(reason_parts: list[str]) -> str:
    return "invalid" if reason_parts else "ok"


def replay_row(run_dir: Path, row: dict[str, Any]) -> Replay | str:
    """The row replayed, or why it cannot be."""
    idx = row.get("row_index")
    art = row.get("artifact_dir") or ""
    row_dir = run_dir / art if art else None
    if row_dir is None or not row_dir.is_dir():
        return f"row {idx}: no per-row folder ({art or 'artifact_dir empty'})"
    path = latency_path(row_dir)
    if path is None:
        return f"row {idx}: no latencies.npz in {row_dir}"
    meta_path = row_dir / "row.json"
    config = json.loads(meta_path.read_text()).get("config", {}) if meta_path.exists() else {}
    sub_windows = int(config.get("sub_windows") or 5)
    tolerance = float(config.get("stability_tolerance_pct") if config.get("stability_tolerance_pct") is not None
                      else 15.0)
    batch = int(row.get("batch") or config.get("batch") or 1)
    s: Summary = summarize(instances_of(path), batch, sub_windows)
    old_stable = s.stability_pct <= tolerance
    new_reason = instability_reason(s, tolerance)
    recorded_reason = str(row.get("reason") or "")
    others = [p.strip() for p in UNSTABLE.sub("", recorded_reason).split(";") if p.strip()]
    recorded_status = str(row.get("status") or "")
    # an ok row's reason holds notes only (e.g. a busy host named): nothing in it invalidates the row
    invalidating = others if recorded_status == "invalid" else []
    old_parts = invalidating + ([] if old_stable else ["unstable"])
    new_parts = invalidating + ([new_reason] if new_reason else [])
    recorded_pct = row.get("stability_pct")
    label = (f"{row.get('model')} {row.get('backend')} {row.get('precision')} b{row.get('batch')} "
             f"x{row.get('instances')} r{row.get('repeat') or 0}")
    return Replay(run=run_dir.name, row_index=idx, config=label, inferences=s.inferences, window_s=s.window_s,
                  per_sub_window=s.inferences / sub_windows, stability_pct=s.stability_pct,
                  recorded_stability_pct=None if recorded_pct is None else float(recorded_pct),
                  sigma_pct=s.stability_sigma_pct, bound_pct=s.stability_bound_pct, tolerance_pct=tolerance,
                  old_stable=old_stable, new_stable=new_reason is None, recorded_status=recorded_status,
                  old_status=status_from(old_parts), new_status=status_from(new_parts),
                  new_reason="; ".join(new_parts))


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def share(rows: list[Replay], key: str) -> str:
    ok = sum(getattr(r, key) == "ok" for r in rows)
    return f"{ok}/{len(rows)} ({ok / len(rows) * 100:.0f}%)" if rows else "0/0"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run folders (each with results.csv and rows/)")
    ap.add_argument("--csv", type=Path, help="also write every replayed row here")
    args = ap.parse_args(argv)
    everything: list[Replay] = []
    for run_dir in args.runs:
        results = run_dir / "results.csv"
        if not results.exists():
            print(f"{run_dir}: no results.csv", file=sys.stderr)
            return 2
        replayed: list[Replay] = []
        skipped: list[str] = []
        for row in read_table(results):
            if row.get("status") not in ("ok", "invalid"):
                skipped.append(f"row {row.get('row_index')}: {row.get('status')}, not measured")
                continue
            got = replay_row(run_dir, row)
            if isinstance(got, str):
                skipped.append(got)
            else:
                replayed.append(got)
        print(f"== {run_dir}")
        print(f"{'row':>4} {'config':<36} {'inf':>7} {'/sub':>6} {'stab%':>6} {'sigma%':>6} {'bound%':>6} "
              f"{'tol%':>5} {'old':>8} {'new':>8}  row: old -> new")
        for r in replayed:
            recorded = ("" if r.recorded_stability_pct is None or abs(r.recorded_stability_pct - r.stability_pct) < 0.05
                        else f" (recorded {r.recorded_stability_pct:.1f})")
            print(f"{r.row_index!s:>4} {r.config:<36} {r.inferences:>7} {r.per_sub_window:>6.0f} "
                  f"{r.stability_pct:>6.1f} {_pct(r.sigma_pct):>6} {_pct(r.bound_pct):>6} {r.tolerance_pct:>5.0f} "
                  f"{'stable' if r.old_stable else 'UNSTABLE':>8} {'stable' if r.new_stable else 'UNSTABLE':>8}  "
                  f"{r.old_status} -> {r.new_status}{recorded}")
        for why in skipped:
            print(f"  not replayed: {why}")
        print(f"ok rows: old rule {share(replayed, 'old_status')}, new rule {share(replayed, 'new_status')} "
              f"(recorded: {share(replayed, 'recorded_status')})")
        everything += replayed
    if len(args.runs) > 1:
        print(f"== all: ok rows: old rule {share(everything, 'old_status')}, new rule "
              f"{share(everything, 'new_status')}")
    if args.csv:
        with args.csv.open("w", newline="") as fh:
            names = list(asdict(everything[0])) if everything else [f for f in Replay.__dataclass_fields__]
            w = csv.DictWriter(fh, fieldnames=names)
            w.writeheader()
            for r in everything:
                w.writerow(asdict(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
