# Sourced (not run) by the device replays under docs/results/search, from the repository root on the device
# machine: installs the staged wheels once per machine, then sets the environment every replay runs in.
# scipy / scikit-learn travel in two parts (.device/w1, .device/w2, made by ../shared/tools/stage-wheels.sh), in
# two calls back to back; pydantic's in .device/pyd, with the second. A call that has staged fewer than two parts
# ends the calling script here (exit 0, "staged: ..."). Sets CORES (the machine's cores), one BLAS / OpenMP
# thread per process (the replays run one process per core), and PYTHONPATH.
mkdir -p /tmp/w && cp .device/w*/p.* /tmp/w/ 2>/dev/null || true
if [ ! -d /tmp/site/sklearn ]; then
  [ "$(ls /tmp/w/p.* | wc -l)" -ge 2 ] || { echo "staged: $(ls /tmp/w)"; exit 0; }
  cat /tmp/w/p.* | tar -x -C /tmp/w
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/w/*.whl .device/pyd/*.whl
fi
CORES=$(nproc)  # before OMP_NUM_THREADS: nproc reads it
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH=/tmp/site:$PWD
