#!/usr/bin/env python3
"""edgebench's verdict against MLPerf LoadGen's Server verdict on the same offered load (issue 35).

One server of a known service time (SERVICE_S, default 4 ms: capacity about 245/s), two harnesses, interleaved:
- edgebench, as users run it: `python -m edgebench bench` with a profile of the null backend's serial device
  (every stream process takes one lock file for each inference and sleeps SERVICE_S in it: one server), STREAMS
  (1) streams of Poisson arrivals (`--arrival poisson`: a Poisson process of the total rate), a fixed-rate row of
  WINDOW_S seconds. One stream serves its arrivals first in first out, as the bare server does; several streams
  share the lock in no fixed order (flock), a different queue (at 95% and 4 streams a 10 s smoke run had p99 459 ms
  where the FIFO server had 72 ms). Its verdict: the row's status and reason (ok, or invalid when its latency trend proves the
  backlog grows), and whether the SLO holds over a horizon by run.slo_horizon_s's rule, read from the row's
  columns (p99 + max(latency_trend_hi_ms_per_s, 0) x horizon <= SLO; a proven growth that breaks it: missed),
  for the run's own length (WINDOW_S: what LoadGen's run judges) and for 600 s (edgebench's default, MLPerf's
  minimum Server run).
- LoadGen (PyPI mlcommons-loadgen, `import mlperf_loadgen`), Server scenario, PerformanceOnly, Poisson arrivals at
  server_target_qps, server_target_latency_ns = the SLO, min_duration WINDOW_S (min_query_count 100, so the
  duration decides), driving a bare server in a separate process (this file's SERVER: reads a sample id per line
  on stdin, sleeps SERVICE_S, writes it back; one at a time, first in first out). Its verdict: the summary's
  `Result is` (VALID / INVALID: p99 over the bound, or early stopping fails) and its p99.

Each side's capacity is measured first, by its own closed loop (edgebench: a closed-loop row of STREAMS instances;
the bare server: BURST ids written at once, completions timed), and each is offered LOADS (0.95, 1.015) of its own
capacity. Order: edgebench then LoadGen at each load (A B A B), --rounds times over; round r draws its Poisson
arrivals from seed r on both sides (edgebench's run.seed, LoadGen's schedule_rng_seed). No edgebench import: the CLI
only. edgebench's row counts the inferences served inside its window (those still queued at its end are not in
its p99); LoadGen waits for every query it issued, so under overload its p99 holds the whole backlog and is larger.

    .venv/bin/pip install mlcommons-loadgen
    .venv/bin/python benchmarks/loadgen_agreement.py --out /tmp/loadgen-agree        # ~6 min on 2 cores

Writes OUT/results.json and OUT/table.md (the table docs/results/loadgen-agreement.md keeps); prints each verdict
as it comes.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SERVER = r"""
import sys, time
svc = float(sys.argv[1])
out = sys.stdout.buffer
for line in sys.stdin.buffer:  # one request at a time, in arrival order: one server
    time.sleep(svc)
    out.write(line)
    out.flush()
