"""Warm vs fresh worker processes (issue 19), measured as a user runs edgebench: the `edgebench bench` CLI.

Issue 19 lets a row reuse the previous row's instance processes (profile field `run.workers: warm`) where only batch
or instance count changes, *if* their numbers equal fresh processes'. This script is that evidence:

- writes a small grid profile that `extends:` a device profile (--device, default host), and two children of it that
  differ only in `run.workers: warm` / `run.workers: fresh`;
- fills the artifact cache with one unmeasured fresh run, so both sides find every artifact cached;
- runs --pairs interleaved pairs, order alternating (warm first, then fresh first, ...), each side a full
  `edgebench bench` run of the grid into its own run folder;
- pairs the rows by label (model/backend/precision/batch/instances) and reports, per label, the warm/fresh ratio of
  throughput_ips and of latency_ms_p50 (median over pairs with a 95% percentile-bootstrap interval,
  benchmarks/stats.py), the statuses and `workers` values seen, and each side's mean
  setup_s; plus one pooled line: the geometric mean ratio over all rows, its interval bootstrapped over pairs
  (a pair's rows are resampled together: they share the pair's machine state).
Verdict per label: "equal" when the throughput interval contains 1 or lies within [0.97, 1.03], else "differs"
("unmeasured" when no pair measured it on both sides; "no interval (1 pair)" with a single pair). Rows of any status
that carry a throughput are paired; the statuses columns say which were `invalid`.

    python benchmarks/warm_vs_fresh.py --models tiny_cnn --backends ort --batches 1 --instances 1,2 --json wf.json
    python benchmarks/warm_vs_fresh.py --device dgpu --models resnet50 --backends torch,ort --precisions fp16 \\
        --batches 1,8,64 --instances 1,2 --pairs 4 --json wf-dgpu.json

Works before and after the reuse is wired: until then both values behave as fresh and the ratios show the noise
floor of this comparison (the `workers` column, where results.csv has one, says what each row really got).
Exit status 0 when every run completed (the numbers are the result), 2 when the CLI failed.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import math
import shutil
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIDES = ("warm", "fresh")
EQUAL_BAND = (0.97, 1.03)
LABEL_FIELDS = ("model", "backend", "precision", "batch", "instances")
KEPT = (*LABEL_FIELDS, "row_index", "status", "reason", "workers", "throughput_ips", "latency_ms_p50", "latency_ms_p99",
        "window_s", "inferences", "warmup_s", "setup_s", "threads_per_instance", "stability_pct")  # --json's rows


def _sibling(name: str):
    """A script next to this one as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"_benchmarks_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


setup_cost = _sibling("setup_cost")  # profile_yaml (the grid's window settings) and run_grid (the CLI call)
bootstrap_median_ci = _sibling("stats").bootstrap_median_ci


def write_profiles(args: argparse.Namespace, work: Path) -> dict[str, Path]:
    """base.yaml (setup_cost's grid profile over --device) and one child per side, differing in run.workers only."""
    base = work / "warm-vs-fresh-base.yaml"
    base.write_text(setup_cost.profile_yaml(args))
    profiles = {}
    for side in SIDES:
        path = work / f"warm-vs-fresh-{side}.yaml"
        path.write_text("\n".join([
            f"name: warm-vs-fresh-{side}",
            f"extends: {base}",
            f"description: warm-vs-fresh benchmark over {args.device}, run.workers {side}",
            "run:",
            f"  workers: {side}",
            "",
        ]))
        profiles[side] = path
    return profiles


def label_of(row: dict) -> str:
    return "/".join(str(row.get(k, "")) for k in LABEL_FIELDS)


