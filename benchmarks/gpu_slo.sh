#!/usr/bin/env bash
# Issue 19: the most 30 fps streams whose p99 (queueing included) stays <= 33 ms, ResNet-50 fp16 torch b1, one
# process per stream, searched side by side for eager / cuda_graph under time-slicing and MPS (one
# `edgebench bench` run, one search per option set x sharing mode, in that order: eager+ts, graph+ts,
# eager+mps, graph+mps). kernel_profile_steps 0 and no accuracy pass: the measuring processes only measure.
# One NVIDIA H100/H200 (device kind nvidia-h100-x1 or nvidia-h200), under 8 minutes:
#   OUT=/path benchmarks/gpu_slo.sh
# The bench gets BUDGET_S seconds (default 380) and is then interrupted with SIGINT (the orchestrator kills its
# instances, the MPS daemon is quit, written rows stay); a search it cut shows as `incomplete` in the table,
# rebuilt from its probe rows. Knobs (env): START (first stream count, 16), MAX_STREAMS (40, under MPS's 48
# clients), RATE (30), SLO_MS (33), SEED (0: run.seed, what random phases are drawn from; another call's searches
# draw afresh with another), SHARING (time-slicing,mps), OPTION_SETS ('[{}, {cuda_graph: true}]'),
# WORKER_START (spawn; forkserver: warm workers forked from a server that imported the framework, run.worker_start),
# MODEL/BACKEND/PRECISION/ACCEL/EXTENDS/SAMPLERS (resnet50/torch/fp16/cuda:0/dgpu/[nvml, host]; the CPU test
# of this script runs it with the null backend), DURATION_S (1.0) / MAX_DURATION_S (60): a probe's window runs
# until it holds the 662 inferences a p99 needs (at 16 streams of 30/s: 1.4 s), and longer, up to MAX_DURATION_S,
# while it cannot bound the growth over HORIZON_S (600, --horizon-s; issue 35): a count meets only when
# p99 + the latency trend's upper bound x HORIZON_S stays <= SLO_MS. Each search first measures its capacity (a
# closed-loop row at START streams) and never probes a count whose 30/s x N exceeds it; the count above its
# answer is probed once. Issue 35's H200 rows: 0.7 s windows accepted 32 streams that served 950/s of 960/s
# offered (their latency rose 3-12 ms/s); windows of >= 10-30 s show it.
# Writes: $OUT/env.log, $OUT/slo.log (the bench's console, its own side-by-side table at the end),
# $OUT/slo-results.csv, $OUT/slo_search.csv, $OUT/latency_vs_load*.png and slo_window*.png (latency per second over
# the probes at N and N+1; report: REPORT_TIMEOUT_S, 45), and
# $OUT/slo-table.txt, printed last. Worst case about 7.5 min: 380 s bench + 30 s kill grace + 45 s report.
#
# `benchmarks/gpu_slo.sh check N` (issue 35): fixed-rate rows of CHECK_S seconds (120) at N and N+1 streams, RATE
# each, ARRIVALS (random), one per count, no search: each row's status says whether its backlog grows (the latency
# trend, latency_trend_*_ms_per_s) and its p99; $OUT/check-table.txt. About 2 x (CHECK_S + set-up) seconds.
#
# `benchmarks/gpu_slo.sh arrivals` (issue 27): the search under several arrival models (ARRIVALS, default
# "random even"), each search SEARCHES times (3; the bench's run.repeats: search k's probe rows carry repeat
# k*SLO_REPEATS+j), each stream count measured SLO_REPEATS times (3) and accepted only when every repeat meets. One
# bench per arrival model, each given BUDGET_S / (number of models) seconds. It prints one table last: arrival x
# options x sharing, the N each search found, the first N that failed and each repeat's p99 there and at N
# (benchmarks/gpu_slo_table.py --arrivals, which also joins the run folders of several calls).
# What fits one device call of <= 9 min: every repeat of a count runs in processes that never ran it; the warm pool
# keeps count x SLO_REPEATS of them, so a larger count reuses them (the first search of a call starts 84 torch
# processes at 28 streams: ~90 s on an H200). MPS rows never reuse workers: every MPS probe starts its own (~53 s at
# 44 streams). The defaults are the count the issue found fragile: cuda_graph, time-slicing (OPTION_SETS
# '[{cuda_graph: true}]', SHARING time-slicing), streams 28..36 (START 28, MAX_STREAMS 36: the capacity is ~31-32),
# first windows of >= 0.7 s (DURATION_S; 662 inferences at 28 x 30/s take 0.79 s), run longer up to MAX_DURATION_S
# while they cannot bound the growth over HORIZON_S (2-10 s near capacity, 25-60 s after a stall), warm-up 0.3 s,
# BUDGET_S 450. On H200s a search with independent repeats took 255-320 s, an MPS search (START=MAX_STREAMS=44,
# DURATION_S=3) 206-231 s: one search per call with BUDGET_S=330 is safe (another call's searches draw afresh with
# SEED=1, 2, ...), and `check N` (~350 s) another (docs/results/h200-issue35.md). The other calls:
#   SHARING=mps OUT=$OUT/mps-graph benchmarks/gpu_slo.sh arrivals
#   OPTION_SETS='[{}]' START=16 MAX_STREAMS=24 OUT=$OUT/ts-eager benchmarks/gpu_slo.sh arrivals   # eager: ~18-21
#   OPTION_SETS='[{}]' SHARING=mps OUT=$OUT/mps-eager benchmarks/gpu_slo.sh arrivals
#   python3 benchmarks/gpu_slo_table.py --arrivals --slo-repeats 3 $OUT/*/runs/*/*/     # one table of all calls
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuout}; RUNS=$OUT/runs
mkdir -p "$OUT" "$RUNS"
export PYTHONUNBUFFERED=1 EDGEBENCH_CACHE=${EDGEBENCH_CACHE:-/tmp/ebcache}
PY=${PY:-python3}
PART=${1:-issue19}
if [ "$PART" = arrivals ]; then
  BUDGET_S=${BUDGET_S:-450}; START=${START:-28}; MAX_STREAMS=${MAX_STREAMS:-36}; DURATION_S=${DURATION_S:-0.7}
  WARMUP_S=${WARMUP_S:-0.3}; ARRIVALS=${ARRIVALS:-random even}; SEARCHES=${SEARCHES:-3}; SLO_REPEATS=${SLO_REPEATS:-3}
  OPTION_SETS=${OPTION_SETS:-'[{cuda_graph: true}]'}; SHARING=${SHARING:-time-slicing}
