#!/usr/bin/env bash
# Issue 19 on one NVIDIA H100/H200 (device kind nvidia-h100-x1 or nvidia-h200). Parts (each under 10 minutes):
#   torch   self-audit: `edgebench bench --device dgpu` (shipped profile: nvml+host samplers, idle baseline, accuracy,
#           kernel profile -- now in a probe process) vs benchmarks/bare_loop.py, ResNet-50 fp16, b1 and b64, ABBA pairs
#   ort     the same through ONNX Runtime CUDA (needs onnxruntime-gpu: PYTHONPATH=/tmp/site:$PWD after staging)
#   before  what the in-process kernel profile cost: the bare loop after a 5-step torch.profiler pass vs the bare
#           loop (torch b1 and b64): the old behaviour itself is gone (no option runs it in a measuring process)
#   setup   per-row set-up of a cached dgpu grid (benchmarks/setup_cost.py: torch + ort, b1/b8, 1/2 instances)
#   warm    warm vs fresh worker processes (benchmarks/warm_vs_fresh.py: ResNet-50 fp16, b1/b64, 1/2 instances,
#           WARM_PAIRS pairs, default 3; WARM_BACKENDS, default torch: one backend per call keeps it under 10 min)
#   pool    issue 27: the warm pool never fails a row from memory its idle workers hold: pytest -m gpu
#           tests/e2e/test_gpu_warm_pool_memory.py (small_cnn torch fp32, 24, 28, then 32 instances x 3 repeats in warm
#           workers; and a device made smaller than the GPU, so the pool must retire idle workers first)
#   poolcli issue 27's sequence through the CLI: resnet50 fp16 torch, 30 frames/s per stream, --instances 24,28,32
#           --repeats 3 (process mode, warm workers): every row's status, workers and notes
# Issue 27 on the H100, one call each: torch, ort (the self-audit with the bare loop at edgebench's settings), pool,
# poolcli.
# Usage:  OUT=/path benchmarks/gpu_self_audit.sh [torch|ort|before|setup|warm|pool|poolcli|all]  (all: > 10 min)
# Logs and JSON under $OUT; the short table comes last ($OUT/tables.txt).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuout}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 EDGEBENCH_CACHE=${EDGEBENCH_CACHE:-/tmp/ebcache}
part=${1:-torch}
PAIRS=${PAIRS:-5}
PY=${PYTHON:-python3}
{ echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1)"
  $PY -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
  $PY -c "import onnxruntime as o; print('onnxruntime', o.__version__, o.get_available_providers())" 2>&1 | tail -1
} | tee -a "$OUT/env.txt"

audit() {  # backend precision batch [a-side]
  local name="$1-$2-b$3-${4:-edgebench}"
  $PY benchmarks/self_audit.py --device dgpu --backend "$1" --model resnet50 --precision "$2" --batch "$3" \
      --pairs "$PAIRS" --duration-s 3 --a-side "${4:-edgebench}" --out "$OUT/runs/$name" --json "$OUT/$name.json" \
      > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "exit $rc $name" >> "$OUT/$name.log"
  if [ "$rc" = 0 ]; then grep -E '^\| (edgebench|bare-profiled) ' "$OUT/$name.log" | tail -1 >> "$OUT/tables.txt"
  else echo "| $name | FAILED (exit $rc): see $name.log |" >> "$OUT/tables.txt"; fi
}
grep -q '^| A side' "$OUT/tables.txt" 2>/dev/null || echo "| A side | device | backend | model | precision | batch | threads \
| pairs | A ips | bare ips | ratio median | 95% CI |" | tr -d '\\' >> "$OUT/tables.txt"

case "$part" in
  torch|all) for b in 1 64; do audit torch fp16 "$b"; done ;;&
  ort|all) if $PY -c "import onnxruntime as o, sys; sys.exit('CUDAExecutionProvider' not in o.get_available_providers())"; then
             for b in ${BATCHES:-1 64}; do audit ort fp16 "$b"; done
           else echo "| ort | skipped: onnxruntime has no CUDAExecutionProvider (stage onnxruntime-gpu) |" >> "$OUT/tables.txt"; fi ;;&
  before|all) for b in 1 64; do audit torch fp16 "$b" bare-profiled; done ;;&
  setup|all) $PY benchmarks/setup_cost.py --device dgpu --backends torch,ort --precisions fp16 --batches 1,8 \
                 --instances 1,2 --out "$OUT/setup" --json "$OUT/setup.json" > "$OUT/setup.log" 2>&1
             echo "exit $?" >> "$OUT/setup.log"; grep -E '^(\||torch:|ort:|exit)' "$OUT/setup.log" >> "$OUT/tables.txt" ;;&
  pool|all) $PY -m pytest -m gpu -q -s tests/e2e/test_gpu_warm_pool_memory.py > "$OUT/pool.log" 2>&1
            echo "exit $?" >> "$OUT/pool.log"
            { echo "pool (pytest -m gpu tests/e2e/test_gpu_warm_pool_memory.py):"; grep -E ' x r[0-9]: |passed|failed|exit' "$OUT/pool.log"; } >> "$OUT/tables.txt" ;;&
  poolcli|all) $PY -m edgebench bench --device dgpu --models resnet50 --backends torch --precisions fp16 --batches 1 \
                   --instances 24,28,32 --repeats 3 --rate 30 --duration 3 --out "$OUT/runs/poolcli" > "$OUT/poolcli.log" 2>&1
               echo "exit $?" >> "$OUT/poolcli.log"
               $PY - "$OUT/runs/poolcli" >> "$OUT/tables.txt" <<'PY'
import csv, glob, sys
run = sorted(glob.glob(sys.argv[1] + "/*/results.csv"))[-1]
print("poolcli (resnet50 fp16 torch, 30/s per stream, 24/28/32 x 3):")
for r in csv.DictReader(open(run)):
    print(f"  {r['instances']:>2} r{r['repeat']}: {r['status']:<7} p99 {r['latency_ms_p99'] or '-':>8} ms  {r['workers']:<22} "
          f"{r['reason'][:200]}")
PY
               ;;&
  warm|all) name="warm-${WARM_BACKENDS:-torch}"
            $PY benchmarks/warm_vs_fresh.py --device dgpu --models resnet50 --backends "${WARM_BACKENDS:-torch}" \
                --precisions fp16 --batches 1,64 --instances 1,2 --pairs "${WARM_PAIRS:-3}" --duration-s 2 \
                --out "$OUT/runs/$name" --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
            echo "exit $?" >> "$OUT/$name.log"; grep -E '^(\||grid wall|exit)' "$OUT/$name.log" >> "$OUT/tables.txt" ;;
esac
echo "== tables ($part)"
cat "$OUT/tables.txt"
