#!/usr/bin/env bash
# Replay the search on the device machine's CPU cores, set by set, each set's records (search_eval's eval.json)
# in $OUT/records.tar (rewritten after each set: a call cut by its limit keeps the sets it finished). Run from the
# repository root there. The wheels of scipy / scikit-learn travel in two parts (.device/w1, .device/w2, made by
# ../shared/tools/stage-wheels.sh), in two calls back to back; pydantic's in .device/pyd, with the second:
#   LABEL=... bash docs/results/search/no-answer-stop/device-replay.sh SET...
# SET: tight-<grid>[@<threshold>] (the 50 tight sets: draw seed 2, thresholds at quantiles 0-0.3 of the grid's
# worst-repeat values, few configurations or none feasible; with @T the stop with no answer at P < T, without it
# the tree's default), draw0-<grid> (the 50 drawn sets of draw seed 0), fixed (the fixed best goals of the four
# small grids). Seeds 0 to SEEDS-1 (default 5), gp. Records: <LABEL>-<SET>.eval.json.
set -euo pipefail
mkdir -p /tmp/w && cp .device/w*/p.* /tmp/w/ 2>/dev/null || true
if [ ! -d /tmp/site/sklearn ]; then
  [ "$(ls /tmp/w/p.* | wc -l)" -ge 2 ] || { echo "staged: $(ls /tmp/w)"; exit 0; }
  cat /tmp/w/p.* | tar -x -C /tmp/w
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/w/*.whl .device/pyd/*.whl
fi
CORES=$(nproc)  # before OMP_NUM_THREADS: nproc reads it
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/r
echo "$CORES cores, seeds ${SEEDS:=5}, label ${LABEL:=run}"
for set in "$@"; do
  case "$set" in
    tight-*) spec=${set#tight-}; grid=${spec%@*}
             args=(--grids "$grid" --drawn 50 --no-fixed --draw-seed 2 --draw-quantiles 0,0.3)
             [ "$spec" != "$grid" ] && args+=(--no-answer-min-prob "${spec#*@}") ;;
    draw0-*) args=(--grids "${set#draw0-}" --drawn 50 --no-fixed) ;;
    fixed) args=(--grids h100-torch,h200-ort,h200-instances,cpu-small_cnn --goals best,lowest) ;;
    *) echo "set $set?"; exit 2 ;;
  esac
  t0=$SECONDS
  python3 benchmarks/search_eval.py "${args[@]}" --surrogates gp --seeds "$SEEDS" --jobs "$CORES" \
    --out "/tmp/o/$LABEL-$set" > "/tmp/r/$LABEL-$set.log" 2>&1 || echo "$set failed rc=$?"
  cp "/tmp/o/$LABEL-$set/eval.json" "/tmp/r/$LABEL-$set.eval.json" 2>/dev/null || true
  echo "$set: $((SECONDS - t0)) s, $(grep -c '^{' "/tmp/r/$LABEL-$set.log") searches"
  tar -cf "$OUT/records.tar" -C /tmp/r .
done