elif [ "$PART" = check ]; then  # issue 35's check of an answer: long fixed-rate rows, random arrivals
  ARRIVALS=${ARRIVALS:-random}; SEARCHES=1; SLO_REPEATS=1
else  # issue 19's one-draw search, as it ran then: even arrivals, one search, one repeat per count
  ARRIVALS=${ARRIVALS:-even}; SEARCHES=${SEARCHES:-1}; SLO_REPEATS=${SLO_REPEATS:-1}
fi
BUDGET_S=${BUDGET_S:-380}; START=${START:-16}; MAX_STREAMS=${MAX_STREAMS:-40}; RATE=${RATE:-30}; SLO_MS=${SLO_MS:-33}
HORIZON_S=${HORIZON_S:-600}; SEED=${SEED:-0}
WARMUP_S=${WARMUP_S:-0.5}
SHARING=${SHARING:-time-slicing,mps}; OPTION_SETS=${OPTION_SETS:-'[{}, {cuda_graph: true}]'}
MODEL=${MODEL:-resnet50}; BACKEND=${BACKEND:-torch}; PRECISION=${PRECISION:-fp16}; ACCEL=${ACCEL:-cuda:0}
EXTENDS=${EXTENDS:-dgpu}; SAMPLERS=${SAMPLERS:-'[nvml, host]'}
DURATION_S=${DURATION_S:-1.0}; MAX_DURATION_S=${MAX_DURATION_S:-60}; WORKER_START=${WORKER_START:-spawn}

PROFILE=$OUT/gpu-slo.yaml
cat > "$PROFILE" <<YAML
name: gpu-slo
extends: $EXTENDS
description: issue 19 - SLO search side by side over option sets and GPU sharing ($MODEL $BACKEND $PRECISION b1)
sweep:
  models: [$MODEL]
  backends: ["$BACKEND"]
  precisions: [$PRECISION]
  batches: [1]
  instances: [$START]
  modes: [process]
  accelerator: "$ACCEL"
  option_sets: $OPTION_SETS
