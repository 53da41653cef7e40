#!/usr/bin/env python3
"""edgebench's SLO verdict against MLPerf LoadGen's Server verdict on the same server (issues 35, 54).

One server: the null backend's serial device, SERVICE_MS (default 4 ms) per request inside an exclusive flock of one
lock file. Both harnesses drive that same device: edgebench's stream process takes the lock for each inference (the
null backend's `serial_device`), and LoadGen's system under test is a bare server process (this file's SERVER: reads
a sample id per line on stdin, takes the same lock, sleeps SERVICE_MS, writes the id back; one at a time, first in
first out). Poisson arrivals, an SLO of p99 <= SLO_MS (500) over WINDOW_S (60 s: LoadGen's min_duration; edgebench's
--horizon-s), at LOADS (0.95, 1.01) of each harness's own measured capacity.

- **edgebench**, as users get an SLO verdict: `python -m edgebench bench --rate R --slo-ms 500 --horizon-s 60
  --max-streams 1 --slo-repeats 1 --arrival poisson` on a profile of the serial device with 1 instance. The search
  measures its capacity reference (a closed loop at 1 stream, --duration CAP_S) before its probe and again after it,
  probes 1 stream (its window starts at CAP_S and runs longer, up to WINDOW_S + 2, while it cannot tell), and writes
  the probe's `slo_verdict`: met (ok row, p99 within the SLO, LoadGen's early stopping shown over the window's
  queries, and p99 + the growth its window cannot exclude over 60 s within it), missed or unmeasured.
  edgebench's verdict here: met, or not met (missed / unmeasured: the search never accepts either).
- **LoadGen** (PyPI mlcommons-loadgen, `import mlperf_loadgen`), Server scenario, PerformanceOnly,
  server_target_qps = R, server_target_latency_ns = the SLO, min_duration WINDOW_S, min_query_count 100. Its verdict:
  the summary's `Result is` (VALID: p99 within the bound and early stopping satisfied; else INVALID).

The capacity each load is a share of, per harness, measured so that a busy host cannot make it read low unnoticed:
edgebench's reference is the closed loop its last search measured after its probe (the first of each host block: a
closed-loop row of its own, measured under that host); LoadGen's is the bare server's completions with BURST ids
queued at once, measured before and after every LoadGen run (and at the start of each host block). Each run states its load against the reading before and the one after (edgebench: its own search's
`capacity_per_s` and `capacity_after_per_s`), the computed bound 1 / SERVICE_MS beside them, and whether the reading
moved by more than 1% and more than its jitter explains (`reference unsure`).

Host conditions: `quiet` (nothing of this benchmark's beside it; other jobs on the host are recorded as the 1-minute
load average) and `busy` (HOGS CPU-bound processes, `while True: pass`, for the cell's two runs). Order: for each
round, quiet then busy, and in each the loads in turn, edgebench then LoadGen at each; round r draws its Poisson
arrivals from seed r on both sides (edgebench's run.seed, LoadGen's schedule_rng_seed).

    .venv/bin/pip install mlcommons-loadgen
    PYTHONPATH=$PWD .venv/bin/python benchmarks/loadgen_agreement.py --out /tmp/lg-cal --rounds 10     # ~2.5 h

`--code DIR` runs the edgebench of another checkout (a copy made before a long run). Writes OUT/records.jsonl (as it
goes), OUT/results.json and OUT/table.md (per cell: runs, each side's verdicts, agreement with its 95%
Clopper-Pearson interval).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
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
import fcntl, os, sys, time
svc = float(sys.argv[1])
lock = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT, 0o644) if len(sys.argv) > 2 else None
out = sys.stdout.buffer
for line in sys.stdin.buffer:  # one request at a time, in arrival order: one server
    if lock is not None:  # the null backend's serial device: the same lock, held while it sleeps
        fcntl.flock(lock, fcntl.LOCK_EX)
    time.sleep(svc)
    if lock is not None:
        fcntl.flock(lock, fcntl.LOCK_UN)
    out.write(line)
    out.flush()
"""


class BareServer:
    """The bare server in its own process; `send(ids)` queues requests, `on_done(id)` is called per completion."""

    def __init__(self, service_s: float, on_done, lock: Path | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(service_s), *([str(lock)] if lock else [])],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
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


