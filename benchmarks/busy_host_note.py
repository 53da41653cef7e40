#!/usr/bin/env python3
"""A busy host named, and no int8 cause named from rows measured on one (issue 54, build item 7), through the CLI.

Cases built to break it, each RUNS times, in rotation (quiet, busy, int8-busy, quiet, ...):
- quiet      `edgebench bench --device smoke --precisions fp32,int8 --batches 1 --instances 1 --repeats R` alone
             (the real ONNX Runtime path: tiny_cnn, one 2-thread instance on this 2-core host);
- busy       the same with HOGS CPU-bound processes (`python -c 'while 1: pass'`) beside it for the whole command;
- int8-busy  the hogs run only while int8 rows run (started at an int8 row's "running" line, stopped at the next
             other row's): int8 reads slower than fp32 because of the hogs, the case issue 54 reported ("int8 is
             2.5x slower ... Quantize/DequantizeLinear nodes left unfused" from rows on a busy host).
The truth is the hog: a row "had the hog" when a hog ran through it (by construction). Per case the table gives the
rows whose host_busy is true among the rows with and without the hog, the rows' cpu_taken_by_others_pct, the
throughput of rows with the hog against the quiet rows' median, and the int8 notes the command printed: a cause
("note: int8 is ...") or a note that names none ("note: int8 read ..."), and how many causes came from a
configuration whose rows had the hog (must be 0). "old rule" is what edgebench named before issue 54 (a cause from
ok and invalid rows alike, whenever every int8 repeat read below every fp32 one), read from the same results.csv.

The host is shared (other people's jobs run on its 2 cores), so "quiet" is only "no hog of ours": each command's
1-minute load average before it and an independent reading of the other processes' CPU over the whole command (from
/proc/stat, less the CPU of the edgebench process tree and of the hogs, from os.wait4's rusage) are recorded beside
it; a quiet row with host_busy is a false note only where nothing else was running: the column "in commands where
others took < 10% of the host" counts only those. --settle-s S waits (at most S s) before each command for a 5-s
reading of the host under 15% busy, so that some commands start on a calm host.

--null-trials K: the stated chance of the cause rule ("every int8 repeat below every fp32 one: 1 in 20 by chance")
on K pairs of identical configurations (throughputs drawn from one lognormal(0, 0.1), seed --seed) at 3+3 and at 2+2
repeats, quiet rows: one synthetic run folder read by `edgebench best`, the notes counted.

    .venv/bin/python benchmarks/busy_host_note.py --runs 5 --settle-s 20 --out /tmp/busy-host   # ~15 min, 2 cores

Writes OUT/results.json (every command, row and note) and OUT/table.md; prints the table.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = ["bench", "--device", "smoke", "--precisions", "fp32,int8", "--batches", "1", "--instances", "1"]
CASES = ("quiet", "busy", "int8-busy")
START = re.compile(r"^\[\d+/\d+\] (\S+): running")
HOG = "while 1: pass"


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "edgebench", *args]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}


def proc_stat() -> tuple[float, float]:
    """(busy, total) jiffies of all cores, as /proc/stat's first line counts them (idle + iowait idle)."""
    fields = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return total - fields[3] - fields[4], total


class Hogs:
    """CPU-bound processes this script starts and stops (by their own pids)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen] = []
        self.cpu_s = 0.0

    def start(self) -> None:
        if not self.procs:
            self.procs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(self.n)]

    def stop(self) -> None:
        for p in self.procs:
            p.send_signal(signal.SIGKILL)
            _pid, _status, usage = os.wait4(p.pid, 0)
            p.returncode = -9
            self.cpu_s += usage.ru_utime + usage.ru_stime
        self.procs = []


def settle(max_s: float, below_pct: float = 15.0, probe_s: float = 5.0) -> tuple[float, float]:
    """Wait (at most max_s) until the host's busy share over probe_s is below below_pct: (waited s, last share %)."""
    t0 = time.monotonic()
    share = 100.0
    while True:
        busy0, total0 = proc_stat()
        time.sleep(probe_s)
        busy1, total1 = proc_stat()
        share = 100.0 * (busy1 - busy0) / max(total1 - total0, 1.0)
        if share < below_pct or time.monotonic() - t0 >= max_s:
            return time.monotonic() - t0, share