run:
  warmup_s: $WARMUP_S
  duration_s: $DURATION_S
  max_duration_s: $MAX_DURATION_S
  min_inferences: 662
  repeats: $SEARCHES
  seed: $SEED
  slo_repeats: $SLO_REPEATS
  kernel_profile_steps: 0
  accuracy_samples: 0
  max_streams: $MAX_STREAMS
  worker_start: $WORKER_START
telemetry:
  samplers: $SAMPLERS
  idle_baseline_s: 0.0
YAML

{ echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv,noheader 2>&1 | head -1)"
  echo "mps control: $(command -v nvidia-cuda-mps-control || echo 'not on PATH: the mps searches are skipped with that reason')"
  echo "cpu cores: $(nproc)"
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" 2>&1 | tail -1
} | tee "$OUT/env.log"

bench() {  # bench ARRIVAL RUNS_DIR BUDGET_S LOG: one edgebench bench, interrupted with SIGINT after BUDGET_S
  local t0 rc; t0=$(date +%s)
  # SIGINT, not SIGTERM: KeyboardInterrupt runs the orchestrator's cleanup (instances killed, MPS daemon quit).
  # The handler is set explicitly: a shell that started this script in the background may have SIGINT ignored.
  timeout -s INT -k 30 "$3" $PY -c 'import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from edgebench.cli import main
sys.exit(main(sys.argv[1:]))' bench --device "$PROFILE" --out "$2" --rate "$RATE" --arrival "$1" \
    --slo-ms "$SLO_MS" --horizon-s "$HORIZON_S" --gpu-sharing "$SHARING" >"$4" 2>&1
  rc=$?
  echo "bench exit $rc after $(( $(date +%s) - t0 )) s ($1 arrivals)$([ "$rc" = 124 ] && echo ' (time budget: later searches incomplete)')" \
    | tee -a "$OUT/env.log"
  grep -E "^edgebench: .*streams of|^  note:" "$4" | cut -c1-400
}

if [ "$PART" = check ]; then
  N=${2:?usage: benchmarks/gpu_slo.sh check N   (fixed-rate rows at N and N+1 streams)}
  CHECK_S=${CHECK_S:-120}; ARRIVAL=$ARRIVALS
  mkdir -p "$RUNS/check"
  timeout -s INT -k 30 "$(( 2 * CHECK_S + 240 ))" $PY -c 'import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from edgebench.cli import main