def bare_capacity(service_s: float, burst: int, lock: Path | None = None) -> dict:
    """Completions per second of the bare server with BURST requests queued at once (a closed loop's rate), and the
    standard error (% of it) of that rate from the spread of its completions' gaps (renewal: cv / sqrt(n))."""
    done = threading.Event()
    count = [0]
    stamps: list[float] = []

    def on_done(_i: int) -> None:
        count[0] += 1
        stamps.append(time.perf_counter())
        if count[0] == burst:
            done.set()

    server = BareServer(service_s, on_done, lock)
    server.send([0])  # the process is up and its first sleep done before the clock starts
    while count[0] < 1:
        time.sleep(0.01)
    server.send(list(range(1, burst + 1)))
    done.wait(timeout=burst * service_s * 3 + 30)
    server.close()
    gaps = [b - a for a, b in zip(stamps[1:-1], stamps[2:], strict=True)]
    mean = sum(gaps) / len(gaps)
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1))
    return {"per_s": (len(stamps) - 2) / (stamps[-1] - stamps[1]), "se_pct": sd / mean / math.sqrt(len(gaps)) * 100}


def loadgen_run(service_s: float, qps: float, slo_ms: float, window_s: float, outdir: Path, seed: int = 0,
                lock: Path | None = None) -> dict:
    """One LoadGen Server run against the bare server; its summary's verdict, p99 and rates."""
    import mlperf_loadgen as lg

    def on_done(i: int) -> None:
        lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0)])

    server = BareServer(service_s, on_done, lock)

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


def profile_yaml(folder: Path, service_s: float, seed: int = 0, streams: int = 1, name: str = "loadgen-agree",
                 script: str = "benchmarks/loadgen_agreement.py") -> Path:
    """A profile of the null backend's serial device (one lock file in `folder`: one server of `service_s`), `streams`
    instances, written as `folder`/NAME-seedSEED.yaml (benchmarks/capacity_calibration.py writes its own with it)."""
    lock = folder / "device.lock"
    path = folder / f"{name}-seed{seed}.yaml"
    path.write_text(f"""name: {name}
extends: base
description: one server of {service_s * 1e3:g} ms (the null backend's serial device), for {script}
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


def keep(results: dict, out: Path, record: dict) -> None:
    """One run's record: in results.json's list, and appended to records.jsonl at once (a run cut short keeps it)."""
    results["runs"].append(record)
    with open(out / "records.jsonl", "a") as fh:
        fh.write(json.dumps(record) + "\n")


def edgebench_run(code: Path, profile: Path, out: Path, env: dict, *args: str) -> tuple[list[dict], list[dict]]:
    """`python -m edgebench bench` with these arguments: (its results.csv rows, its slo_search.csv lines)."""
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "edgebench", "bench", "--device", str(profile), "--out", str(out),
                           *args], capture_output=True, text=True, env=env, cwd=code, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"edgebench bench {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    with open(run / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    searches = []
    if (run / "slo_search.csv").exists():
        with open(run / "slo_search.csv", newline="") as fh:
            searches = list(csv.DictReader(fh))
    return rows, searches


def num(row: dict, key: str) -> float | None:
    return float(row[key]) if row.get(key) not in (None, "") else None


def moved_pct(before: dict, after: dict) -> tuple[float, bool]:
    """(% moved, beyond what both readings' jitter explains at 99% and beyond 1%: reference unsure)."""
    moved = (after["per_s"] - before["per_s"]) / before["per_s"] * 100.0
    allowed = max(2.576 * math.hypot(before.get("se_pct") or 0.0, after.get("se_pct") or 0.0), 1.0)
    return moved, abs(moved) > allowed


def closed_loop_capacity(row: dict, sub_windows: int = 5) -> dict:
    from statistics import NormalDist

    bound = num(row, "stability_bound_pct")
    z = NormalDist().inv_cdf(1.0 - 0.01 / (2 * sub_windows))
    return {"per_s": float(row["inferences"]) / float(row["window_s"]),
            "se_pct": bound / z / math.sqrt(sub_windows) if bound is not None else None}


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    from scipy.stats import beta

    a = (1 - level) / 2
    return (0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1)), 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k)))