"""


class BareServer:
    """The bare server in its own process; `send(ids)` queues requests, `on_done(id)` is called per completion."""

    def __init__(self, service_s: float, on_done) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(service_s)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, bufsize=0)
        self.lock = threading.Lock()
        self.on_done = on_done
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.on_done(int(line))

    def send(self, ids: list[int]) -> None:
        assert self.proc.stdin is not None
        with self.lock:
            self.proc.stdin.write(b"".join(b"%d\n" % i for i in ids))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.reader.join(timeout=10)


def bare_capacity(service_s: float, burst: int) -> float:
    """Completions per second of the bare server with BURST requests queued at once (a closed loop's rate)."""
    done = threading.Event()
    count = [0]
    stamps: list[float] = []

    def on_done(_i: int) -> None:
        count[0] += 1
        stamps.append(time.perf_counter())
        if count[0] == burst:
            done.set()

    server = BareServer(service_s, on_done)
    server.send([0])  # the process is up and its first sleep done before the clock starts
    while count[0] < 1:
        time.sleep(0.01)
    server.send(list(range(1, burst + 1)))
    done.wait(timeout=burst * service_s * 3 + 30)
    server.close()
    return (len(stamps) - 2) / (stamps[-1] - stamps[1])


def loadgen_run(service_s: float, qps: float, slo_ms: float, window_s: float, outdir: Path, seed: int = 0) -> dict:
    """One LoadGen Server run against the bare server; its summary's verdict, p99 and rates."""
    import mlperf_loadgen as lg

    def on_done(i: int) -> None:
        lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0)])

    server = BareServer(service_s, on_done)

    def issue(samples) -> None:
        server.send([s.id for s in samples])

    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(1024, 1024, lambda s: None, lambda s: None)
    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.Server
    settings.mode = lg.TestMode.PerformanceOnly
    settings.server_target_qps = qps
    settings.server_target_latency_ns = int(slo_ms * 1e6)
    settings.min_duration_ms = int(window_s * 1000)
    settings.min_query_count = 100
    settings.schedule_rng_seed = seed  # the Poisson draws: round r draws afresh, as edgebench's run.seed r does
    outdir.mkdir(parents=True, exist_ok=True)
    log = lg.LogOutputSettings()
    log.outdir = str(outdir)
    log.copy_summary_to_stdout = False
    log_settings = lg.LogSettings()
    log_settings.log_output = log
    log_settings.enable_trace = False
    t0 = time.monotonic()
    lg.StartTestWithLogSettings(sut, qsl, settings, log_settings)
    wall = time.monotonic() - t0
    lg.DestroyQSL(qsl)
    lg.DestroySUT(sut)
    server.close()
    text = (outdir / "mlperf_log_summary.txt").read_text()

    def field(pattern: str) -> str | None:
        m = re.search(pattern, text, re.MULTILINE)
        return m.group(1).strip() if m else None

    p99_ns = field(r"^99\.00 percentile latency \(ns\)\s*:\s*(\d+)")
    return {"result": field(r"^Result is\s*:\s*(\S+)"), "p99_ms": int(p99_ns) / 1e6 if p99_ns else None,
            "scheduled_qps": field(r"^Scheduled samples per second\s*:\s*([\d.]+)"),
            "completed_qps": field(r"^Completed samples per second\s*:\s*([\d.]+)"),
            "constraints": field(r"Performance constraints satisfied\s*:\s*(\S+)"),
            "early_stopping": field(r"Early stopping satisfied\s*:\s*(\S+)"), "wall_s": round(wall, 1)}


def profile_yaml(folder: Path, service_s: float, streams: int, seed: int = 0) -> Path:
    lock = folder / "device.lock"
    path = folder / f"loadgen-agree-seed{seed}.yaml"
    path.write_text(f"""name: loadgen-agree
extends: base
description: one server of {service_s * 1e3:g} ms (the null backend's serial device), for benchmarks/loadgen_agreement.py
sweep:
  models: [tiny_cnn]
  backends: ["null"]
  precisions: [fp32]
  batches: [1]
  instances: [{streams}]
  modes: [process]
  option_sets: [{{sleep_s: {service_s}, serial_device: "{lock}"}}]
run:
  warmup_s: 1.0
  accuracy_samples: 0
  seed: {seed}
telemetry:
  samplers: [host]
""")
    return path


def edgebench_row(profile: Path, out: Path, env: dict, *args: str) -> dict:
    """`python -m edgebench bench` with these arguments; its one row of results.csv."""
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "edgebench", "bench", "--device", str(profile), "--out", str(out),
                           *args], capture_output=True, text=True, env=env, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"edgebench bench {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    with open(run / "results.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    return row


def num(row: dict, key: str) -> float | None:
    return float(row[key]) if row.get(key) not in (None, "") else None


