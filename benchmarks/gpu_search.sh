#!/usr/bin/env bash
# Issue 30 on one NVIDIA GPU: the adaptive search through the CLI, on the grid docs/results/h100/grid-results.csv
# measured in full (profile dgpu-quick: ResNet-50 torch, fp32/tf32/fp16/amp x batch 1..64 x 3 repeats = 84 rows).
#   OUT=/path benchmarks/gpu_search.sh            # best throughput with p90 <= SLO_MS, then the Pareto front
# Knobs (env): SLO_MS (6.481: the bound benchmarks/search_eval.py derives from the full grid), PARTS ("best pareto"),
# PY (python3). Writes per part: $OUT/<part>.log (the bench's console, the answer last), and the run folder's
# results.csv, predictions.csv, search.csv as $OUT/<part>-*.csv. Needs scikit-learn (PYTHONPATH with it staged).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpusearch}; PY=${PY:-python3}; SLO_MS=${SLO_MS:-6.481}; PARTS=${PARTS:-best pareto}
mkdir -p "$OUT/runs"
export PYTHONUNBUFFERED=1 EDGEBENCH_CACHE=${EDGEBENCH_CACHE:-/tmp/ebcache}
for part in $PARTS; do
  if [ "$part" = best ]; then args=(--search best --slo-ms "$SLO_MS" --slo-percentile p90)
  else args=(--search pareto); fi
  t0=$(date +%s)
  $PY -m edgebench bench --device dgpu-quick --models resnet50 --out "$OUT/runs/$part" "${args[@]}" >"$OUT/$part.log" 2>&1
  echo "$part: exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/$part.log"
  d=$(ls -d "$OUT/runs/$part"/*/ 2>/dev/null | head -1)
  for f in results predictions search; do [ -n "$d" ] && cp "$d/$f.csv" "$OUT/$part-$f.csv" 2>/dev/null; done
  sed -n '/^edgebench search:/,$p' "$OUT/$part.log"
done
