#!/usr/bin/env bash
# Issue 12 on one NVIDIA H100/H200 (device kind nvidia-h100-x1 or nvidia-h200), about 6-7 minutes in all:
#   1. overhead  retired here: the harness is audited as users run it by benchmarks/gpu_self_audit.sh (the CLI
#                against benchmarks/bare_loop.py in another process); `overhead` runs its torch part
#   2. mps       MPS vs time-slicing: ResNet-50 fp16 torch, batch 1 and 16, 1/2/4 instances (process mode)
#   3. slo       the most 30 fps streams whose p99 (queueing included) stays <= 33 ms, ResNet-50 fp16 torch b1
# Usage:  OUT=/path benchmarks/gpu_load.sh [all|overhead|mps|slo]      (onnxruntime-gpu: PYTHONPATH=/tmp/site:$PWD)
# Every part logs to $OUT/<part>.log; run folders under $OUT/runs; the short tables come last ($OUT/tables.txt).
# nvidia-cuda-mps-control missing -> the mps rows are `skipped` with that reason (the table says so).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuout}; RUNS=$OUT/runs
mkdir -p "$OUT" "$RUNS"
export PYTHONUNBUFFERED=1 EDGEBENCH_CACHE=${EDGEBENCH_CACHE:-/tmp/ebcache}
part=${1:-all}
PROFILE=$OUT/gpu-load.yaml
cat > "$PROFILE" <<'YAML'
name: gpu-load
extends: dgpu
description: issue 12 - MPS vs time-slicing and SLO search (ResNet-50 fp16 torch), short windows
sweep:
  models: [resnet50]
  backends: [torch]
  precisions: [fp16]
run:
  warmup_s: 1.0
  duration_s: 2.0
  max_duration_s: 8.0
  min_inferences: 662
  repeats: 1
  kernel_profile_steps: 0
  accuracy_samples: 0
telemetry:
  idle_baseline_s: 0.0
YAML

{ echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv,noheader 2>&1)"
  echo "mps control: $(command -v nvidia-cuda-mps-control || echo 'not on PATH')"
  python3 -c "import torch; print('torch', torch.__version__)"
  python3 -c "import onnxruntime as o; print('onnxruntime', o.__version__, o.get_available_providers())" 2>&1 | tail -1
} | tee "$OUT/env.log"

overhead() {  # the harness's overhead, measured through the CLI (benchmarks/self_audit.py via gpu_self_audit.sh)
  OUT="$OUT/self-audit" timeout 540 benchmarks/gpu_self_audit.sh torch 2>&1 | tee "$OUT/overhead.log"
}

mps() {
  for sharing in time-slicing mps; do
    timeout 200 python3 -m edgebench bench --device "$PROFILE" --batches 1,16 --instances 1,2,4 \
      --gpu-sharing "$sharing" --out "$RUNS/mps-$sharing" 2>&1 | tee "$OUT/mps-$sharing.log" | tail -9
  done
}

slo() {
  timeout 240 python3 -m edgebench bench --device "$PROFILE" --batches 1 --instances 8 --rate 30 --slo-ms 33 \
    --max-streams 48 --out "$RUNS/slo" 2>&1 | tee "$OUT/slo.log" | grep -v "^\[" | tail -20
  local dir; dir=$(ls -d "$RUNS"/slo/*/ 2>/dev/null | head -1)
  if [ -n "$dir" ]; then
    cp "$dir/results.csv" "$OUT/slo-results.csv"; cp "$dir/slo_search.csv" "$OUT/slo_search.csv" 2>/dev/null
    python3 -m edgebench report "$dir" --out "$OUT/slo-report" --formats png >/dev/null 2>&1 \
      && cp "$OUT"/slo-report/figures/latency_vs_load_*.png "$OUT/" 2>/dev/null
    rm -rf "$OUT/slo-report"
  fi
}

case "$part" in
  all) overhead; mps; slo ;;
  overhead|mps|slo) "$part" ;;
  *) echo "unknown part $part (all|overhead|mps|slo)" >&2; exit 2 ;;
esac

python3 - "$OUT" <<'PY' | tee "$OUT/tables.txt"
import csv, glob, os, re, sys
out = sys.argv[1]
def rows(pattern):
    found = []
    for path in glob.glob(os.path.join(out, "runs", pattern, "*", "results.csv")):
        with open(path, newline="") as fh:
            found += list(csv.DictReader(fh))
    return found
log = os.path.join(out, "self-audit", "tables.txt")
if os.path.exists(log):
    print(open(log).read().strip())
ts, mp = rows("mps-time-slicing"), rows("mps-mps")
if ts or mp:
    key = lambda r: (int(r["batch"]), int(r["instances"]))
    by = {("ts",) + key(r): r for r in ts} | {("mps",) + key(r): r for r in mp}
    print("\nMPS vs time-slicing, resnet50 torch fp16, process mode (img/s summed over instances; p50 ms)")
    print(f"{'batch':>5}{'inst':>5}{'time-slicing':>14}{'p50':>8}{'mps':>10}{'p50':>8}{'mps/ts':>8}  status ts/mps")
    for b, n in sorted({k[1:] for k in by}):
        t, m = by.get(("ts", b, n), {}), by.get(("mps", b, n), {})
        f = lambda r, c: float(r[c]) if r.get(c) else None
        ti, mi = f(t, "throughput_ips"), f(m, "throughput_ips")
        s = lambda v, w=8, p=1: f"{v:{w}.{p}f}" if v is not None else f"{'-':>{w}}"
        ratio = f"{mi / ti:8.3f}" if ti and mi else f"{'-':>8}"
        why = "; ".join(f"{x.get('status', '-')}" + (f" ({x['reason'][:70]})" if x.get("reason") else "") for x in (t, m))
        print(f"{b:>5}{n:>5}{s(ti, 14)}{s(f(t, 'latency_ms_p50'), 8, 2)}{s(mi, 10)}{s(f(m, 'latency_ms_p50'), 8, 2)}{ratio}  {why}")
slo = os.path.join(out, "slo_search.csv")
if os.path.exists(slo):
    print("\nmax streams under the SLO (p99 incl. queueing), resnet50 torch fp16 b1, one process per stream")
    for r in csv.DictReader(open(slo)):
        bound = "at least " if r["capped_at_max_streams"] == "true" else ""
        print(f"  {bound}{r['max_streams_under_slo']} streams of {float(r['rate_per_stream_hz']):g}/s "
              f"with p99 <= {float(r['slo_ms']):g} ms ({r['gpu_sharing']}); probes: {r['probes']}")
    for r in sorted(rows("slo"), key=lambda r: int(r["instances"])):
        print(f"  {int(r['instances']):>3} streams: offered {float(r['offered_rate_hz'] or 0):7.1f}/s achieved "
              f"{float(r['achieved_rate_hz'] or 0):7.1f}/s p50 {r['latency_ms_p50'][:6]:>6} p99 {r['latency_ms_p99'][:7]:>7} ms "
              f"slo_met {r['slo_met']} {r['status']}")
PY
