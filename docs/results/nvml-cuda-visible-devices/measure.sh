#!/bin/bash
# Re-measures commit 97b5b7a (the idle baseline under CUDA_VISIBLE_DEVICES) on a host with 2 GPUs: two sweeps side
# by side as docs/results/search/refgrid-resnet18/measure.sh ran them, CUDA_VISIBLE_DEVICES=0 and =1, profile
# dgpu-quick as shipped, ResNet-18 fp16, 1 instance; GPU 0: b8-b64, 2 repeats; GPU 1 (started DELAY s later): b8
# and b32, 1 repeat. Before 97b5b7a the GPU-1 sweep's idle baseline sampled NVML GPU 0, and every one of its rows
# left power_w_idle / energy_per_inference_dynamic_mj empty.
# From the repository root, on the device tool's nvidia-h200-x2 machine (pydantic's wheels carried in .device/pyd,
# installed only where it is missing):
#   bash docs/results/nvml-cuda-visible-devices/measure.sh
set -u
python3 -c "import pydantic" 2>/dev/null || PYTHONPATH=/tmp/site python3 -c "import pydantic" 2>/dev/null ||
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .device/pyd/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuout}; mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,power.draw,utilization.gpu --format=csv | tee "$OUT/nvidia-smi-before.csv"
half() {
  local g=$1 batches=$2 repeats=$3
  CUDA_VISIBLE_DEVICES=$g EDGEBENCH_CACHE=/tmp/ebcache$g timeout 400 python3 -m edgebench bench --out /tmp/gpuruns/gpu$g \
    --device dgpu-quick --models resnet18 --precisions fp16 --batches "$batches" --instances 1 --repeats "$repeats" 2>&1 |
    while IFS= read -r line; do echo "$(date -u +%T.%N | cut -c1-12) $line"; done > "$OUT/gpu$g.log"  # UTC, as nvidia-smi's
  echo "gpu$g: rc=${PIPESTATUS[0]}"
  cp "$(ls -td /tmp/gpuruns/gpu$g/*/ | head -1)results.csv" "$OUT/gpu$g-results.csv"  # this call's run folder
}
# NVML's view of both GPUs every 0.5 s while they run, to show what each idle baseline window saw
nvidia-smi --query-gpu=timestamp,index,power.draw,utilization.gpu --format=csv,noheader -lms 500 > "$OUT/nvidia-smi-trace.csv" &
smi=$!
# GPU 0 starts first with more rows, so GPU 1's idle baseline is taken while GPU 0 is under load: a baseline that
# sampled NVML GPU 0 would read its load power, not GPU 1's idle
half 0 8,16,32,64 2 & p0=$!
sleep "${DELAY:-15}"
half 1 8,32 1 & p1=$!
wait $p0 $p1
kill $smi
python3 - "$OUT" <<'PY'
import csv, sys
for g in (0, 1):
    for r in csv.DictReader(open(f"{sys.argv[1]}/gpu{g}-results.csv")):
        print(f"CUDA_VISIBLE_DEVICES={g}", r["label"] if "label" in r else r.get("batch"), r["status"],
              "power_w_mean", r.get("power_w_mean"), "power_w_idle", r.get("power_w_idle") or "(empty)",
              "dynamic mJ", r.get("energy_per_inference_dynamic_mj") or "(empty)", r.get("energy_source", ""))
PY
grep -H "idle" "$OUT"/gpu*.log | head -4
