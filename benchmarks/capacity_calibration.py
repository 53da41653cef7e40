#!/usr/bin/env python3
"""Is edgebench's capacity verdict right on a device of known capacity, on a busy host? (issue 54, build item 8)

The device: the null backend's serial device (`sleep_s` + `serial_device`: every stream process takes one lock file
for each inference and sleeps SLEEP_MS in it, so STREAMS streams share one server; it cannot serve more than
1 / sleep_s a second). edgebench runs as users run it: `python -m edgebench bench` with a profile of that device,
STREAMS streams of `random` arrivals (the default: each stream periodic, its phase drawn from the run's seed),
`--rate` = LOAD x capacity / STREAMS, a fixed-rate row of WINDOW_S seconds. Its verdict: the row's status, ok or
invalid, and why (the backlog grows, runner/backlog_growth.py; the offered rate not sustained; anything else).

The capacity each load is a share of is the device's, measured so that a busy host cannot make it read low unnoticed:
a closed-loop row of STREAMS instances (CAP_WINDOW_S) before every run and again after it (the one after is the next
run's before), each with the standard error its own jitter gives (stability_bound_pct / z / sqrt(sub-windows)), and
the computed bound 1 / sleep_s. A run whose two readings differ by more than both their jitter explains at 99% (at
least 1%, at most 3%), or either of whose closed loops ran on a busy host, is marked `reference unsure` (the rule of
the SLO search's reference, pipeline/slo_decide.py, mirrored here: a benchmark does not import edgebench).

Which capacity a load is taken of, so that every claim errs on its own safe side: a closed loop of STREAMS processes
on one flock reads LOW (each hand-off wakes every waiter: 19.7/s at 50 ms where 5 open-loop streams at 101% of it
were served 19.93/s, a backlog growing by 0.04/s: a first attempt, records kept beside the results), so a load below
1 is taken of the closed loop's reading (the real load is at most that), and a load of 1 or more of the bound
1 / sleep_s, which the device cannot exceed (the real overload is at least that). Each run's realized load is given
against the closed loop's readings before and after it and against the bound.

The host: HOGS CPU-bound processes (`while True: pass`, nice 0) beside it on the host's cores for the whole
benchmark, and whatever else runs there (the 1-, 5- and 15-minute load averages are recorded before and after every
run). Loads are run round-robin, each round in a rotated order, so a drift of the host's load reaches every load.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/capacity_calibration.py --out /tmp/capacity-cal      # ~80 min

`--code DIR` runs the edgebench of another checkout (a copy of this one made before a long run, so that edits to the
tree during the run do not reach it). Writes OUT/records.jsonl (one line per run, as it goes) and OUT/table.md: per
load, the runs, the verdicts, the share flagged with its 95% Clopper-Pearson interval, the references unsure.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from statistics import NormalDist

from loadgen_agreement import profile_yaml  # the serial device's profile (benchmarks/ is on sys.path)

REPO = Path(__file__).resolve().parents[1]
REFERENCE_Z = 2.576  # two-sided 99%
REFERENCE_FLOOR_PCT = 1.0
REFERENCE_CAP_PCT = 3.0
NAME, SCRIPT = "capacity-cal", "benchmarks/capacity_calibration.py"  # the profile's name and who wrote it
OVERLOAD_MARKS = ("backlog grows ", "offered rate not sustained", "latency grows ")


def bench_row(code: Path, profile: Path, out: Path, env: dict, *args: str) -> dict:
    """`python -m edgebench bench` with these arguments; its one row of results.csv."""
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "edgebench", "bench", "--device", str(profile), "--out", str(out),
                           *args], capture_output=True, text=True, env=env, cwd=code, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"edgebench bench {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    with open(run / "results.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    return row


def num(row: dict, key: str) -> float | None:
    return float(row[key]) if row.get(key) not in (None, "") else None


def capacity(code: Path, profile: Path, out: Path, env: dict, window_s: float, sub_windows: int = 5) -> dict:
    """A closed-loop row's inferences per second and the standard error (% of it) its own jitter gives."""
    t0 = time.time()
    row = bench_row(code, profile, out, env, "--duration", f"{window_s:g}", "--max-duration", f"{window_s + 2:g}")
    per_s = float(row["inferences"]) / float(row["window_s"])
    bound = num(row, "stability_bound_pct")
    z = NormalDist().inv_cdf(1.0 - 0.01 / (2 * sub_windows))
    se = bound / z / math.sqrt(sub_windows) if bound is not None else None
    return {"per_s": per_s, "se_pct": se, "status": row["status"], "reason": row.get("reason") or "",
            "window_s": float(row["window_s"]), "at": t0, "busy": str(row.get("host_busy")).lower() == "true"}


