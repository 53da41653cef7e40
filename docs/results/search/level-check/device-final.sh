#!/usr/bin/env bash
# The search as committed (with the level check) replayed where the published records of these sets were made,
# the H200 machine's CPU cores: the small grids' fixed best goals over search seeds 0-14 (fixed-15-seeds) and the
# 168-configuration synthetic grid's best goals (fixed, 3 seeds; 48 drawn, 1 seed). Staging as ../device-stage.sh
# says (two calls: .device/w1, then .device/w2 with .device/pyd). Writes $OUT/final.tar.
set -euo pipefail
source docs/results/search/device-stage.sh  # the wheels installed once; CORES, one thread per process, PYTHONPATH
O=/tmp/final && rm -rf $O && mkdir -p $O
t0=$SECONDS
python3 benchmarks/search_eval.py --seeds 15 --surrogates gp --goals best,lowest --jobs "$CORES" \
  --out $O/fixed-15-seeds > $O/fixed-15-seeds.log 2>&1 || echo "fixed-15-seeds failed"
echo "fixed-15-seeds: $((SECONDS - t0)) s"; tar -cf "$OUT/final.tar" -C $O .
python3 benchmarks/synthetic_grid.py --out /tmp/synth168 > /dev/null
t0=$SECONDS
python3 benchmarks/search_eval.py --grids synth168=/tmp/synth168/results.csv --seeds 3 --surrogates gp \
  --goals best,lowest --jobs "$CORES" --out $O/168-fixed > $O/168-fixed.log 2>&1 || echo "168-fixed failed"
python3 benchmarks/search_eval.py --grids synth168=/tmp/synth168/results.csv --seeds 1 --surrogates gp --drawn 48 \
  --no-fixed --jobs "$CORES" --out $O/168-drawn > $O/168-drawn.log 2>&1 || echo "168-drawn failed"
echo "synthetic 168: $((SECONDS - t0)) s"; tar -cf "$OUT/final.tar" -C $O .
