"""ResNet-50 FP16 against the card's FP16 roofline, and NVML's energy counter against integrated power.

Measured as a user runs edgebench: every configuration is one `edgebench bench` run (the CLI, in a subprocess) of a
small profile written here (extends --extends, default dgpu), and this script only reads the run folder.

1. Dense FP16 matmul rate of this GPU (8192^3, torch.matmul, mean of 10 after 3 warm-ups), in its own process so
   its CUDA context is gone before edgebench starts = the roofline.
2. A few ResNet-50 FP16 configurations through the torch backend (channels_last, CUDA graphs, torch.compile, large
   batches, 2 streams); achieved FLOP/s = throughput_ips (results.csv) * --gflop-per-image; fraction of the roofline
   (goal >= 30%).
3. For every row: the NVML total-energy counter's delta vs the trapezoidal integral of NVML power over the row's
   measured window [row.json measure_start_ns, measure_end_ns], both read from rows/<i>/telemetry_nvml.csv
   (interpolated at the window's ends) -> agreement %.

    python3 benchmarks/gpu_roofline_energy.py --seconds 3
    python3 benchmarks/gpu_roofline_energy.py --seconds 3 --only-compile   # torch.compile rows (minutes)
    python3 benchmarks/gpu_roofline_energy.py --extends host --placement cpu --samplers host --model tiny_cnn \\
        --configs 0,1 --skip-matmul                                          # the CLI path on a CPU (no energy)
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

RESNET50_GFLOP = 8.2  # per 224x224 image (4.1 GMAC)

CONFIGS = [  # (batch, instances, mode, torch backend options)
    (64, 1, "process", {}),
    (64, 1, "process", {"channels_last": True}),
    (64, 1, "process", {"channels_last": True, "cuda_graph": True}),
    (256, 1, "process", {"channels_last": True, "cuda_graph": True}),
    (128, 2, "streams", {"channels_last": True, "cuda_graph": True}),
    (256, 1, "process", {"channels_last": True, "compile": "default", "cuda_graph": True}),
    (128, 2, "streams", {"channels_last": True, "compile": "default", "cuda_graph": True}),
    (512, 1, "process", {"channels_last": True, "compile": "default", "cuda_graph": True}),
    (256, 2, "streams", {"channels_last": True, "compile": "default", "cuda_graph": True}),
    (256, 1, "process", {"channels_last": True, "compile": "max-autotune-no-cudagraphs"}),
]

MATMUL = """
import time, torch
n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.float16); b = torch.randn(n, n, device="cuda", dtype=torch.float16)
for _ in range(3): a @ b
torch.cuda.synchronize(); t0 = time.perf_counter()
for _ in range(10): a @ b
torch.cuda.synchronize(); print(2 * n**3 / ((time.perf_counter() - t0) / 10) / 1e12)
"""


def edgebench_command() -> list[str]:
    """The console script a user runs (next to this interpreter), else `python -m edgebench`."""
    script = Path(sys.executable).parent / "edgebench"
    return [str(script)] if script.exists() else [sys.executable, "-m", "edgebench"]


def fp16_matmul_tflops() -> float:
    proc = subprocess.run([sys.executable, "-c", MATMUL], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"gpu_roofline_energy: the matmul roofline failed: {proc.stderr.strip()[-500:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def profile_yaml(args: argparse.Namespace, batch: int, instances: int, mode: str, options: dict) -> str:
    placements = ", ".join([args.placement] * instances)
    opts = json.dumps(options)  # JSON is YAML: the option set as one flow mapping
    return "\n".join([
        "name: roofline",
        f"extends: {args.extends}",
        "description: gpu_roofline_energy.py, one configuration",
        "sweep:",
        f"  models: [{args.model}]",
        f"  backends: [{args.backend}]",
        f"  precisions: [{args.precision}]",
        f"  batches: [{batch}]",
        f"  placements: [[{placements}]]",
        f"  modes: [{mode}]",
        f"  option_sets: [{opts}]",
        "run:",
        "  warmup_s: 1.0",
        f"  duration_s: {args.seconds}",
        f"  max_duration_s: {args.seconds + 5}",
        "  min_inferences: 64",
        "  accuracy_samples: 0",
        "  kernel_profile_steps: 0",
        "telemetry:",
        f"  samplers: [{args.samplers}]",
        "  interval_s: 0.05",
        "  idle_baseline_s: 0.0",
        "",
    ])


def run_config(args: argparse.Namespace, work: Path, index: int, config: tuple) -> dict:
    """One `edgebench bench` run of one configuration: its results.csv row and its row folder."""
    batch, instances, mode, options = config
    profile = work / f"roofline-{index}.yaml"
    profile.write_text(profile_yaml(args, batch, instances, mode, options))
    out = work / f"run-{index}"
    cmd = [*edgebench_command(), "bench", "--device", str(profile), "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1, 3):  # 1: the row failed (its reason is printed); 2: bad input
        raise SystemExit(f"gpu_roofline_energy: {' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    run_dir = next(p for p in out.iterdir() if p.is_dir())
    with open(run_dir / "results.csv", newline="") as fh:
        row = next(csv.DictReader(fh))
    row_dir = next((p.parent for p in (run_dir / "rows").glob("*/row.json")), None)  # none for a skipped row
    label = f"b{batch} {instances}x {mode} {','.join(f'{k}={v}' for k, v in options.items()) or 'eager'}"
    return {"label": label, "row": row, "row_dir": row_dir}


def _at(ts: list[float], vs: list[float], t: float) -> float:
    """Linear interpolation of (ts, vs) at t (clamped to the ends)."""
    if t <= ts[0]:
        return vs[0]
    for i in range(1, len(ts)):
        if t <= ts[i]:
            span = ts[i] - ts[i - 1]
            return vs[i] if span == 0 else vs[i - 1] + (vs[i] - vs[i - 1]) * (t - ts[i - 1]) / span
    return vs[-1]


def counter_and_integral_mj(timeline_csv: Path, start_ns: int, end_ns: int) -> tuple[float | None, float | None]:
    """(energy counter delta, trapezoidal integral of power) over [start_ns, end_ns] in mJ, from a telemetry CSV
    whose header names `energy_total_mj[mJ]` and `power_total_mw[mW]`; None where a channel has no samples."""
    with open(timeline_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))

    def series(column: str) -> tuple[list[float], list[float]]:
        pairs = [(int(r["t_ns"]), float(r[column])) for r in rows if r.get(column)]
        return [float(t) for t, _ in pairs], [v for _, v in pairs]

    counter = integral = None
    ts, vs = series("energy_total_mj[mJ]")
    if len(ts) >= 2:
        counter = _at(ts, vs, end_ns) - _at(ts, vs, start_ns)
    ts, vs = series("power_total_mw[mW]")
    if len(ts) >= 2:
        inside = [(t, v) for t, v in zip(ts, vs, strict=True) if start_ns < t < end_ns]
        points = [(float(start_ns), _at(ts, vs, start_ns)), *inside, (float(end_ns), _at(ts, vs, end_ns))]
        integral = sum((t1 - t0) / 1e9 * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(points, points[1:]))
    return counter, integral


def measure(args: argparse.Namespace, roof: float | None) -> list[tuple]:
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="edgebench-roofline-"))
    work.mkdir(parents=True, exist_ok=True)
    wanted = {int(i) for i in args.configs.split(",")} if args.configs else set(range(len(CONFIGS)))
    rows = []
    for index, config in enumerate(CONFIGS):
        options = config[3]
        has_compile = "compile" in options
        if index not in wanted or (args.skip_compile and has_compile) or (args.only_compile and not has_compile):
            continue
        if args.skip_autotune and "autotune" in str(options.get("compile", "")):
            continue
        got = run_config(args, work, index, config)
        row = got["row"]
        if not row.get("throughput_ips") or got["row_dir"] is None:
            print(f"  {got['label']}: {row['status']}: {row['reason']}", flush=True)
            continue
        ips = float(row["throughput_ips"])
        doc = json.loads((got["row_dir"] / "row.json").read_text())
        timeline = got["row_dir"] / "telemetry_nvml.csv"
        counter, integ = (counter_and_integral_mj(timeline, doc["measure_start_ns"], doc["measure_end_ns"])
                          if timeline.exists() else (None, None))
        agree = None if not counter or integ is None else 100.0 * (1 - abs(integ - counter) / counter)
        tflops = ips * args.gflop_per_image / 1e3
        rows.append((got["label"], row["status"], ips, tflops, 100 * tflops / roof if roof else None, counter, integ,
                     agree))
        print(f"  {got['label']}: {row['status']} {ips:.0f} img/s, {tflops:.2f} TFLOP/s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--only-compile", action="store_true", help="only the torch.compile configurations")
    ap.add_argument("--skip-autotune", action="store_true", help="leave out compile=max-autotune (minutes of tuning)")
    ap.add_argument("--configs", help="comma-separated indices into CONFIGS (default: all)")
    ap.add_argument("--extends", default="dgpu", help="the shipped profile each configuration's profile extends")
    ap.add_argument("--placement", default="cuda:0")
    ap.add_argument("--samplers", default="nvml", help="telemetry.samplers, comma-separated")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--backend", default="torch")
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--gflop-per-image", type=float, default=RESNET50_GFLOP)
    ap.add_argument("--skip-matmul", action="store_true", help="no roofline (e.g. on a CPU): no %% of roofline")
    ap.add_argument("--out", help="keep the profiles and run folders here")
    args = ap.parse_args(argv)
    roof = None if args.skip_matmul else fp16_matmul_tflops()
    if roof:
        print(f"dense fp16 matmul (8192^3): {roof:.1f} TFLOP/s", flush=True)
    rows = measure(args, roof)

    def fmt(v: float | None, d: int = 1) -> str:
        return "-" if v is None else f"{v:.{d}f}"

    print(f"\nroofline: {fmt(roof)} TFLOP/s dense fp16; {args.model} = {args.gflop_per_image} GFLOP/image")
    print(f"{'config':<72}{'status':>8}{'img/s':>8}{'TFLOP/s':>9}{'% roof':>8}{'E ctr J':>9}{'E int J':>9}"
          f"{'agree %':>9}")
    for label, status, ips, tf, pct, c, i, a in rows:
        print(f"{label:<72}{status:>8}{ips:>8.0f}{tf:>9.2f}{fmt(pct):>8}{fmt(c and c / 1e3):>9}"
              f"{fmt(i and i / 1e3):>9}{fmt(a, 2):>9}")
    measured = [r for r in rows if r[4] is not None]
    if measured:
        best = max(measured, key=lambda r: r[2])
        print(f"fastest: {best[0]} at {best[4]:.1f}% of the fp16 roofline (goal >= 30%: "
              f"{'met' if best[4] >= 30 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