def slo_over(row: dict, slo_ms: float, horizon_s: float) -> str:
    """run.slo_horizon_s's rule on a fixed-rate row's columns: met / missed / unmeasured (runner.load.slo_verdict)."""
    p99, lo, hi = num(row, "latency_ms_p99"), num(row, "latency_trend_lo_ms_per_s"), num(row, "latency_trend_hi_ms_per_s")
    if p99 is None:
        return "unmeasured (no p99)"
    if p99 > slo_ms:
        return f"missed (p99 {p99:.4g} ms)"
    if "latency grows " in (row.get("reason") or "") and lo is not None and p99 + lo * horizon_s > slo_ms:
        return f"missed (p99 + {lo:.3g} ms/s x {horizon_s:g} s = {p99 + lo * horizon_s:.4g} ms)"
    if row["status"] != "ok" or hi is None:
        return "unmeasured"
    total = p99 + max(hi, 0.0) * horizon_s
    return f"{'met' if total <= slo_ms else 'unmeasured'} (p99 + growth bound = {total:.4g} ms)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "loadgen-agree")
    ap.add_argument("--service-ms", type=float, default=4.0)
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--window-s", type=float, default=60.0)
    ap.add_argument("--slo-ms", type=float, default=500.0)
    ap.add_argument("--loads", default="0.95,1.015")
    ap.add_argument("--burst", type=int, default=2500)
    ap.add_argument("--rounds", type=int, default=1, help="the loads this many times over (each round A B A B)")
    args = ap.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    service_s = args.service_ms / 1e3
    env = {**os.environ, "PYTHONPATH": str(REPO), "EDGEBENCH_CACHE": os.environ.get("EDGEBENCH_CACHE",
                                                                                      str(out / "cache"))}
    profile = profile_yaml(out, service_s, args.streams)
    loads = [float(x) for x in args.loads.split(",")]
    print(f"one server of {args.service_ms:g} ms; {args.streams} edgebench streams; Poisson arrivals; "
          f"{args.window_s:g} s runs; SLO p99 <= {args.slo_ms:g} ms", flush=True)

    closed = edgebench_row(profile, out / "edgebench-capacity", env, "--duration", "10", "--max-duration", "12")
    cap_e = float(closed["throughput_ips"])
    cap_b = bare_capacity(service_s, args.burst)
    print(f"capacity: edgebench serial device {cap_e:.4g}/s (closed loop, {args.streams} instances, row "
          f"{closed['status']}); bare server {cap_b:.4g}/s ({args.burst} queued at once); nominal "
          f"{1 / service_s:.4g}/s", flush=True)
    results = {"service_ms": args.service_ms, "streams": args.streams, "window_s": args.window_s,
               "slo_ms": args.slo_ms, "capacity_edgebench_per_s": cap_e, "capacity_bare_per_s": cap_b, "runs": []}
    for rnd, load in ((r, ld) for r in range(args.rounds) for ld in loads):
        rate = load * cap_e / args.streams
        tag = f"{load:g}" + (f"-r{rnd}" if rnd else "")
        row = edgebench_row(profile_yaml(out, service_s, args.streams, rnd), out / f"edgebench-{tag}", env, "--rate", f"{rate:.5f}", "--arrival",
                            "poisson", "--duration", f"{args.window_s:g}", "--max-duration", f"{args.window_s + 2:g}")
        e = {"side": "edgebench", "round": rnd, "load": load, "offered_per_s": num(row, "offered_rate_hz"),
             "served_per_s": num(row, "achieved_rate_hz"), "status": row["status"], "reason": row.get("reason") or "",
             "p99_ms": num(row, "latency_ms_p99"), "trend_ms_per_s": num(row, "latency_trend_ms_per_s"),
             "trend_lo": num(row, "latency_trend_lo_ms_per_s"), "trend_hi": num(row, "latency_trend_hi_ms_per_s"),
             "window_s": num(row, "window_s"), f"slo_{args.window_s:g}s": slo_over(row, args.slo_ms, args.window_s),
             "slo_600s": slo_over(row, args.slo_ms, 600.0)}
        results["runs"].append(e)
        print(f"edgebench {load:.1%}: offered {e['offered_per_s']:.4g}/s served {e['served_per_s']:.4g}/s: "
              f"{e['status']} p99 {e['p99_ms']:.4g} ms, trend {e['trend_ms_per_s']:.3g} [{e['trend_lo']:.3g}, "
              f"{e['trend_hi']:.3g}] ms/s; SLO over {args.window_s:g} s: {e[f'slo_{args.window_s:g}s']}; over 600 s: "
              f"{e['slo_600s']}; {e['reason'][:200]}", flush=True)
        lg_res = loadgen_run(service_s, load * cap_b, args.slo_ms, args.window_s, out / f"loadgen-{tag}", seed=rnd)
        lg_res.update(side="loadgen", round=rnd, load=load, offered_per_s=load * cap_b)
        results["runs"].append(lg_res)
        print(f"loadgen   {load:.1%}: target {load * cap_b:.4g}/s, scheduled {lg_res['scheduled_qps']}/s, "
              f"completed {lg_res['completed_qps']}/s: {lg_res['result']} p99 {lg_res['p99_ms']} ms; "
              f"performance constraints satisfied: {lg_res['constraints']}; early stopping satisfied: "
              f"{lg_res['early_stopping']}", flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    lines = [f"| round | load | side | offered /s | served /s | verdict | p99 ms | trend ms/s [95%] | SLO "
             f"{args.slo_ms:g} ms over {args.window_s:g} s | over 600 s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["runs"]:
        if r["side"] == "edgebench":
            lines.append(f"| {r['round']} | {r['load']:.1%} | edgebench | {r['offered_per_s']:.4g} | "
                         f"{r['served_per_s']:.4g} | {r['status']} | {r['p99_ms']:.4g} | {r['trend_ms_per_s']:.3g} "
                         f"[{r['trend_lo']:.3g}, {r['trend_hi']:.3g}] | {r[f'slo_{args.window_s:g}s']} | "
                         f"{r['slo_600s']} |")
        else:
            lines.append(f"| {r['round']} | {r['load']:.1%} | LoadGen | {r['offered_per_s']:.4g} | "
                         f"{r['completed_qps']} | {r['result']} (constraints {r['constraints']}, early stopping "
                         f"{r['early_stopping']}) | {r['p99_ms']:.4g} | - | - | - |")
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
