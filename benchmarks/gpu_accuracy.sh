#!/usr/bin/env bash
# Real accuracy per precision on one GPU (H100/H200), no download, < 6 min:
#   1. train a torchvision ResNet-50 (models/resnet50.yaml, 1000-way head) on scikit-learn's digits upscaled to
#      224x224, on the GPU, in seconds (benchmarks/gpu_accuracy_train.py), save its state_dict, lay the digits out
#      as a class-folder data set of PNG files; print its own plain-torch fp32 top-1 on the evaluated images;
#   2. edgebench rows with accuracy_top1_pct/top5_pct on the same images: torch fp32/fp16/amp, and ort
#      fp32/fp16/int8 on the CUDA EP (int8 calibrated on a labelled subset disjoint from the evaluated images)
#      when onnxruntime-gpu is importable (else those rows are skipped, said below);
#   3. results.csv of each run, the report (its tables/accuracy.md) and a short table in $OUT.
# Usage (repo root, GPU machine): OUT=/tmp/out benchmarks/gpu_accuracy.sh
#   PYTHONPATH=/tmp/site:$PWD picks up a staged onnxruntime-gpu. EVAL, CALIB, EPOCHS override the sizes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuout}; WORK=${WORK:-/tmp/gpuacc}
EVAL=${EVAL:-500}; CALIB=${CALIB:-128}; EPOCHS=${EPOCHS:-8}; LIMIT=${LIMIT:-240}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1 EDGEBENCH_CACHE=${EDGEBENCH_CACHE:-$WORK/cache} PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD
start=$(date +%s)

python3 benchmarks/gpu_accuracy_train.py --out "$WORK" --eval "$EVAL" --calib "$CALIB" --epochs "$EPOCHS" \
  2>&1 | tee "$OUT/train.log"
[ -f "$WORK/resnet50_digits.pt" ] || { echo "training failed: see $OUT/train.log"; exit 1; }
cp "$WORK/train.json" "$OUT/"

common=(--device dgpu-quick --models resnet50 --batches 32 --instances 1 --repeats 1 --duration 1.5
        --weights "$WORK/resnet50_digits.pt" --dataset "$WORK/digits"
        --accuracy-samples "$EVAL" --calibration-samples "$CALIB")
runs=()
rm -rf "$WORK/runs-torch" "$WORK/runs-ort"
timeout "$LIMIT" python3 -m edgebench bench --out "$WORK/runs-torch" --backends torch --precisions fp32,fp16,amp \
  "${common[@]}" 2>&1 | tee "$OUT/bench-torch.log" | tail -15
runs+=("$(ls -d "$WORK"/runs-torch/*/ | head -1)")
if python3 -c "import onnxruntime as o, sys; sys.exit('CUDAExecutionProvider' not in o.get_available_providers())"; then
  timeout "$LIMIT" python3 -m edgebench bench --out "$WORK/runs-ort" --backends ort --precisions fp32,fp16,int8 \
    "${common[@]}" 2>&1 | tee "$OUT/bench-ort.log" | tail -15
  runs+=("$(ls -d "$WORK"/runs-ort/*/ | head -1)")
else
  echo "ort rows SKIPPED: onnxruntime has no CUDAExecutionProvider here (stage onnxruntime-gpu on PYTHONPATH)" \
    | tee "$OUT/ort-skipped.txt"
fi

for d in "${runs[@]}"; do
  [ -n "$d" ] && cp "$d/results.csv" "$OUT/$(basename "$(dirname "$d")")-results.csv"
done
python3 -m edgebench report "${runs[@]}" --out "$OUT/report" --formats png >"$OUT/report.log" 2>&1 \
  || echo "report failed: see $OUT/report.log"

python3 - "$OUT" "${runs[@]}" <<'PY' | tee "$OUT/accuracy_table.md"
import csv, json, sys
from pathlib import Path
out, runs = Path(sys.argv[1]), sys.argv[2:]
train = json.loads((out / "train.json").read_text())
print(f"ResNet-50 trained on digits ({train['train_images']} images, {train['epochs']} epochs, "
      f"{train['train_s']} s on {train['gpu']}); independent plain-torch fp32 top-1 on the "
      f"{train['evaluated_images']} evaluated images: {train['independent_fp32_top1_pct']:.2f}%\n")
cols = ["backend", "precision", "status", "accuracy_top1_pct", "accuracy_top5_pct", "accuracy_top1_agreement_pct",
        "accuracy_samples", "calibration_source", "throughput_ips", "provider"]
print("| " + " | ".join(cols) + " |")
print("|" + "---|" * len(cols))
for run in runs:
    for row in csv.DictReader(open(Path(run) / "results.csv")):
        cells = []
        for c in cols:
            v = row.get(c, "")
            try:
                v = f"{float(v):.2f}" if c.endswith(("_pct", "_ips")) and v else v
            except ValueError:
                pass
            cells.append(v if c != "status" or not row.get("reason") else f"{v} ({row['reason'][:60]})")
        print("| " + " | ".join(cells) + " |")
PY
echo "total $(( $(date +%s) - start )) s; files in $OUT"
