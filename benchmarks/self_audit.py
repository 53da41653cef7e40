"""Self-audit: edgebench exactly as a user runs it against an independent bare loop, interleaved, with an interval.

A side ("edgebench"): the `edgebench bench` CLI in a subprocess with a shipped profile (--device host / dgpu), one
configuration (model, backend, precision, batch, 1 instance), every default sampler and pre-pass the profile has
(accuracy, kernel profile, idle baseline ...); its throughput_ips from results.csv.
B side ("bare"): benchmarks/bare_loop.py in a separate process and session (no edgebench import): plain onnxruntime on the same
ONNX file the A row measured, or the torchvision model in torch, with the row's threads (or, --bare-threads default,
the framework's default threads: a user's own plain session), warm-up and window length, and the settings edgebench
uses by default (bare_loop.py lists them; the record keeps what the bare loop reported as `bare_settings`).
Pairs run A B, B A, A B ... (ABBA order: drift hits both alike); the result is the median of the per-pair ratios
edgebench/bare with a percentile-bootstrap interval (benchmarks/stats.py).
Diagnostic next to it: steady_ips, each side's median rate over ~1 ms intervals (bare_loop.steady_ips; edgebench's
from the row's per-inference end times), and their ratio: what each loop costs per inference when nothing preempts
it, so a per-inference harness cost shows even on a busy machine, where the throughput ratio is mostly noise.

    python benchmarks/self_audit.py --backend ort --model tiny_cnn --pairs 4 --duration-s 1
    python benchmarks/self_audit.py --backend ort --model resnet18 --bare-threads default   (edgebench's auto threads
        against a plain InferenceSession with ORT's defaults)
    python benchmarks/self_audit.py --device dgpu --backend torch --model resnet50 --precision fp16 --batch 64

Prints a JSON line (ratios, median, interval) and a one-line table row; --json writes the record.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bare_loop import MARK_S, marks_from_ends, steady_ips  # noqa: E402  (edgebench-free helpers, one definition)
from stats import bootstrap_median_ci  # noqa: E402


def edgebench_command() -> list[str]:
    script = Path(sys.executable).parent / "edgebench"
    return [str(script)] if script.exists() else [sys.executable, "-m", "edgebench"]


def run_edgebench(args: argparse.Namespace, out: Path) -> dict:
    cmd = [*edgebench_command(), "bench", "--device", args.device, "--models", args.model, "--backends", args.backend,
           "--precisions", args.precision, "--batches", str(args.batch), "--instances", "1", "--out", str(out)]
    if args.duration_s:
        cmd += ["--duration", str(args.duration_s)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"self_audit: {' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    run_dir = sorted(p for p in out.iterdir() if p.is_dir())[-1]
    rows = list(csv.DictReader(open(run_dir / "results.csv")))
    if len(rows) != 1 or not rows[0].get("throughput_ips"):
        raise SystemExit(f"self_audit: expected one measured row in {run_dir}, got "
                         f"{[(r.get('status'), r.get('reason')) for r in rows]}")
    row = rows[0]
    row_dir = next((run_dir / "rows").glob("*/row.json")).parent
    doc = json.loads((row_dir / "row.json").read_text())
    placement = doc["config"]["placements"][0]
    return {"ips": float(row["throughput_ips"]), "steady_ips": edgebench_steady_ips(row_dir, args.batch), "status": row["status"], "reason": row["reason"],
            "threads": int(row["threads_per_instance"]), "threads_note": row.get("threads_note", ""),
            "window_s": float(row["window_s"]),
            "warmup_s": float(row["warmup_s"]), "onnx": doc["artifact"]["path"], "placement": placement,
            "probe": row.get("probe", ""), "command": " ".join(cmd)}


def edgebench_steady_ips(row_dir: Path, batch: int) -> float | None:
    """steady_ips of the row's instance 0, from its per-inference end times (latencies.npz, or latencies.csv.gz from
    an earlier edgebench), as bare_loop computes its own; None when the row kept no latencies."""
    ends = instance0_end_ns(row_dir)
    if ends is None:
        return None
    ends_s = sorted(e / 1e9 for e in ends)
    return steady_ips(marks_from_ends(ends_s, MARK_S), batch) or None


def instance0_end_ns(row_dir: Path) -> list[int] | None:
    """Instance 0's end times from the row's timestamp file, read as docs/run-folder.md documents it (this script
    reads edgebench's output, never its code): latencies.npz (arrays instance, end_ns, ...: np.load reads it), or
    an earlier edgebench's latencies.csv.gz (instance, placement, start_ns, end_ns per line); None when neither."""
    npz, legacy = row_dir / "latencies.npz", row_dir / "latencies.csv.gz"
    if npz.exists():
        import numpy as np

        with np.load(npz, allow_pickle=False) as z:
            return [int(e) for e in z["end_ns"][z["instance"] == 0]]
    if legacy.exists():
        with gzip.open(legacy, "rt", newline="") as fh:
            return [int(r["end_ns"]) for r in csv.DictReader(fh) if r["instance"] == "0"]
    return None


def run_bare(args: argparse.Namespace, ref: dict, profile_first: int = 0) -> dict:
    device = ref["placement"] if ref["placement"].startswith("cuda") else "cpu"
    cmd = [sys.executable, str(HERE / "bare_loop.py"), "--framework", args.backend, "--batch", str(args.batch),
           "--device", device, "--precision", args.precision,
           "--threads", "0" if args.bare_threads == "default" else str(ref["threads"]),
           "--warmup-s", str(ref["warmup_s"]), "--duration-s", f"{ref['window_s']:.3f}"]
    cmd += ["--onnx", ref["onnx"]] if args.backend == "ort" else ["--model", args.model]
    if profile_first:
        cmd += ["--profile-first", str(profile_first)]
    # its own session, like each edgebench instance (setsid): with Linux's scheduler autogroups (on by default on
    # desktops and this machine) a session is one scheduling group, so sharing this script's session would give the
    # bare loop a smaller CPU share than edgebench's instance on a busy machine (seen: ratio ~2 at load 10 on 2 cores)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_bare_env(), start_new_session=True)
    if proc.returncode != 0:
        raise SystemExit(f"self_audit: {' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"ips": float(got["throughput_ips"]), "steady_ips": got.get("steady_ips"), "inferences": got["inferences"],
            "settings": got.get("settings", {}), "command": " ".join(cmd)}


def _bare_env() -> dict:
    """The bare loop must not see edgebench: PYTHONPATH keeps only the entries without an edgebench package
    (e.g. staged wheels such as onnxruntime-gpu in /tmp/site stay; a checkout goes)."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    keep = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and not os.path.isdir(os.path.join(p, "edgebench"))]
    if keep:
        env["PYTHONPATH"] = os.pathsep.join(keep)
    return env


def audit(args: argparse.Namespace) -> dict:
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="edgebench-self-audit-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    ref: dict = {}  # the first edgebench row tells the bare loop its threads, warm-up, window and ONNX file
    if args.a_side == "bare-profiled":
        ref = run_edgebench(args, work / "discover")
    pairs = []
    bare_settings: dict = {}
    bare_command = ""
    for i in range(args.pairs):
        order = ("a", "b") if i % 2 == 0 else ("b", "a")  # pair 0 starts with edgebench (it fills the caches)
        got: dict[str, dict] = {}
        for side in order:
            if side == "b":
                got[side] = run_bare(args, ref)
                bare_settings, bare_command = got[side]["settings"], got[side]["command"]
            elif args.a_side == "bare-profiled":
                got[side] = {**run_bare(args, ref, profile_first=5), "status": "bare", "reason": ""}
            else:
                got[side] = run_edgebench(args, work / f"pair{i}")
            if side == "a" and not ref:
                ref = got["a"]
        steady_a, steady_b = got["a"].get("steady_ips"), got["b"].get("steady_ips")
        pairs.append({"pair": i, "order": "".join(order), "edgebench_ips": got["a"]["ips"],
                      "bare_ips": got["b"]["ips"], "ratio": got["a"]["ips"] / got["b"]["ips"],
                      "edgebench_steady_ips": steady_a, "bare_steady_ips": steady_b,
                      "steady_ratio": steady_a / steady_b if steady_a and steady_b else None,
                      "edgebench_status": got["a"]["status"], "edgebench_reason": got["a"]["reason"]})
        print(json.dumps(pairs[-1]), flush=True)
    median, low, high = bootstrap_median_ci([p["ratio"] for p in pairs], confidence=args.confidence)
    steady = [p["steady_ratio"] for p in pairs if p["steady_ratio"]]
    steady_ci = bootstrap_median_ci(steady, confidence=args.confidence) if len(steady) == len(pairs) else None
    return {"a_side": args.a_side, "device": args.device, "backend": args.backend, "model": args.model, "precision": args.precision,
            "batch": args.batch, "threads": ref["threads"], "placement": ref["placement"], "window_s": ref["window_s"],
            "bare_threads": args.bare_threads, "bare_settings": bare_settings, "bare_command": bare_command,
            "edgebench_threads_note": ref.get("threads_note", ""),
            "pairs": pairs, "ratio_median": median, "ratio_low": low, "ratio_high": high,
            "steady_ratio_median": steady_ci[0] if steady_ci else None,
            "steady_ratio_low": steady_ci[1] if steady_ci else None, "steady_ratio_high": steady_ci[2] if steady_ci else None,
            "confidence": args.confidence, "edgebench_command": ref["command"], "probe": ref["probe"],
            "wall_s": time.monotonic() - t0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="host", help="shipped profile: host (CPU) or dgpu")
    ap.add_argument("--backend", choices=["ort", "torch"], default="ort")
    ap.add_argument("--model", default="tiny_cnn")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--duration-s", type=float, default=None, help="--duration for edgebench (default: the profile's)")
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--bare-threads", choices=["row", "default"], default="row",
                    help="the bare loop's threads: the edgebench row's threads_per_instance (row), or the framework's "
                         "default (default: a plain session as a user opens it)")
    ap.add_argument("--out", help="keep the run folders here")
    ap.add_argument("--json", help="write the record here")
    ap.add_argument("--a-side", choices=["edgebench", "bare-profiled"], default="edgebench",
                    help="bare-profiled: instead of edgebench, the bare loop after a 5-step torch.profiler pass in "
                         "its process: what the in-process kernel profile cost before issue 19 (GPU)")
    args = ap.parse_args(argv)
    rec = audit(args)
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=1))
    mean_a = sum(p["edgebench_ips"] for p in rec["pairs"]) / len(rec["pairs"])
    mean_b = sum(p["bare_ips"] for p in rec["pairs"]) / len(rec["pairs"])
    print("| A side | device | backend | model | precision | batch | threads | pairs | edgebench ips | bare ips | "
          "ratio median | 95% CI |")
    print(f"| {rec['a_side']} | {rec['device']} | {rec['backend']} | {rec['model']} | {rec['precision']} | {rec['batch']} | "
          f"{rec['threads']} | {len(rec['pairs'])} | {mean_a:.1f} | {mean_b:.1f} | {rec['ratio_median']:.3f} | "
          f"[{rec['ratio_low']:.3f}, {rec['ratio_high']:.3f}] |")
    if rec["steady_ratio_median"] is not None:
        print(f"steady (median ~{MARK_S * 1e3:g} ms rate, preemption-robust diagnostic): ratio "
              f"{rec['steady_ratio_median']:.3f} [{rec['steady_ratio_low']:.3f}, {rec['steady_ratio_high']:.3f}]")
    print(f"edgebench threads: {rec['threads']} ({rec['edgebench_threads_note']}); bare loop threads: "
          f"{'framework default' if rec['bare_threads'] == 'default' else rec['threads']}")
    print("bare loop settings: " + json.dumps(rec["bare_settings"], sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
