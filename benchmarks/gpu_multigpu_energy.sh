#!/usr/bin/env bash
# Two-GPU energy (issue 9): is energy per image of one ResNet-50 instance on EACH of two GPUs
# ([cuda:0, cuda:1]) the same as that of one instance on one GPU? Before the fix NVML sampled GPU 0 only,
# so the two-GPU row reported about half its energy. Needs the 2-GPU H200 machine (kind nvidia-h200-x2);
# torch backend only (no ONNX Runtime GPU needed). About 4-5 minutes.
#   OUT=/some/dir benchmarks/gpu_multigpu_energy.sh
# Rows (fp16, batch 32, 10 s windows, 2 repeats): 1 instance on cuda:0, 1 on cuda:1, 2 placed [cuda:0, cuda:1].
# Prints energy/img per row and the ratio two-GPU / mean(single rows); the goal is within 10% of 1.0.
# Everything (profile, log, results.csv, system.json, per-row timelines with gpu0_/gpu1_ channels) goes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpuout}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 EDGEBENCH_CACHE=${EDGEBENCH_CACHE:-/tmp/ebcache}
PY=${PYTHON:-python3}

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
nvidia-smi -L > "$OUT/gpus.txt" 2>&1 || true
if [ "${ngpu:-0}" -lt 2 ]; then
  echo "SKIPPED: needs 2 GPUs, nvidia-smi lists ${ngpu:-0} (run on kind nvidia-h200-x2)" | tee "$OUT/multigpu.log"
  exit 2
fi

cat > "$OUT/multigpu-energy.yaml" <<'EOF'
name: multigpu-energy
extends: dgpu
description: ResNet-50 fp16 b32 on cuda:0, on cuda:1, and one instance on each (energy/img must agree)
sweep:
  models: [resnet50]
  backends: [torch]
  precisions: [fp16]
  batches: [32]
  placements: [[cuda:0], [cuda:1], [cuda:0, cuda:1]]
run:
  warmup_s: 2.0
  duration_s: 10.0
  max_duration_s: 20.0
  min_inferences: 64
  repeats: 2
  kernel_profile_steps: 0
  accuracy_samples: 0
telemetry:
  samplers: [nvml, host]
  interval_s: 0.05
  idle_baseline_s: 0
EOF

rm -rf "$OUT/runs"
timeout 330 "$PY" -m edgebench bench --device "$OUT/multigpu-energy.yaml" --out "$OUT/runs" 2>&1 | tee "$OUT/multigpu.log" | tail -25
run_dir=$(ls -d "$OUT"/runs/*/ 2>/dev/null | head -1)
if [ -z "$run_dir" ] || [ ! -f "$run_dir/results.csv" ]; then
  echo "no results.csv: see $OUT/multigpu.log"; exit 1
fi
cp "$run_dir/results.csv" "$OUT/multigpu-results.csv"
cp "$run_dir/system.json" "$OUT/multigpu-system.json"

"$PY" - "$run_dir/results.csv" <<'EOF' | tee "$OUT/multigpu-table.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
by = {}
for r in rows:
    by.setdefault(r["placement"], []).append(r)
print(f"{'placement':<16} {'status':<14} {'img/s':>9} {'power W':>9} {'mJ/img':>8} {'scope':<10} energy_source")
mean_mj = {}
for placement in ("cuda:0", "cuda:1", "cuda:0+cuda:1"):
    vals = []
    for r in by.get(placement, []):
        e = r["energy_per_inference_mj"]
        print(f"{placement:<16} {r['status']:<14} {float(r['throughput_ips'] or 0):>9.1f} "
              f"{float(r['power_w_mean'] or 'nan'):>9.1f} {float(e or 'nan'):>8.2f} {r['power_scope']:<10} "
              f"{r['energy_source']}" + (f"  ({r['reason'][:80]})" if r['reason'] else ""))
        if e and r["status"] in ("ok", "invalid"):
            vals.append(float(e))
    if vals:
        mean_mj[placement] = statistics.mean(vals)
single = [mean_mj[p] for p in ("cuda:0", "cuda:1") if p in mean_mj]
if len(single) == 2 and "cuda:0+cuda:1" in mean_mj:
    ratio = mean_mj["cuda:0+cuda:1"] / statistics.mean(single)
    verdict = "MET" if abs(ratio - 1) <= 0.10 else "NOT MET"
    print(f"energy/img: cuda:0 {mean_mj['cuda:0']:.2f} mJ, cuda:1 {mean_mj['cuda:1']:.2f} mJ, "
          f"[cuda:0,cuda:1] {mean_mj['cuda:0+cuda:1']:.2f} mJ; ratio two-GPU / mean(single) = {ratio:.3f} "
          f"(goal 0.90-1.10: {verdict})")
else:
    print(f"ratio not computable: energy/img known for {sorted(mean_mj)}")
EOF