def reference_moved(before: dict, after: dict) -> tuple[float, bool]:
    """(% moved, unsure): unsure when it moved beyond what both readings' jitter explains at 99% (at least 1%, at
    most 3%) or either closed loop's row says host_busy (the rule of edgebench's SLO search, pipeline/slo_decide.py,
    read here from the rows)."""
    moved = (after["per_s"] - before["per_s"]) / before["per_s"] * 100.0
    jitter = REFERENCE_Z * math.hypot(before["se_pct"] or 0.0, after["se_pct"] or 0.0)
    allowed = min(max(jitter, REFERENCE_FLOOR_PCT), REFERENCE_CAP_PCT)
    return moved, abs(moved) > allowed or bool(before.get("busy")) or bool(after.get("busy"))


def verdict_of(row: dict) -> str:
    """ok / overload (the backlog grows or the offered rate was not sustained) / other (invalid for another reason)."""
    if row["status"] == "ok":
        return "ok"
    reason = row.get("reason") or ""
    return "overload" if any(m in reason for m in OVERLOAD_MARKS) else "other"


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def table(records: list[dict], loads: list[float]) -> list[str]:
    lines = ["| load (of) | runs | ok | invalid: overload | invalid: other | flagged share [95% CI] | reference "
             "unsure | load of the closed loop's readings (before, after) | of the bound | load average (1 min) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for load in loads:
        rs = [r for r in records if r["load"] == load]
        if not rs:
            continue
        ok = sum(r["verdict"] == "ok" for r in rs)
        over = sum(r["verdict"] == "overload" for r in rs)
        other = len(rs) - ok - over
        flagged = len(rs) - ok
        lo, hi = clopper_pearson(flagged, len(rs))
        unsure = sum(r["reference_unsure"] for r in rs)
        real = [x for r in rs for x in (r["load_vs_before"], r["load_vs_after"])]
        la = [x for r in rs for x in (r["loadavg_before"][0], r["loadavg_after"][0])]
        of_bound = [r["load_vs_bound"] for r in rs]
        lines.append(f"| {load:.1%} ({rs[0]['reference']}) | {len(rs)} | {ok} | {over} | {other} | {flagged}/{len(rs)}"
                     f" = {flagged / len(rs):.0%} [{lo:.0%}, {hi:.0%}] | {unsure} | {min(real):.2%} .. {max(real):.2%} "
                     f"| {min(of_bound):.2%} .. {max(of_bound):.2%} | {min(la):.1f} .. {max(la):.1f} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/capacity-cal"))
    ap.add_argument("--code", type=Path, default=REPO, help="the checkout whose edgebench runs (default: this one)")
    ap.add_argument("--sleep-ms", type=float, default=50.0)
    ap.add_argument("--streams", type=int, default=5)
    ap.add_argument("--window-s", type=float, default=60.0)
    ap.add_argument("--cap-window-s", type=float, default=15.0)
    ap.add_argument("--loads", default="0.90,0.95,1.005,1.01,1.05")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--hogs", type=int, default=1, help="CPU-bound processes beside the device for the whole run")
    ap.add_argument("--over-reference", choices=("bound", "closed"), default="bound",
                    help="what a load >= 1 is a share of: the bound 1 / sleep_s (default) or the closed loop's reading")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped benchmark still ends its CPU hogs
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    code = args.code.resolve()
    sleep_s = args.sleep_ms / 1e3
    loads = [float(x) for x in args.loads.split(",")]
    env = {**os.environ, "PYTHONPATH": str(code), "EDGEBENCH_CACHE": str(out / "cache")}
    bound = 1.0 / sleep_s
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    records: list[dict] = []
    try:
        print(f"serial null device of {args.sleep_ms:g} ms (bound {bound:.4g}/s), {args.streams} random-phase "
              f"streams, {args.window_s:g} s windows, capacity closed loops of {args.cap_window_s:g} s; "
              f"{args.hogs} CPU hog(s); code {code}", flush=True)
        cap = capacity(code, profile_yaml(out, sleep_s, 0, args.streams, NAME, SCRIPT), out / "capacity-0", env, args.cap_window_s)
        n = 0
        for rnd in range(args.runs):
            order = loads[rnd % len(loads):] + loads[:rnd % len(loads)]
            for load in order:
                n += 1
                seed = 1000 + n
                profile = profile_yaml(out, sleep_s, seed, args.streams, NAME, SCRIPT)
                reference = bound if load >= 1 and args.over_reference == "bound" else cap["per_s"]
                rate = load * reference / args.streams
                la0 = os.getloadavg()
                t0 = time.time()
                row = bench_row(code, profile, out / f"run-{n}", env, "--rate", f"{rate:.6f}", "--duration",
                                f"{args.window_s:g}", "--max-duration", f"{args.window_s + 2:g}")
                la1 = os.getloadavg()
                after = capacity(code, profile, out / f"capacity-{n}", env, args.cap_window_s)
                moved, unsure = reference_moved(cap, after)
                offered = float(row["offered_rate_hz"])
                rec = {"run": n, "round": rnd, "load": load, "seed": seed, "rate_per_stream_hz": rate,
                       "offered_per_s": offered, "served_per_s": num(row, "achieved_rate_hz"),
                       "capacity_before_per_s": cap["per_s"], "capacity_before_se_pct": cap["se_pct"],
                       "capacity_after_per_s": after["per_s"], "capacity_after_se_pct": after["se_pct"],
                       "capacity_bound_per_s": bound, "reference_moved_pct": moved, "reference_unsure": unsure,
                       "load_vs_before": offered / cap["per_s"], "load_vs_after": offered / after["per_s"],
                       "load_vs_bound": offered / bound, "reference": "bound" if reference == bound else "closed",
                       "status": row["status"], "verdict": verdict_of(row), "reason": row.get("reason") or "",
                       "window_s": num(row, "window_s"), "p99_ms": num(row, "latency_ms_p99"),
                       "backlog_growth_per_s": num(row, "backlog_growth_per_s"),
                       "backlog_growth_lo_per_s": num(row, "backlog_growth_lo_per_s"),
                       "backlog_growth_hi_per_s": num(row, "backlog_growth_hi_per_s"),
                       "latency_trend_ms_per_s": num(row, "latency_trend_ms_per_s"),
                       "latency_trend_lo_ms_per_s": num(row, "latency_trend_lo_ms_per_s"),
                       "latency_trend_hi_ms_per_s": num(row, "latency_trend_hi_ms_per_s"),
                       "loadavg_before": la0, "loadavg_after": la1, "started": t0, "hogs": args.hogs}
                records.append(rec)
                with open(out / "records.jsonl", "a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                print(f"run {n:3d} load {load:.3f} of {rec['reference']} ({rec['load_vs_before']:.2%} .. "
                      f"{rec['load_vs_after']:.2%} of the closed loop, {rec['load_vs_bound']:.2%} of the bound, "
                      f"capacity {cap['per_s']:.4g} -> {after['per_s']:.4g}/s{' UNSURE' if unsure else ''}): "
                      f"{rec['verdict']:8s} backlog {rec['backlog_growth_per_s']} [{rec['backlog_growth_lo_per_s']}, "
                      f"{rec['backlog_growth_hi_per_s']}]/s; load avg {la0[0]:.1f}->{la1[0]:.1f}; "
                      f"{rec['reason'][:160]}", flush=True)
                cap = after
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    lines = table(records, loads)
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
