#!/usr/bin/env bash
# Replay the search with the level check (change.diff, on a tree of commit d8e3e2a) on the device machine's CPU
# cores, set by set, each set's records streamed to <check>-<set>.jsonl in $OUT/records.tar (rewritten after each
# set: a call cut by its limit keeps the sets it finished). Run from the repository root there (that tree needs
# ../device-stage.sh too). Staging as ../device-stage.sh says (two calls back to back: .device/w1, then
# .device/w2 with .device/pyd):
#   bash docs/results/search/level-check/device-replay.sh SET...
# Each set runs with EB_CHECK=off (the search before the check) and then =gated (with it), so a comparison is
# made on one machine: replays of one code on two machines differ where a grid's configurations nearly tie.
# SET: small-drawn-<grid> (50 drawn sets, seeds 0-4), held-out-<grid> (the same, draw seed 1), r18-drawn and
# r50-drawn (25 drawn sets, seeds 0-2), r50-fixed and r18-fixed (5 seeds), small-fixed (5 seeds).
# EB_CHECKS=gated runs the check alone.
set -euo pipefail
HERE=docs/results/search/level-check
source docs/results/search/device-stage.sh  # the wheels installed once; CORES, one thread per process, PYTHONPATH
# the tree here is the device's copy of commit d8e3e2a's: change.diff puts the check in, switched by EB_CHECK
patch -p1 --forward -s < "$HERE/change.diff" || true
mkdir -p /tmp/r
echo "$CORES cores, checks: ${EB_CHECKS:=off gated}"
R50=h200-refgrid=docs/results/search/refgrid/results.csv
R18=h200-refgrid-r18=docs/results/search/refgrid-resnet18/results.csv
for set in "$@"; do
  case "$set" in
    small-drawn-*) args=(--grids "${set#small-drawn-}" --seeds 5 --drawn 50 --no-fixed) ;;
    held-out-*) args=(--grids "${set#held-out-}" --seeds 5 --drawn 50 --draw-seed 1 --no-fixed) ;;
    small-fixed) args=(--seeds 5 --goals "best,lowest") ;;
    r18-drawn) args=(--grids "$R18" --seeds 3 --drawn 25 --no-fixed) ;;
    r50-drawn) args=(--grids "$R50" --seeds 3 --drawn 25 --no-fixed) ;;
    r50-fixed) args=(--grids "$R50" --seeds 5 --goals "best,lowest") ;;
    r18-fixed) args=(--grids "$R18" --seeds 5 --goals "best,lowest") ;;
    *) echo "set $set?"; exit 2 ;;
  esac
  for check in $EB_CHECKS; do
    t0=$SECONDS
    EB_CHECK=$check python3 benchmarks/search_eval.py "${args[@]}" --surrogates gp --jobs "$CORES" \
      --out "/tmp/o/$check-$set" 2> "/tmp/r/$check-$set.err" | { grep --line-buffered '^{' || true; } \
      > "/tmp/r/$check-$set.jsonl" || echo "$check $set failed rc=$?"
    echo "$check $set: $((SECONDS - t0)) s, $(wc -l < "/tmp/r/$check-$set.jsonl") searches"
    tar -cf "$OUT/records.tar" -C /tmp/r .  # one file back (the tool returns at most 8), rewritten after each set
  done
done