def edgebench_side(code: Path, out: Path, env: dict, service_s: float, seed: int, rate: float, args,
                   tag: str) -> dict:
    rows, searches = edgebench_run(
        code, profile_yaml(out, service_s, seed), out / f"edgebench-{tag}", env, "--rate", f"{rate:.5f}",
        "--arrival", "poisson", "--slo-ms", f"{args.slo_ms:g}", "--horizon-s", f"{args.window_s:g}",
        "--max-streams", "1", "--slo-repeats", "1", "--duration", f"{args.cap_s:g}",
        "--max-duration", f"{args.window_s + 2:g}")
    probes = [r for r in rows if r["scenario"] == "slo-search"]
    closed = [r for r in rows if r["scenario"] == "closed-loop"]
    (search,) = searches
    last = probes[-1]  # the window that decided (earlier ones were too short to tell)
    before = closed_loop_capacity(closed[0]) if closed else None
    after = closed_loop_capacity(closed[1]) if len(closed) > 1 else None
    return {"side": "edgebench", "verdict": last["slo_verdict"], "agrees_valid": last["slo_verdict"] == "met",
            "status": last["status"], "reason": last.get("reason") or "", "p99_ms": num(last, "latency_ms_p99"),
            "offered_per_s": num(last, "offered_rate_hz"), "served_per_s": num(last, "achieved_rate_hz"),
            "windows_s": [num(r, "window_s") for r in probes], "slo_queries": num(last, "slo_queries"),
            "slo_overlatency": num(last, "slo_overlatency"), "slo_growth_bound_ms": num(last, "slo_growth_bound_ms"),
            "backlog_growth_per_s": num(last, "backlog_growth_per_s"),
            "backlog_growth_lo_per_s": num(last, "backlog_growth_lo_per_s"),
            "latency_trend_hi_ms_per_s": num(last, "latency_trend_hi_ms_per_s"),
            "capacity_before": before, "capacity_after": after,
            "capacity_reference": search.get("capacity_reference") or "", "search_notes": search.get("notes") or ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "loadgen-agree")
    ap.add_argument("--code", type=Path, default=REPO, help="the checkout whose edgebench runs (default: this one)")
    ap.add_argument("--service-ms", type=float, default=4.0)
    ap.add_argument("--window-s", type=float, default=60.0)
    ap.add_argument("--cap-s", type=float, default=10.0, help="edgebench's closed loops and first probe window")
    ap.add_argument("--slo-ms", type=float, default=500.0)
    ap.add_argument("--loads", default="0.95,1.01")
    ap.add_argument("--hosts", default="quiet,busy")
    ap.add_argument("--hogs", type=int, default=2, help="CPU-bound processes beside a `busy` cell's runs")
    ap.add_argument("--burst", type=int, default=2500)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--first-round", type=int, default=0,
                    help="the first round's number (its seed): a call cut short is continued by another from there")
    ap.add_argument("--table-from", type=Path, nargs="*", default=None,
                    help="print the table of these records.jsonl files (whole rounds) and measure nothing")
    args = ap.parse_args()
    loads = [float(x) for x in args.loads.split(",")]
    hosts = args.hosts.split(",")
    if args.table_from:
        runs = [json.loads(line) for f in args.table_from for line in f.read_text().splitlines() if line.strip()]
        print("\n".join(table(runs, loads, hosts)))
        return 0
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    code = args.code.resolve()
    service_s = args.service_ms / 1e3
    lock = out / "device.lock"
    env = {**os.environ, "PYTHONPATH": str(code), "EDGEBENCH_CACHE": os.environ.get("EDGEBENCH_CACHE",
                                                                                      str(out / "cache"))}
    bound = 1 / service_s
    print(f"one server of {args.service_ms:g} ms (bound {bound:.4g}/s, one lock file for both harnesses); Poisson "
          f"arrivals; SLO p99 <= {args.slo_ms:g} ms over {args.window_s:g} s; code {code}", flush=True)
    results: dict = {"service_ms": args.service_ms, "window_s": args.window_s, "slo_ms": args.slo_ms,
                     "bound_per_s": bound, "hogs": args.hogs, "runs": []}
    for rnd in range(args.first_round, args.first_round + args.rounds):
        for host in hosts:
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(args.hogs if host == "busy" else 0)]
            try:
                # the host changed: both references measured again under it before its first run
                rows, _ = edgebench_run(code, profile_yaml(out, service_s), out / f"edgebench-capacity-{host}-r{rnd}",
                                        env, "--duration", f"{args.cap_s:g}", "--max-duration", f"{args.cap_s + 2:g}")
                cap_e = closed_loop_capacity(rows[0])
                cap_b = bare_capacity(service_s, args.burst, lock)
                for load in loads:
                    tag = f"{load:g}-{host}-r{rnd}"
                    la0 = os.getloadavg()
                    e = edgebench_side(code, out, env, service_s, rnd, load * cap_e["per_s"], args, tag)
                    e.update(round=rnd, host=host, load=load, reference_per_s=cap_e["per_s"], loadavg_before=la0,
                             loadavg_after=os.getloadavg())
                    if e["capacity_before"] is not None:
                        e["load_vs_before"] = e["offered_per_s"] / e["capacity_before"]["per_s"]
                    if e["capacity_after"] is not None:
                        e["load_vs_after"] = e["offered_per_s"] / e["capacity_after"]["per_s"]
                        cap_e = e["capacity_after"]  # the next run's reference: the latest reading
                    keep(results, out, e)
                    print(f"r{rnd} {host:5s} edgebench {load:.1%}: offered {e['offered_per_s']:.4g}/s served "
                          f"{e['served_per_s']:.4g}/s, windows {e['windows_s']} s: {e['verdict']} ({e['status']}) "
                          f"p99 {e['p99_ms']} ms; queries {e['slo_queries']} over {e['slo_overlatency']}; capacity "
                          f"{e['capacity_reference']}; load avg {la0[0]:.1f}; {e['reason'][:160]}", flush=True)
                    la0 = os.getloadavg()
                    qps = load * cap_b["per_s"]
                    g = loadgen_run(service_s, qps, args.slo_ms, args.window_s, out / f"loadgen-{tag}", seed=rnd,
                                    lock=lock)
                    after_b = bare_capacity(service_s, args.burst, lock)
                    moved, unsure = moved_pct(cap_b, after_b)
                    g.update(side="loadgen", round=rnd, host=host, load=load, offered_per_s=qps,
                             agrees_valid=g["result"] == "VALID", capacity_before=cap_b, capacity_after=after_b,
                             capacity_reference=f"{'unsure' if unsure else 'steady'} ({moved:+.1f}%)",
                             load_vs_before=qps / cap_b["per_s"], load_vs_after=qps / after_b["per_s"],
                             loadavg_before=la0, loadavg_after=os.getloadavg())
                    cap_b = after_b
                    keep(results, out, g)
                    print(f"r{rnd} {host:5s} loadgen   {load:.1%}: target {qps:.4g}/s, completed "
                          f"{g['completed_qps']}/s: {g['result']} p99 {g['p99_ms']} ms (constraints "
                          f"{g['constraints']}, early stopping {g['early_stopping']}); capacity "
                          f"{g['capacity_reference']}; load avg {la0[0]:.1f}", flush=True)
            finally:
                for h in hogs:
                    h.kill()
                    h.wait()
    (out / "results.json").write_text(json.dumps(results, indent=1))
    lines = table(results["runs"], loads, hosts)
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def table(runs: list[dict], loads: list[float], hosts: list[str]) -> list[str]:
    lines = ["| load | host | runs | edgebench met / not met | LoadGen VALID / INVALID | same verdict [95% CI] | "
             "references unsure (edgebench, LoadGen) | load average (1 min) |", "|---|---|---|---|---|---|---|---|"]
    for load in loads:
        for host in hosts:
            e = [r for r in runs if r["side"] == "edgebench" and r["load"] == load and r["host"] == host]
            g = [r for r in runs if r["side"] == "loadgen" and r["load"] == load and r["host"] == host]
            pairs = [(a, b) for a in e for b in g if a["round"] == b["round"]]
            if not pairs:
                continue
            same = sum(a["agrees_valid"] == b["agrees_valid"] for a, b in pairs)
            lo, hi = clopper_pearson(same, len(pairs))
            met = sum(a["agrees_valid"] for a in e)
            valid = sum(b["agrees_valid"] for b in g)
            unsure = (sum(a["capacity_reference"].startswith("unsure") for a in e),
                      sum(b["capacity_reference"].startswith("unsure") for b in g))
            la = [x for r in e + g for x in (r["loadavg_before"][0], r["loadavg_after"][0])]
            lines.append(f"| {load:.1%} | {host} | {len(pairs)} | {met} / {len(e) - met} | {valid} / {len(g) - valid} | "
                         f"{same}/{len(pairs)} [{lo:.0%}, {hi:.0%}] | {unsure[0]}, {unsure[1]} | "
                         f"{min(la):.1f} .. {max(la):.1f} |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
