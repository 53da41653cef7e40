#!/usr/bin/env bash
# Issue 54, the search's stop: replays on the device machine's CPU cores (16; the replays are CPU work), in one call,
# each record streamed to $OUT as it finishes (a call cut by its limit keeps what it finished). Run from the
# repository root there, with the call carrying .a3dev (made here by the lines below, ignored by git):
#   .a3dev/whl:  scikit-learn 1.9.1 and pydantic 2.14.4 wheels (+ pydantic_core 2.50.5, annotated-types 0.8.0,
#                typing-inspection 0.4.5, typing_extensions 4.16.0, threadpoolctl 3.8.0, joblib 1.6.0), the
#                versions of the published replays (numpy and scipy: the machine's own)
#   .a3dev/snap: `git archive HEAD edgebench benchmarks <the six grids' results.csv>` with this item's files copied
#                over it (benchmarks/search_*.py, edgebench/search/*.py), so the replay runs the committed answer
#                layer whatever else the working tree holds mid-edit
# What it replays, in this order (each step gets what is left of DEADLINE seconds, default 500; a step with under
# 30 s left is skipped; search_eval --compare runs each search under the variants named, in one pool, interleaved
# over the grids, so a step cut short holds the same sets for each grid). A decider-check replay also records the
# search without the check ("without_check": the stop it would have made where the check is first measured; until
# then the two are one search), so the shipped search's stops come from the same replays. The variant replayed
# here is the check's frontier form (decider-check+decider-frontier); the unrestricted form and conformal-spread
# were replayed on this VM (the records beside this script):
#   1. 50 knife-edge sets per stored grid (draw_knife_edges, draw seed 3), search seed 0, the six grids;
#   2. the issue's H100 set (best throughput, p90 <= 7.9 ms), search seeds 0-19;
#   3. the fixed best goals of the four small grids, search seeds 0-4 (the rows the check costs).
set -uo pipefail
DEADLINE=${DEADLINE:-500}
T0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .a3dev/whl/*.whl \
  || { echo "wheels did not install"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/.a3dev/snap OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
cd .a3dev/snap
CORES=$(nproc)
python3 -c "import numpy, scipy, sklearn, sys; print(sys.version.split()[0], 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'sklearn', sklearn.__version__)" | tee "$OUT/env.txt"
echo "cores $CORES; $(uname -m); $(grep -m1 'model name' /proc/cpuinfo)" | tee -a "$OUT/env.txt"
GRIDS6=h100-torch,h200-ort,h200-instances,cpu-small_cnn,h200-refgrid,h200-refgrid-r18
KNIFE=(--grids "$GRIDS6" --seeds 1 --drawn 50 --draw knife-edge --draw-seed 3 --no-fixed)
left() { echo $((DEADLINE - (SECONDS - T0))); }
step() {  # NAME ARGS...: one search_eval run, its log and records in $OUT; skipped with under 30 s left
  local name=$1; shift
  local t=$SECONDS
  [ "$(left)" -ge 30 ] || { echo "$name: skipped, $(left) s left" | tee -a "$OUT/env.txt"; return; }
  timeout "$(left)" python3 benchmarks/search_eval.py "$@" --surrogates gp --jobs "$CORES" \
    --records "$OUT/$name.jsonl" > "$OUT/$name.log" 2>&1
  echo "$name: rc $?, $((SECONDS - t)) s, $(wc -l < "$OUT/$name.jsonl") records" | tee -a "$OUT/env.txt"
}
step knife-edge-frontier "${KNIFE[@]}" --compare decider-check+decider-frontier
step h100-p90-7.9-frontier --grids h100-torch --seeds 20 --objective throughput --slo-ms 7.9 --slo-percentile p90 \
  --compare decider-check+decider-frontier
step fixed-best-frontier --grids h100-torch,h200-ort,h200-instances,cpu-small_cnn --seeds 5 --goals best,lowest \
  --compare decider-check+decider-frontier
echo "all: $((SECONDS - T0)) s" | tee -a "$OUT/env.txt"