def run_command(case: str, out: Path, repeats: int, hogs_n: int, settle_s: float) -> dict[str, Any]:
    waited_s, share_before = settle(settle_s) if settle_s > 0 else (0.0, float("nan"))
    hogs = Hogs(hogs_n)
    load_before = os.getloadavg()[0]
    busy0, total0 = proc_stat()
    t0 = time.monotonic()
    if case == "busy":
        hogs.start()
    cmd = cli(*BENCH, "--repeats", str(repeats), "--out", str(out))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(), cwd=REPO)
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if case == "int8-busy" and (m := START.match(line)):
            if "/int8/" in m.group(1):
                hogs.start()
            else:
                hogs.stop()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    hogs.stop()
    busy1, total1 = proc_stat()
    wall_s = time.monotonic() - t0
    cores = os.cpu_count() or 1
    host_cores = (busy1 - busy0) / max(total1 - total0, 1.0) * cores  # mean busy cores over the command
    edgebench_cores = (usage.ru_utime + usage.ru_stime) / wall_s
    others_cores = max(0.0, host_cores - edgebench_cores - hogs.cpu_s / wall_s)
    run_dir = next((Path(line.split(": ", 1)[1].strip()) for line in lines if line.startswith("run folder: ")), None)
    return {"case": case, "command": " ".join(cmd), "returncode": proc.returncode, "wall_s": wall_s,
            "settle_waited_s": waited_s, "host_busy_pct_before": share_before,
            "load_1min_before": load_before, "host_busy_cores": host_cores, "edgebench_cores": edgebench_cores,
            "hog_cores": hogs.cpu_s / wall_s, "others_cores": others_cores, "cores": cores,
            "run_dir": str(run_dir) if run_dir else None, "notes": [x for x in lines if x.startswith("note: int8 ")],
            "stdout_tail": lines[-40:], "rows": read_rows(run_dir, case) if run_dir else []}


