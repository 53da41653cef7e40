#!/usr/bin/env bash
# Same-host A/B of two edgebench packages at N CUDA-graph instances, closed loop: is a change a throughput change?
# OLD: a folder holding another commit's edgebench/, profiles/ and models/ (e.g. `git archive <commit> edgebench
# profiles models | tar -x -C OLD`); NEW: this checkout. Runs OLD NEW OLD NEW ... (ROUNDS rounds), each one
# `edgebench bench` of ResNet-50 fp16 torch b1, cuda_graph, N instances (32), REPEATS repeats (2) of DURATION_S (3 s)
# closed-loop windows, workers forked from the framework server; from a folder outside both checkouts, so each run
# imports only its own package. Prints per run each row's throughput_ips, status and setup_s; $OUT/ab.csv.
#   OLD=/path/old OUT=/path bash benchmarks/gpu_ab_capacity.sh       (one NVIDIA GPU; ~1.5 min per run at 32)
set -uo pipefail
NEW=$(cd "$(dirname "$0")/.." && pwd)
OLD=${OLD:?set OLD to a folder with the other commit\'s edgebench/, profiles/, models/}; OLD=$(cd "$OLD" && pwd)
OUT=${OUT:-/tmp/about}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 EDGEBENCH_CACHE=${EDGEBENCH_CACHE:-/tmp/ebcache}
PY=${PY:-python3}; N=${N:-32}; REPEATS=${REPEATS:-2}; DURATION_S=${DURATION_S:-3}; ROUNDS=${ROUNDS:-2}
BASE_PYTHONPATH=${PYTHONPATH:-}
echo "side,round,repeat,status,throughput_ips,setup_s" > "$OUT/ab.csv"
for r in $(seq 1 "$ROUNDS"); do
  for side in old new; do
    dir=$OLD; [ "$side" = new ] && dir=$NEW
    cat > "$OUT/ab-$side.yaml" <<YAML
name: gpu-ab
extends: $dir/profiles/dgpu.yaml
description: A/B ($side) at $N CUDA-graph instances, closed loop
sweep: {models: [resnet50], backends: ["torch"], precisions: [fp16], batches: [1], instances: [$N], modes: [process],
        accelerator: "cuda:0", option_sets: [{cuda_graph: true}]}
run: {warmup_s: 0.5, duration_s: $DURATION_S, max_duration_s: $(( DURATION_S * 3 )), repeats: $REPEATS,
      worker_start: forkserver, kernel_profile_steps: 0, accuracy_samples: 0}
telemetry: {samplers: [nvml, host], idle_baseline_s: 0.0}
YAML
    runs="$OUT/runs-$side-$r"; mkdir -p "$runs"
    t0=$(date +%s)
    (cd /tmp && PYTHONPATH="$dir${BASE_PYTHONPATH:+:$BASE_PYTHONPATH}" timeout -s INT -k 20 300 $PY -m edgebench bench \
      --device "$OUT/ab-$side.yaml" --out "$runs" > "$OUT/bench-$side-$r.log" 2>&1)
    echo "$side round $r: exit $? after $(( $(date +%s) - t0 )) s"
    $PY - "$runs" "$side" "$r" >> "$OUT/ab.csv" <<'PYEOF'
import csv, glob, sys
for f in glob.glob(sys.argv[1] + "/*/results.csv"):
    for row in csv.DictReader(open(f)):
        print(",".join([sys.argv[2], sys.argv[3], row["repeat"], row["status"], row["throughput_ips"], row["setup_s"]]))
PYEOF
  done
done
cat "$OUT/ab.csv"
