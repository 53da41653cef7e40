#!/bin/bash
# How results.csv was measured (2026-11-29, 21:06-21:15 UTC, one call of the device tool on an H200 x2 machine:
# `LIMIT=530 bash docs/results/search/refgrid-resnet18/measure.sh`, from the repository root, with the staged
# site-packages of .device/w2 and the wheels of .whl carried). A grid of the reference experiment's shape for
# ResNet-18: torch fp32/tf32/fp16/amp x b1..64 x 1, 2, 4 instances (process mode) x 2 repeats, profile dgpu-quick
# as shipped, split by precision over the machine's two GPUs so the 168 rows fit in one call: GPU 0 fp32 and tf32,
# GPU 1 fp16 and amp, 84 rows each, run side by side (each sweep sees only its own GPU through
# CUDA_VISIBLE_DEVICES, and its power is that GPU's NVML counter). The two results.csv are concatenated, GPU 0's
# first. A half cut by LIMIT resumes its run folder on the next call (neither was: both finished in 8 min).
set -u
[ -d /tmp/site/sklearn ] || { mkdir -p /tmp/site && xz -dc .device/w2/site.tar.xz | tar -x -C /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuout}; mkdir -p "$OUT"
LIMIT=${LIMIT:-540}
part() {
  local g=$1 prec=$2 name=r18-gpu$1 dir
  dir=$(ls -d /tmp/gpuruns/$name/*/ 2>/dev/null | head -1)
  if [ -n "$dir" ]; then
    CUDA_VISIBLE_DEVICES=$g EDGEBENCH_CACHE=/tmp/ebcache$g timeout "$LIMIT" python3 -m edgebench bench --resume "$dir" \
      > "$OUT/$name-resume-$(date +%H%M%S).log" 2>&1
  else
    CUDA_VISIBLE_DEVICES=$g EDGEBENCH_CACHE=/tmp/ebcache$g timeout "$LIMIT" python3 -m edgebench bench --out /tmp/gpuruns/$name \
      --device dgpu-quick --models resnet18 --precisions "$prec" --batches 1,2,4,8,16,32,64 --instances 1,2,4 --repeats 2 \
      > "$OUT/$name.log" 2>&1
  fi
  dir=$(ls -d /tmp/gpuruns/$name/*/ | head -1)
  cp "$dir/results.csv" "$OUT/$name-results.csv"
  echo "$name: $(($(wc -l < "$dir/results.csv") - 1)) rows"
}
nvidia-smi --query-gpu=index,name,power.draw,utilization.gpu --format=csv
part 0 fp32,tf32 & part 1 fp16,amp & wait
