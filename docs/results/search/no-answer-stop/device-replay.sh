#!/usr/bin/env bash
# Replay the search on the device machine's CPU cores, set by set, each set's records (search_eval's eval.json)
# in $OUT/records.tar (rewritten after each set: a call cut by its limit keeps the sets it finished). Run from the
# repository root there. Staging as ../device-stage.sh says (two calls back to back: .device/w1, then .device/w2
# with .device/pyd):
#   LABEL=... bash docs/results/search/no-answer-stop/device-replay.sh SET...
# SET: tight-<grid>[@<threshold>] (the 50 tight sets: draw seed 2, thresholds at quantiles 0-0.3 of the grid's
# worst-repeat values, few configurations or none feasible; with @T the stop with no answer at P < T, without it
# the tree's default), draw0-<grid> (the 50 drawn sets of draw seed 0), fixed (the fixed best goals of the four
# small grids). Seeds 0 to SEEDS-1 (default 5), gp. Records: <LABEL>-<SET>.eval.json.
set -euo pipefail
source docs/results/search/device-stage.sh  # the wheels installed once; CORES, one thread per process, PYTHONPATH
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