def read_rows(run_dir: Path, case: str) -> list[dict[str, Any]]:
    rows = []
    with open(run_dir / "results.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            hog = case == "busy" or (case == "int8-busy" and r["precision"] == "int8")
            rows.append({"precision": r["precision"], "repeat": r["repeat"], "status": r["status"],
                         "throughput_ips": float(r["throughput_ips"]) if r["throughput_ips"] else None,
                         "host_busy": {"true": True, "false": False}.get(r.get("host_busy", "").lower()),
                         "cpu_taken_by_others_pct": float(r["cpu_taken_by_others_pct"])
                         if r.get("cpu_taken_by_others_pct") else None,
                         "others_cpu_pct_mean": float(r["others_cpu_pct_mean"]) if r.get("others_cpu_pct_mean")
                         else None,
                         "proc_cpu_pct_mean": float(r["proc_cpu_pct_mean"]) if r.get("proc_cpu_pct_mean") else None,
                         "reason": r["reason"], "hog": hog})
    return rows


def old_rule_names_a_cause(rows: list[dict[str, Any]]) -> bool:
    """Before issue 54: a cause whenever every measured (ok or invalid) int8 repeat read below every fp32 one."""
    tput = {p: [r["throughput_ips"] for r in rows if r["precision"] == p and r["status"] in ("ok", "invalid")
                and r["throughput_ips"] is not None] for p in ("int8", "fp32")}
    return bool(tput["int8"] and tput["fp32"] and max(tput["int8"]) < min(tput["fp32"]))


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fmt(value: float | None, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


def case_line(case: str, commands: list[dict[str, Any]], quiet_median: dict[str, float]) -> list[str]:
    rows = [r for c in commands for r in c["rows"] if r["status"] in ("ok", "invalid")]
    hog = [r for r in rows if r["hog"]]
    free = [r for r in rows if not r["hog"]]
    ratios = [r["throughput_ips"] / quiet_median[r["precision"]] for r in hog
              if r["throughput_ips"] and quiet_median.get(r["precision"])]
    causes = [c for c in commands for n in c["notes"] if n.startswith("note: int8 is ")]
    from_hog = [c for c in causes if any(r["hog"] for r in c["rows"])]
    withheld = sum(n.startswith("note: int8 read ") for c in commands for n in c["notes"])
    taken_hog = [r["cpu_taken_by_others_pct"] for r in hog if r["cpu_taken_by_others_pct"] is not None]
    taken_free = [r["cpu_taken_by_others_pct"] for r in free if r["cpu_taken_by_others_pct"] is not None]
    others = [c["others_cores"] / c["cores"] * 100 for c in commands]
    with_hogs = [(c["others_cores"] + c["hog_cores"]) / c["cores"] * 100 for c in commands]
    windows = [r["others_cpu_pct_mean"] for r in rows if r["others_cpu_pct_mean"] is not None]
    calm = [r for c in commands if c["others_cores"] / c["cores"] * 100 < CALM_PCT for r in c["rows"]
            if r["status"] in ("ok", "invalid") and not r["hog"]]
    loads = [c["load_1min_before"] for c in commands]
    return [case, str(len(commands)), str(len(rows)),
            f"{sum(r['host_busy'] is True for r in hog)} / {len(hog)}",
            f"{sum(r['host_busy'] is True for r in free)} / {len(free)}",
            f"{sum(r['host_busy'] is True for r in calm)} / {len(calm)}",
            f"{fmt(min(taken_hog, default=None))}-{fmt(max(taken_hog, default=None))}" if taken_hog else "-",
            f"{fmt(median(taken_free))} [{fmt(min(taken_free, default=None))}, {fmt(max(taken_free, default=None))}]"
            if taken_free else "-",
            fmt(median(ratios), ".2f"),
            f"{fmt(median(windows))} [{fmt(min(windows, default=None))}, {fmt(max(windows, default=None))}]"
            if windows else "-",
            f"{fmt(min(with_hogs))}-{fmt(max(with_hogs))}", f"{fmt(min(others))}-{fmt(max(others))}",
            f"{min(loads):.1f}-{max(loads):.1f}",
            str(len(causes)), str(len(from_hog)), str(withheld),
            str(sum(old_rule_names_a_cause(c["rows"]) for c in commands))]


CALM_PCT = 10.0  # a command during which the others (not edgebench, not the hogs) took less of the host than this

HEAD = ["case", "commands", "measured rows", "host_busy / rows with the hog", "host_busy / rows without",
        f"host_busy / rows without, in commands where others took < {CALM_PCT:g}% of the host (independent)",
        "taken % (hog rows)", "taken % (rows without: median [min, max])", "throughput with the hog / quiet median",
        "others' CPU in the rows' windows, % of host (others_cpu_pct_mean: median [min, max])",
        "others' CPU over each command, hogs included, % of host (independent)", "of it not the hogs",
        "load 1 min before",
        "int8 cause notes", "of them from rows with the hog", "int8 notes naming no cause",
        "commands where the old rule (before issue 54) names a cause"]


# ------------------------------------------------------------------------------------------ null trials

NULL_COLUMNS = ["model", "backend", "precision", "batch", "instances", "mode", "placement", "throughput_ips",
                "latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "power_w_mean", "energy_per_inference_mj",
                "status", "reason", "run_id", "row_index", "config_hash", "repeat", "threads_per_instance",
                "host_busy", "cpu_taken_by_others_pct", "edgebench_version"]


def null_trials(out: Path, trials: int, seed: int) -> list[dict[str, Any]]:
    """Identical fp32 and int8 configurations, quiet ok rows: the share that gets a cause (stated 1 in C(n+m, n))."""
    results = []
    for n in (3, 2):
        rng = random.Random(seed * 100 + n)
        run_dir = out / f"null-{n}x{n}"
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(run_dir / "results.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(NULL_COLUMNS)
            index = 0
            for t in range(trials):
                for precision in ("fp32", "int8"):
                    for rep in range(n):
                        ips = 1000.0 * rng.lognormvariate(0.0, 0.1)
                        w.writerow([f"m{t:05d}", "ort", precision, 1, 1, "process", "cpu", repr(ips), 1.0, 1.0, 1.0,
                                    "", "", "ok", "", "null", index, f"h{index:08d}", rep, 2, "false", 1.0, "0"])
                        index += 1
        proc = subprocess.run(cli("best", str(run_dir)), capture_output=True, text=True, env=env(), cwd=REPO)
        lines = proc.stdout.splitlines()
        causes = sum(x.startswith("note: int8 is ") for x in lines)
        withheld = sum(x.startswith("note: int8 read ") for x in lines)
        stated = 1.0 / math.comb(2 * n, n)
        results.append({"repeats": f"{n}+{n}", "trials": trials, "returncode": proc.returncode,
                        "cause_notes": causes, "withheld_notes": withheld, "order_rate": (causes + withheld) / trials,
                        "stated_order_chance": stated, "cause_rate": causes / trials, "stderr_tail": proc.stderr[-500:]})
    return results


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def markdown(head: list[str], body: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                      *["| " + " | ".join(r) + " |" for r in body]])


def render(data: dict[str, Any]) -> str:
    """The tables of a results.json."""
    args, commands, null = data["args"], data["commands"], data["null"]
    quiet_rows = [r for c in commands["quiet"] for r in c["rows"] if r["status"] == "ok" and r["throughput_ips"]]
    quiet_median = {p: statistics.median([r["throughput_ips"] for r in quiet_rows if r["precision"] == p])
                    for p in ("fp32", "int8") if any(r["precision"] == p for r in quiet_rows)}
    body = [case_line(case, commands[case], quiet_median) for case in CASES if commands[case]]
    null_body = []
    for rec in null:
        lo, hi = wilson(rec["cause_notes"], rec["trials"])
        olo, ohi = wilson(rec["cause_notes"] + rec["withheld_notes"], rec["trials"])
        null_body.append([rec["repeats"], str(rec["trials"]), f"{rec['stated_order_chance']:.3f}",
                          f"{rec['order_rate']:.3f} [{olo:.3f}, {ohi:.3f}]",
                          f"{rec['cause_rate']:.3f} [{lo:.3f}, {hi:.3f}]", str(rec["returncode"])])
    return "\n\n".join([
        f"busy_host_note.py --runs {args['runs']} --repeats {args['repeats']} --hogs {args['hogs']} --null-trials "
        f"{args['null_trials']} --seed {args['seed']} --settle-s {args.get('settle_s', '0')}; started "
        f"{data['started_utc']}; {os.cpu_count()} cores; quiet medians "
        + ", ".join(f"{p} {v:.0f}/s" for p, v in quiet_median.items()),
        markdown(HEAD, body),
        markdown(["repeats (int8+fp32), identical configurations", "trials", "stated chance of the order",
                  "order seen (int8 below fp32 on every repeat) [95% Wilson]", "cause notes named [95% Wilson]",
                  "best exit"], null_body) if null_body else ""])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="commands per case")
    ap.add_argument("--repeats", type=int, default=3, help="--repeats of each command (3: the fewest for a cause)")
    ap.add_argument("--hogs", type=int, default=2, help="CPU-bound processes beside the busy cases")
    ap.add_argument("--null-trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=54)
    ap.add_argument("--settle-s", type=float, default=0.0,
                    help="before each command wait up to S s for the host to be < 15%% busy over 5 s (others' jobs)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"which cases, in rotation (default {','.join(CASES)})")
    ap.add_argument("--from-json", type=Path, help="print the tables of an earlier run's results.json, measure nothing")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.from_json is not None:
        print(render(json.loads(args.from_json.read_text())))
        return 0
    if args.out is None:
        ap.error("--out is required (or --from-json)")
    args.out.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    cases = [c for c in args.cases.split(",") if c]
    if unknown := set(cases) - set(CASES):
        ap.error(f"--cases: unknown {', '.join(sorted(unknown))} (known: {', '.join(CASES)})")
    commands: dict[str, list[dict[str, Any]]] = {c: [] for c in CASES}
    for i in range(args.runs):
        for case in cases:
            rec = run_command(case, args.out / case, args.repeats, args.hogs, args.settle_s)
            commands[case].append(rec)
            busy = sum(r["host_busy"] is True for r in rec["rows"])
            print(f"[{i + 1}/{args.runs}] {case}: exit {rec['returncode']}, {len(rec['rows'])} rows, {busy} host_busy, "
                  f"load {rec['load_1min_before']:.1f}, others {rec['others_cores']:.2f} cores; "
                  f"{rec['notes'] or 'no int8 note'}", flush=True)
    null = null_trials(args.out, args.null_trials, args.seed) if args.null_trials else []
    data = {"args": {k: str(v) for k, v in vars(args).items()}, "started_utc": started, "commands": commands,
            "null": null}
    (args.out / "results.json").write_text(json.dumps(data, indent=1))
    text = render(json.loads(json.dumps(data)))
    (args.out / "table.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