sys.exit(main(sys.argv[1:]))' bench --device "$PROFILE" --out "$RUNS/check" --rate "$RATE" --arrival "$ARRIVAL" \
    --instances "$N,$(( N + 1 ))" --duration "$CHECK_S" --max-duration "$(( CHECK_S + 10 ))" --repeats 1 \
    --gpu-sharing "$SHARING" >"$OUT/check.log" 2>&1
  echo "check bench exit $?" | tee -a "$OUT/env.log"
  d=$(ls -d "$RUNS/check"/*/ 2>/dev/null | head -1)
  if [ -z "$d" ]; then echo "no run folder: see $OUT/check.log"; tail -20 "$OUT/check.log"; exit 1; fi
  cp "$d/results.csv" "$OUT/check-results.csv"
  { echo "check: $MODEL $BACKEND $PRECISION b1 on $ACCEL, ${CHECK_S} s rows of ${RATE}/s streams, $ARRIVAL arrivals, $SHARING"
    $PY - "$d/results.csv" "$SLO_MS" <<'PYEOF'
import csv, sys
slo = float(sys.argv[2])
print(f"{'streams':>7} {'options':<22} {'status':<8} {'p99 ms':>8} {'trend ms/s [95%]':<26} {'served/offered':<16} reason")
for r in csv.DictReader(open(sys.argv[1], newline="")):
    trend = (f"{float(r['latency_trend_ms_per_s']):.3g} [{float(r['latency_trend_lo_ms_per_s']):.3g}, "
             f"{float(r['latency_trend_hi_ms_per_s']):.3g}]" if r.get("latency_trend_ms_per_s") else "-")
    p99 = float(r["latency_ms_p99"]) if r.get("latency_ms_p99") else None
    rates = f"{float(r['achieved_rate_hz'] or 0):.4g}/{float(r['offered_rate_hz'] or 0):.4g}"
    meets = "" if p99 is None else (" (p99 <= SLO)" if p99 <= slo else " (p99 > SLO)")
    print(f"{r['instances']:>7} {(r.get('options') or 'default')[:22]:<22} {r['status']:<8} "
          f"{'-' if p99 is None else f'{p99:.4g}':>8} {trend:<26} {rates:<16} {(r.get('reason') or '')[:160]}{meets}")
PYEOF
  } | tee "$OUT/check-table.txt"
  exit 0
fi

if [ "$PART" = arrivals ]; then
  read -r -a models <<<"$ARRIVALS"
  each_s=$(( BUDGET_S / ${#models[@]} ))
  echo "arrivals: ${models[*]}; $SEARCHES search(es) each, $SLO_REPEATS repeat(s) per stream count, streams $START..$MAX_STREAMS, $each_s s per arrival model" | tee -a "$OUT/env.log"
  dirs=()
  for a in "${models[@]}"; do
    mkdir -p "$RUNS/$a"
    bench "$a" "$RUNS/$a" "$each_s" "$OUT/slo-$a.log"
    d=$(ls -d "$RUNS/$a"/*/ 2>/dev/null | head -1)
    [ -n "$d" ] && dirs+=("$d") && cp "$d/results.csv" "$OUT/slo-results-$a.csv" 2>/dev/null \
      && cp "$d/slo_search.csv" "$OUT/slo_search-$a.csv" 2>/dev/null
  done
  if [ ${#dirs[@]} = 0 ]; then echo "no run folder: see $OUT/slo-*.log"; tail -20 "$OUT"/slo-*.log; exit 1; fi
  { echo "SLO search by arrival model: $MODEL $BACKEND $PRECISION b1 on $ACCEL, streams of ${RATE}/s, p99 <= $SLO_MS ms over a ${HORIZON_S} s horizon on every one of $SLO_REPEATS repeat(s) per count, $SEARCHES search(es) each (latency from the scheduled arrival; one process per stream)"
    $PY benchmarks/gpu_slo_table.py --arrivals --slo-repeats "$SLO_REPEATS" "${dirs[@]}"
  } | tee "$OUT/slo-arrivals-table.txt"
  for d in "${dirs[@]}"; do  # latency over the window of the probes at N and N+1 (issue 35), one figure per search
    rep="$OUT/report-$(basename "$d")"
    timeout "${REPORT_TIMEOUT_S:-45}" $PY -m edgebench report "$d" --out "$rep" --formats png --max-timelines 0 \
      >"$OUT/report.log" 2>&1 && cp "$rep"/figures/slo_window*.png "$OUT/" 2>/dev/null
    rm -rf "$rep"
  done
  exit 0
fi

bench "$ARRIVALS" "$RUNS" "$BUDGET_S" "$OUT/slo.log"

dir=$(ls -d "$RUNS"/*/ 2>/dev/null | head -1)
if [ -z "$dir" ]; then
  echo "no run folder: see $OUT/slo.log"; tail -20 "$OUT/slo.log"; exit 1
fi
cp "$dir/results.csv" "$OUT/slo-results.csv" 2>/dev/null
cp "$dir/slo_search.csv" "$OUT/slo_search.csv" 2>/dev/null
if timeout "${REPORT_TIMEOUT_S:-45}" $PY -m edgebench report "$dir" --out "$OUT/slo-report" --formats png --max-timelines 0 >"$OUT/report.log" 2>&1; then
  cp "$OUT"/slo-report/figures/latency_vs_load*.png "$OUT"/slo-report/figures/slo_window*.png "$OUT/" 2>/dev/null
  cp "$OUT/slo-report/tables/slo_search.md" "$OUT/" 2>/dev/null
fi
rm -rf "$OUT/slo-report"
{ echo "SLO search: $MODEL $BACKEND $PRECISION b1 on $ACCEL, streams of ${RATE}/s, p99 <= $SLO_MS ms over a ${HORIZON_S} s horizon (latency from the scheduled arrival; one process per stream)"
  $PY benchmarks/gpu_slo_table.py "$dir"
} | tee "$OUT/slo-table.txt"