def read_rows(run_dir: Path) -> dict[str, dict]:
    """results.csv rows by label; a label seen twice in one run (repeats, sharing modes) gets '#2', '#3' ..."""
    out: dict[str, dict] = {}
    with open(run_dir / "results.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            label, k = label_of(row), 1
            while (label if k == 1 else f"{label}#{k}") in out:
                k += 1
            out[label if k == 1 else f"{label}#{k}"] = row
    return out


def _float(cell: str | None) -> float | None:
    try:
        value = float(cell) if cell not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _interval(values: list[float]) -> dict | None:
    if not values:
        return None
    median, low, high = bootstrap_median_ci(values)
    return {"median": median, "low": low, "high": high, "per_pair": values}


def verdict(ci: dict | None, pairs: int) -> str:
    if ci is None:
        return "unmeasured"
    if pairs < 2:
        return "no interval (1 pair)"  # a one-pair "interval" is the point itself: it proves neither
    contains_one = ci["low"] <= 1.0 <= ci["high"]
    within_band = EQUAL_BAND[0] <= ci["low"] and ci["high"] <= EQUAL_BAND[1]
    return "equal" if contains_one or within_band else "differs"


def pooled_geomean_ci(logs_by_pair: list[list[float]], confidence: float = 0.95, resamples: int = 10_000,
                      seed: int = 0) -> dict | None:
    """Geometric mean of all per-row ratios; percentile-bootstrap interval resampling whole pairs."""
    import numpy as np

    pairs = [logs for logs in logs_by_pair if logs]
    if not pairs:
        return None
    sums = np.array([sum(logs) for logs in pairs])
    counts = np.array([len(logs) for logs in pairs], dtype=np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(pairs), size=(resamples, len(pairs)))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return {"geomean": float(math.exp(sums.sum() / counts.sum())), "low": float(math.exp(low)),
            "high": float(math.exp(high)), "pairs": len(pairs), "rows": int(counts.sum())}


def compare(runs: list[dict]) -> tuple[list[dict], dict]:
    """Per-label comparison and the pooled line from the measured runs [{pair, side, rows}]."""
    labels: list[str] = []
    for run in runs:
        labels += [label for label in run["rows"] if label not in labels]
    n_pairs = max(run["pair"] for run in runs) + 1
    by = {(run["pair"], run["side"]): run["rows"] for run in runs}
    table, logs_ips, logs_p50 = [], [[] for _ in range(n_pairs)], [[] for _ in range(n_pairs)]
    for label in labels:
        ips, p50 = [], []
        seen: dict[str, dict] = {side: {"statuses": [], "workers": [], "setup_s": [], "reasons": []} for side in SIDES}
        for pair in range(n_pairs):
            got = {side: by.get((pair, side), {}).get(label) for side in SIDES}
            for side, row in got.items():
                if row is None:
                    seen[side]["statuses"].append("missing")
                    continue
                seen[side]["statuses"].append(row.get("status", ""))
                seen[side]["workers"].append((row["workers"] or "(empty)") if "workers" in row else "(no column)")
                if row.get("reason"):
                    seen[side]["reasons"].append(row["reason"])
                if (setup := _float(row.get("setup_s"))) is not None:
                    seen[side]["setup_s"].append(setup)
            if got["warm"] is None or got["fresh"] is None:
                continue
            warm_ips, fresh_ips = _float(got["warm"].get("throughput_ips")), _float(got["fresh"].get("throughput_ips"))
            if warm_ips and fresh_ips:
                ips.append(warm_ips / fresh_ips)
                logs_ips[pair].append(math.log(ips[-1]))
            warm_p50, fresh_p50 = _float(got["warm"].get("latency_ms_p50")), _float(got["fresh"].get("latency_ms_p50"))
            if warm_p50 and fresh_p50:
                p50.append(warm_p50 / fresh_p50)
                logs_p50[pair].append(math.log(p50[-1]))
        ips_ci = _interval(ips)
        table.append({
            "label": label, **dict(zip(LABEL_FIELDS, label.split("#")[0].split("/"))), "pairs_measured": len(ips),
            "throughput_ratio": ips_ci, "latency_p50_ratio": _interval(p50), "verdict": verdict(ips_ci, len(ips)),
            **{f"statuses_{side}": seen[side]["statuses"] for side in SIDES},
            **{f"workers_{side}": sorted(set(seen[side]["workers"])) for side in SIDES},
            **{f"reasons_{side}": seen[side]["reasons"] for side in SIDES},
            **{f"setup_s_mean_{side}": (sum(seen[side]["setup_s"]) / len(seen[side]["setup_s"])
                                        if seen[side]["setup_s"] else None) for side in SIDES},
        })
    pooled = {"throughput_ratio": pooled_geomean_ci(logs_ips), "latency_p50_ratio": pooled_geomean_ci(logs_p50)}
    pooled["verdict"] = verdict(pooled["throughput_ratio"], (pooled["throughput_ratio"] or {}).get("pairs", 0))
    return table, pooled


def measure(args: argparse.Namespace, work: Path) -> dict:
    profiles = write_profiles(args, work)
    t0 = time.monotonic()
    setup_cost.run_grid(args, profiles["fresh"], work / "fill")  # fills the artifact cache; not counted
    fill_s = time.monotonic() - t0
    runs = []
    for pair in range(args.pairs):
        order = SIDES if pair % 2 == 0 else SIDES[::-1]
        for side in order:
            start = time.monotonic()
            run_dir = setup_cost.run_grid(args, profiles[side], work / f"pair{pair}-{side}")
            runs.append({"pair": pair, "side": side, "order": "-".join(order), "run_dir": str(run_dir),
                         "wall_s": time.monotonic() - start, "rows": read_rows(run_dir)})
    table, pooled = compare(runs)
    grid_wall = {side: sum(r["wall_s"] for r in runs if r["side"] == side) / args.pairs for side in SIDES}
    return {"device": args.device, "models": args.models, "backends": args.backends, "precisions": args.precisions,
            "batches": args.batches, "instances": args.instances, "warmup_s": args.warmup_s,
            "duration_s": args.duration_s, "pairs": args.pairs, "fill_wall_s": fill_s, "grid_wall_s_mean": grid_wall,
            "profiles": {side: profiles[side].read_text() for side in SIDES},
            "base_profile": (work / "warm-vs-fresh-base.yaml").read_text(),
            "kept_in": args.out or None, "rows": table, "pooled": pooled,
            "runs": [{k: v for k, v in r.items() if k != "rows"}
                     | {"rows": [{k: row[k] for k in KEPT if k in row} for row in r["rows"].values()]} for r in runs],
            "total_wall_s": time.monotonic() - t0}


def _ratio_cell(ci: dict | None, pairs: int) -> tuple[str, str]:
    if ci is None:
        return "-", "-"
    point = f"{ci.get('median', ci.get('geomean')):.3f}"
    return point, (f"[{ci['low']:.3f}, {ci['high']:.3f}]" if pairs >= 2 else "- (1 pair)")


def _setup_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_table(rec: dict) -> None:
    head = ["row (model/backend/precision/batch/instances)", "pairs", "ips warm/fresh", "95% CI",
            "p50 warm/fresh", "95% CI", "status warm", "status fresh", "workers warm", "setup s warm",
            "setup s fresh", "verdict"]
    print("| " + " | ".join(head) + " |")
    print("| --- | ---: | ---: | --- | ---: | --- | --- | --- | --- | ---: | ---: | --- |")
    for r in rec["rows"]:
        print("| " + " | ".join([r["label"], str(r["pairs_measured"]), *_ratio_cell(r["throughput_ratio"], r["pairs_measured"]),
                                 *_ratio_cell(r["latency_p50_ratio"], r["pairs_measured"]), ",".join(r["statuses_warm"]),
                                 ",".join(r["statuses_fresh"]), ",".join(r["workers_warm"]) or "-",
                                 _setup_cell(r["setup_s_mean_warm"]), _setup_cell(r["setup_s_mean_fresh"]),
                                 r["verdict"]]) + " |")
    pooled = rec["pooled"]
    ips, p50 = pooled["throughput_ratio"], pooled["latency_p50_ratio"]
    rows_n, n = (f"{ips['pairs']} ({ips['rows']} rows)", ips["pairs"]) if ips else ("0", 0)
    mean = {side: [r[f"setup_s_mean_{side}"] for r in rec["rows"] if r[f"setup_s_mean_{side}"] is not None]
            for side in SIDES}
    print("| " + " | ".join(["all rows (geometric mean)", rows_n, *_ratio_cell(ips, n), *_ratio_cell(p50, n), "", "", "",
                             *[_setup_cell(sum(v) / len(v) if v else None) for v in mean.values()],
                             pooled["verdict"]]) + " |")
    print(f"grid wall per run, mean over {rec['pairs']} pair(s): warm {rec['grid_wall_s_mean']['warm']:.1f} s, "
          f"fresh {rec['grid_wall_s_mean']['fresh']:.1f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    setup_cost.add_grid_arguments(ap, models="tiny_cnn", backends="ort", batches="1,8", duration_s=2.0)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--out", help="keep the profiles and run folders here (default: a temporary folder, removed)")
    ap.add_argument("--json", help="write the record (per-row ratios, intervals, statuses, setup_s, every row) here")
    args = ap.parse_args(argv)
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="edgebench-warm-vs-fresh-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        rec = measure(args, work)  # setup_cost.run_grid exits 2 when the CLI fails
    finally:
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=1))
    print_table(rec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
