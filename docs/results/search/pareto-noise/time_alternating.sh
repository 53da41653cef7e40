#!/bin/bash
# How step-time.txt was written: time_pareto_step.py with 53fc863's decide.py (old) and the current one (new),
# alternately, 4 runs each, from the repository root of a clean checkout (it swaps edgebench/search/decide.py and
# puts the current one back). Each line cut to its timing.
set -eu
git show 53fc863:edgebench/search/decide.py > /tmp/decide_old.py
cp edgebench/search/decide.py /tmp/decide_new.py
trap 'cp /tmp/decide_new.py edgebench/search/decide.py' EXIT
for _ in 1 2 3 4; do
  for v in old new; do
    cp /tmp/decide_$v.py edgebench/search/decide.py
    echo -n "$v: "
    PYTHONPATH=$PWD .venv/bin/python docs/results/search/pareto-noise/time_pareto_step.py | cut -c1-60
  done
done
