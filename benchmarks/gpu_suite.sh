#!/usr/bin/env bash
# The GPU tier of edgebench on one lent CUDA GPU (the H100 of ../shared/DEVICE.md), in parts that each fit a
# 10-minute device call. Every part logs to $OUT/<part>.log and ends with a short table.
#   benchmarks/gpu_suite.sh tests      pytest -m gpu (torch, ORT CUDA EP, NVML, tensor-core kernels)
#   benchmarks/gpu_suite.sh overhead   edgebench as shipped (CLI) / an independent bare loop: gpu_self_audit.sh torch
#   benchmarks/gpu_suite.sh grid       seed grid (torch fp32/tf32/fp16/amp, b1..64, 3 repeats) + speedup report
#   benchmarks/gpu_suite.sh ortgrid    ORT CUDA EP fp32/tf32/fp16/int8, b1..64
#   benchmarks/gpu_suite.sh instgrid   seed grid at 2 and 4 instances, torch + ORT, fp32/fp16/amp, b1/16/64
#   benchmarks/gpu_suite.sh scaling    fp16, b1 and b16, 1/2/4/8 instances, process vs streams
#   benchmarks/gpu_suite.sh roofline   ResNet-50 fp16 vs the fp16 matmul roofline; NVML counter vs integrated power
#   benchmarks/gpu_suite.sh refgrid12  the reference experiment's shape, for the search's evaluation at its size:
#   benchmarks/gpu_suite.sh refgrid4   torch fp32/tf32/fp16/amp x b1..64 x 1, 2, 4 instances, 2 repeats (168 rows,
#                                      ~6-9 s a row on the H200: each part takes two calls, the second resumes;
#                                      no report, which alone outlasted a call's end); merged into
#                                      docs/results/search/refgrid/results.csv
# Run folders live in $RUNS (default /tmp/gpuruns) so a part cut by its time limit resumes on the next call.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuout}; RUNS=${RUNS:-/tmp/gpuruns}; LIMIT=${LIMIT:-540}
mkdir -p "$OUT" "$RUNS"
export PYTHONUNBUFFERED=1 EDGEBENCH_CACHE=${EDGEBENCH_CACHE:-/tmp/ebcache}
part=${1:?part: tests|overhead|grid|ortgrid|instgrid|scaling|roofline|refgrid12|refgrid4}

bench() {  # bench NAME ARGS... : start or resume the run folder $RUNS/NAME, copy its results to $OUT
  local name=$1; shift
  local dir; dir=$(ls -d "$RUNS/$name"/*/ 2>/dev/null | head -1)
  if [ -n "$dir" ]; then
    timeout "$LIMIT" python3 -m edgebench bench --resume "$dir"
  else
    timeout "$LIMIT" python3 -m edgebench bench --out "$RUNS/$name" "$@"
  fi
  dir=$(ls -d "$RUNS/$name"/*/ | head -1)
  cp "$dir/results.csv" "$OUT/$name-results.csv"
  [ -n "${NOREPORT:-}" ] && return
  python3 -m edgebench report "$dir" --out "$OUT/$name-report" >/dev/null && cp "$OUT/$name-report/tables/speedup.md" "$OUT/$name-speedup.md"
  rm -rf "$OUT/$name-report"
}

case "$part" in
  tests)    python3 -m pytest -m gpu -q -rs tests 2>&1 | tee "$OUT/tests.log" ;;
  overhead) benchmarks/gpu_self_audit.sh torch 2>&1 | tee "$OUT/overhead.log" ;;
  grid)     bench grid --device dgpu-quick 2>&1 | tee "$OUT/grid.log"; cat "$OUT/grid-speedup.md" ;;
  ortgrid)  bench ortgrid --device dgpu-quick --backends ort --precisions fp32,tf32,fp16,int8 --repeats 1 2>&1 | tee "$OUT/ortgrid.log" ;;
  instgrid) bench instgrid --device dgpu-quick --backends torch,ort --precisions fp32,fp16,amp --batches 1,16,64 \
              --instances 2,4 --repeats 1 2>&1 | tee "$OUT/instgrid.log" | tail -40 ;;
  scaling)  for mode in process streams; do
              bench "scaling-$mode" --device dgpu-quick --precisions fp16 --batches 1,16 --instances 1,2,4,8 \
                --mode "$mode" --repeats 1 2>&1 | tee "$OUT/scaling-$mode.log" | tail -12
            done ;;
  refgrid12|refgrid4)
            n=${part#refgrid}
            NOREPORT=1 bench "$part" --device dgpu-quick --precisions fp32,tf32,fp16,amp --batches 1,2,4,8,16,32,64 \
              --instances "$(echo "$n" | sed 's/./&,/g; s/,$//')" --repeats 2 2>&1 | tee "$OUT/$part.log" | tail -8 ;;
  roofline) python3 benchmarks/gpu_roofline_energy.py --seconds 3 2>&1 | tee "$OUT/roofline.log" ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
esac
