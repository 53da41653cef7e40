"""benchmarks/search_eval.py with the best-goal stop read from the largest single P(changes the answer) instead of
the union 1 - prod(1 - P_i) (EB_STOP=max-single; EB_STOP unset or "union": the shipped search, unpatched).

Any estimate of the chance that some candidate changes the answer (a joint draw from the surrogates, say) is at
least the largest single one. So a search that stops once that largest single P is below 0.05 stops no later than
any such estimate would, given the same picks: its rows are the floor, and the rows it saves are about the most any
estimate of the union could save (not exactly: a search that stops sooner may also confirm or check another answer).
Only a search with an answer is changed; one with none still reads P(some candidate meets every limit). From the
repository root (on 2 cores: about 3 min each fixed run, 15 min each drawn run):

    PYTHONPATH=$PWD .venv/bin/python docs/results/search/union-tail/stopvariant.py --grids h100-torch,h200-ort,h200-instances,cpu-small_cnn \\
        --seeds 5 --surrogates gp --goals best,lowest --jobs 2 --out /tmp/union
    EB_STOP=max-single PYTHONPATH=$PWD .venv/bin/python docs/results/search/union-tail/stopvariant.py (the same) --out /tmp/max-single
    python3 docs/results/search/union-tail/compare.py /tmp/union/eval.json /tmp/max-single/eval.json

The drawn runs: --no-fixed --drawn 10 --draw-seed 0 instead of --goals best,lowest.
"""
import os
import sys

sys.path[:0] = ["benchmarks", "."]
import search_eval as se  # noqa: E402

from edgebench.search import decide as dm  # noqa: E402

_model_step = dm._model_step


def max_single(*a, **k):
    pick, preds, why, out = _model_step(*a, **k)
    if pick is not None and pick.phase == "explore" and not pick.no_answer:
        pick.score = pick.p_change
    return pick, preds, why, out


if os.environ.get("EB_STOP", "union") == "max-single":
    dm._model_step = max_single  # search_eval's workers are forked: they inherit it
sys.exit(se.main(sys.argv[1:]))
