#!/usr/bin/env bash
# Any ONNX on one CUDA GPU (H100/H200): the three kinds of model of issue 10, ORT CUDA EP and torch on cuda:0,
# batch 1 and 8, short windows; about 5 minutes on an H100 (budget: < 6 min; every part has a time limit).
#   1. two int64 inputs:   bert_base (input_ids + attention_mask, seq 128)   ort fp32/fp16/int8, torch fp32/fp16
#   2. several outputs:    ssdlite320 (bbox_regression + cls_logits)         ort fp32/fp16/int8, torch fp32/fp16
#   3. symbolic H, W:      resnet18 exported with dynamic H/W, run --onnx --shapes input:Bx3x320x320
#                          ort fp32/fp16/int8 (torch: not applicable, an external ONNX has no torch module)
# ORT rows need onnxruntime-gpu (CUDAExecutionProvider); with the CPU-only onnxruntime they are skipped rows
# that say so, and part 3 is skipped with a line. Results: $OUT/any_onnx_results.csv (every row) and
# $OUT/any_onnx_table.md (the short table, also printed last); logs in $OUT/*.log.
# Run from the repo root on the GPU machine:  OUT=/tmp/out benchmarks/gpu_any_onnx.sh
# (with onnxruntime-gpu staged: PYTHONPATH=/tmp/site:$PWD OUT=... benchmarks/gpu_any_onnx.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuout}; RUNS=${RUNS:-/tmp/gpuruns-anyonnx}
mkdir -p "$OUT" "$RUNS"
export PYTHONUNBUFFERED=1 EDGEBENCH_CACHE=${EDGEBENCH_CACHE:-/tmp/ebcache}
export PYTHONPATH=${PYTHONPATH:-$PWD}
PY=${PYTHON:-python3}
T0=$(date +%s)

ort_gpu=$($PY -c "import onnxruntime as o; print('yes' if 'CUDAExecutionProvider' in o.get_available_providers() else 'no')" 2>/dev/null || echo no)
echo "onnxruntime CUDAExecutionProvider: $ort_gpu" | tee "$OUT/any_onnx_env.log"
$PY -c "import torch, onnxruntime; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-'); print('onnxruntime', onnxruntime.__version__, onnxruntime.get_available_providers())" 2>&1 | tee -a "$OUT/any_onnx_env.log"

# short-window profile: dgpu (nvml + host telemetry, cuda:0) with 1 s windows and 8 accuracy samples
cat > "$OUT/any_onnx_profile.yaml" <<EOF
name: any-onnx
extends: dgpu
description: issue 10 GPU check - bert_base and ssdlite320, ort + torch, fp32/fp16/int8, batch 1 and 8
sweep:
  models: [ssdlite320, bert_base]
  backends: [ort, torch]
  precisions: [fp32, fp16, int8]
  batches: [1, 8]
  instances: [1]
run:
  warmup_s: 0.3
  duration_s: 1.0
  max_duration_s: 3.0
  min_inferences: 64
  accuracy_samples: 8
  kernel_profile_steps: 0
calibration:
  samples: 16
telemetry:
  idle_baseline_s: 0.0
EOF

# parts 1 + 2: one sweep (torch int8 rows are skipped with their reason; ort rows without the CUDA EP too)
timeout 270 $PY -m edgebench bench --device "$OUT/any_onnx_profile.yaml" --out "$RUNS/specs" 2>&1 \
  | tee "$OUT/any_onnx_specs.log" | grep -E "^\[|error|rows:" | tail -40

# part 3: resnet18 with symbolic H and W, given --shapes (ORT only)
if [ "$ort_gpu" = yes ]; then
  timeout 60 $PY - "$OUT/resnet18_hw.onnx" <<'PYEOF' 2>&1 | tee "$OUT/any_onnx_export_hw.log"
import sys, warnings, torch, torchvision
from edgebench.config.profile import load_model_spec
from edgebench.models.export import build_torch_model
warnings.simplefilter("ignore")
model = build_torch_model(load_model_spec("resnet18"), seed=0)  # seeded init, BatchNorm statistics re-estimated
axes = {"input": {0: "batch", 2: "height", 3: "width"}, "output": {0: "batch"}}
torch.onnx.export(model, (torch.randn(2, 3, 224, 224),), sys.argv[1], opset_version=17, dynamo=False,
                  input_names=["input"], output_names=["output"], dynamic_axes=axes)
print("exported", sys.argv[1], "with input [batch, 3, height, width]")
PYEOF
  for prec in fp32 fp16 int8; do
    for b in 1 8; do
      left=$(( 330 - ($(date +%s) - T0) ))
      if [ "$left" -lt 15 ]; then echo "part 3: time budget spent, skipping $prec b$b" | tee -a "$OUT/any_onnx_hw.log"; continue; fi
      timeout "$left" $PY -m edgebench run --onnx "$OUT/resnet18_hw.onnx" --shapes "input:${b}x3x320x320" \
        --batch "$b" --precision "$prec" --placement cuda:0 --device "$OUT/any_onnx_profile.yaml" \
        --out "$RUNS/hw" 2>&1 | tee -a "$OUT/any_onnx_hw.log" | grep -E "error|rows:"
    done
  done
else
  echo "part 3 (symbolic H,W through ORT CUDA): skipped - onnxruntime-gpu is not importable here" | tee "$OUT/any_onnx_hw.log"
fi

# every row into one CSV, and the short table
$PY - "$RUNS" "$OUT" <<'PYEOF'
import csv, sys
from pathlib import Path
runs, out = Path(sys.argv[1]), Path(sys.argv[2])
rows = []
for f in sorted(runs.glob("*/*/results.csv")):
    with open(f, newline="") as fh:
        rows += list(csv.DictReader(fh))
if not rows:
    print("no results"); sys.exit(1)
names = list(rows[0])
for r in rows:
    names += [k for k in r if k not in names]
with open(out / "any_onnx_results.csv", "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=names)
    w.writeheader()
    w.writerows(rows)
def num(v, fmt):
    try:
        return format(float(v), fmt)
    except (TypeError, ValueError):
        return "-"
lines = ["| model | backend | prec | batch | status | samples/s | p50 ms | W | outputs | cos min | max abs | top-1 % | inputs / reason |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    why = r.get("reason") or r.get("input_shapes") or ""
    lines.append(f"| {r['model']} | {r['backend']} | {r['precision']} | {r['batch']} | {r['status']} | "
                 f"{num(r.get('throughput_ips'), '.1f')} | {num(r.get('latency_ms_p50'), '.3f')} | "
                 f"{num(r.get('power_w_mean'), '.0f')} | {r.get('accuracy_outputs') or '-'} | "
                 f"{num(r.get('accuracy_cosine_min'), '.5f')} | {num(r.get('accuracy_max_abs_err'), '.3g')} | "
                 f"{num(r.get('accuracy_top1_agreement_pct'), '.1f')} | {why[:90]} |")
(out / "any_onnx_table.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PYEOF
echo "total $(( $(date +%s) - T0 )) s; results in $OUT/any_onnx_results.csv, table in $OUT/any_onnx_table.md"
