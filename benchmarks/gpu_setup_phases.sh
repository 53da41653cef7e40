#!/usr/bin/env bash
# Issue 37 ("Set-up on the GPU"): where a repeat's set-up goes at 32 instances.
# One `edgebench bench` of ResNet-50 fp16 torch b1 with CUDA graphs, N instances (32), REPEATS repeats (3), fixed
# rate RATE/s per instance, DURATION_S windows; every repeat starts fresh worker processes (the warm pool never
# hands a repeat a process that ran the same configuration). Prints per repeat the row's set-up and its phases from
# row.json: prewarm/probe (the pipeline), spawn (until the last instance began opening its session: process start,
# and for spawned workers the framework import), load (until the last began warm-up: its CUDA context, the model
# built or mapped and copied to the GPU, the first feed: cuDNN autotune, graph capture), warmup (until the last was
# ready: the warm-up window). docs/results/h200-setup-issue37.md; benchmarks/gpu_worker_init_probe.py times the
# GPU steps in bare processes.
# WORKER_START=forkserver forks the workers from a server that imported the framework once (run.worker_start).
#   OUT=/path benchmarks/gpu_setup_phases.sh       (one NVIDIA H100/H200; about 2 + 1 min per repeat at 32)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuout}; mkdir -p "$OUT/runs"
export PYTHONUNBUFFERED=1 EDGEBENCH_CACHE=${EDGEBENCH_CACHE:-/tmp/ebcache}
PY=${PY:-python3}; N=${N:-32}; REPEATS=${REPEATS:-3}; RATE=${RATE:-30}; DURATION_S=${DURATION_S:-2}
BUDGET_S=${BUDGET_S:-420}; WORKER_START=${WORKER_START:-spawn}
cat > "$OUT/setup.yaml" <<YAML
name: gpu-setup
extends: dgpu
description: issue 37 - set-up per repeat at $N CUDA-graph instances (resnet50 fp16 torch b1), workers $WORKER_START
sweep:
  models: [resnet50]
  backends: ["torch"]
  precisions: [fp16]
  batches: [1]
  instances: [$N]
  modes: [process]
  accelerator: "cuda:0"
  option_sets: [{cuda_graph: true}]
run:
  warmup_s: 0.5
  duration_s: $DURATION_S
  max_duration_s: $(( DURATION_S * 3 ))
  min_inferences: 64
  repeats: $REPEATS
  worker_start: $WORKER_START
  kernel_profile_steps: 0
  accuracy_samples: 0
telemetry:
  samplers: [nvml, host]
  idle_baseline_s: 0.0
YAML
{ echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1), $(nproc) cores"
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" 2>&1 | tail -1; } | tee "$OUT/env.log"
t0=$(date +%s)
timeout -s INT -k 30 "$BUDGET_S" $PY -c 'import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from edgebench.cli import main
sys.exit(main(sys.argv[1:]))' bench --device "$OUT/setup.yaml" --out "$OUT/runs" --rate "$RATE" --arrival even \
  >"$OUT/bench.log" 2>&1
echo "bench exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/env.log"
d=$(ls -d "$OUT/runs"/*/ 2>/dev/null | head -1)
[ -n "$d" ] || { tail -30 "$OUT/bench.log"; exit 1; }
cp "$d/results.csv" "$OUT/results.csv"
mkdir -p "$OUT/rows"; for f in "$d"/rows/*/row.json; do cp "$f" "$OUT/rows/$(basename "$(dirname "$f")").json"; done
$PY - "$d" <<'PYEOF' | tee "$OUT/setup-table.txt"
import json, sys
from pathlib import Path
keys = ["export", "prepare", "prewarm", "probe", "samplers", "spawn", "load", "warmup", "window", "collect", "results",
        "write", "total"]
print("repeat status  setup_s " + " ".join(f"{k:>8}" for k in keys))
for f in sorted(Path(sys.argv[1], "rows").glob("*/row.json")):
    row = json.loads(f.read_text())
    ph = row.get("phases", {})
    setup = ph.get("total", 0) - ph.get("window", 0) - ph.get("warmup", 0)
    print(f"{row['config'].get('repeat', '?'):>6} {row.get('status', '?'):<7} {setup:7.1f} "
          + " ".join(f"{ph.get(k, float('nan')):8.2f}" for k in keys))
PYEOF
