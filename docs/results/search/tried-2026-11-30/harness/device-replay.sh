#!/usr/bin/env bash
# Replay the search with the kernel variant $EB_KERNEL on the device machine's CPU cores (run from the repository
# root there, the wheels of scipy / scikit-learn staged by ../shared/tools/stage-wheels.sh and split in two):
#   EB_KERNEL=v5 bash docs/results/search/tried-2026-11-30/harness/device-replay.sh small|refgrids|drawn|drawn-h200
# Writes $OUT/$EB_KERNEL/<set>/eval.json (+ eval.md) and a log per set.
set -euo pipefail
# the wheels travel in parts (.device/w1, w2: one per call, the tree and a carry stay under 64 MiB); a call that
# carries a part leaves it in /tmp/w, and the run starts once every part is there
mkdir -p /tmp/w && cp .device/w*/p.* /tmp/w/ 2>/dev/null || true
if [ ! -d /tmp/site/sklearn ]; then
  [ "$(ls /tmp/w/p.* | wc -l)" -ge "${PARTS:-2}" ] || { echo "staged: $(ls /tmp/w)"; exit 0; }
  cat /tmp/w/p.* | tar -x -C /tmp/w
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/w/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD
CORES=$(nproc)  # before OMP_NUM_THREADS is set: nproc answers that variable (it gave 1, and one process ran)
# one BLAS thread a process: 16 processes ran a small-grid search in ~400 s, against ~12 s on 2 cores here; the
# cause was not shown, and 16 BLAS threads each (the staged scipy's, loaded after search_eval's limit) is likely
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
H=docs/results/search/tried-2026-11-30/harness/ev.py
O=$OUT/$EB_KERNEL
mkdir -p "$O"
echo "$CORES cores"
run() {  # name, args...
  local name=$1; shift
  local t0=$SECONDS
  python3 "$H" "$@" --surrogates gp --jobs "$CORES" --out "$O/$name" > "$O/$name.log" 2>&1 || echo "$name failed rc=$?"
  echo "$name: $((SECONDS - t0)) s"; tail -2 "$O/$name.log"
}
R50=h200-refgrid=docs/results/search/refgrid/results.csv
R18=h200-refgrid-r18=docs/results/search/refgrid-resnet18/results.csv
case "$1" in
  small)
    run small-fixed --seeds 5
    run small-drawn --seeds 5 --drawn 50 --no-fixed ;;
  drawn-h200)  # the two H200 small grids' drawn sets, seeds 0-2 (300 searches)
    run h200-drawn3 --grids h200-ort,h200-instances --seeds 3 --drawn 50 --no-fixed ;;
  drawn)  # the drawn sets: seeds 0-2 of the small grids' 50 (600 searches), and the reference-shape grids' 75 each
    run small-drawn3 --seeds 3 --drawn 50 --no-fixed
    run r18-drawn --grids "$R18" --seeds 3 --drawn 25 --no-fixed
    run r50-drawn --grids "$R50" --seeds 3 --drawn 25 --no-fixed ;;
  refgrids)
    run r18-fixed --grids "$R18" --seeds 5
    run r18-drawn --grids "$R18" --seeds 3 --drawn 25 --no-fixed
    run r50-fixed --grids "$R50" --seeds 5
    run r50-drawn --grids "$R50" --seeds 3 --drawn 25 --no-fixed ;;
esac
