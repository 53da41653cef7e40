"""An accuracy limit on a sweep whose other precisions record no accuracy (`run.accuracy_samples: 0`): only fp32 can
meet it (its drop is 0 by definition; `edgebench best` leaves out a row with no drop), and the search must not
measure the rest to find that out. The rule keys on what a row's accuracy pass depends on (backend, precision,
options, devices) and on rows that ran without one; a pass asked for that gave no drop leaves the group a candidate. Before, the drop's surrogate, fitted on fp32's zeros, called every fp16
configuration feasible: on this grid the search measured 43 of 126 rows (36 exploring fp16), and 213 of 504 on
the 168-configuration one (docs/results/search/synthetic/168-no-accuracy)."""

from __future__ import annotations

from typing import Any

import pytest
from search_landscape import benchmark_module

from edgebench.answer.best import ACCURACY_DROP, Limits
from edgebench.search.decide import _unjudgeable, decide
from edgebench.search.goal import Goal
from edgebench.search.space import make_point

pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")

GOAL = Goal("best", "throughput", Limits(slo_ms=2.431, percentile="p90", max_accuracy_drop_pct=1.0))


def searched(accuracy: bool) -> tuple[list[Any], dict[str, dict[str, Any]], Any]:
    """(the points, the rows the search measured, its last decision) on the synthetic fp32 + fp16 grid."""
    sg = benchmark_module("synthetic_grid")
    rows, configs = sg.closed_form_rows(["fp32", "fp16"], [1, 2, 4, 8, 16, 32, 64], [1, 2, 4], [""], repeats=3,
                                        accuracy=accuracy)
    points = [make_point(fields, hashes) for fields, hashes in configs]
    grid = {r["config_hash"]: r for r in rows}
    measured: dict[str, dict[str, Any]] = {}
    while True:
        d = decide(points, measured, GOAL, budget_left=len(rows) - len(measured), seed=0, surrogate="gp")
        if d.pick is None:
            return points, measured, d
        for h in d.pick.hashes:
            measured[h] = grid[h]


def answer_label(points: list[Any], d: Any) -> str:
    (key,) = d.answers["net"].answer_keys[:1]
    return next(p.label for p in points if p.key == key)


def test_a_precision_with_no_accuracy_is_left_out_after_its_first_rows():
    points, measured, d = searched(accuracy=False)
    assert answer_label(points, d) == "ort fp32 b1 cpu"  # the grid's answer: the only fp32 one under 2.431 ms
    fp16 = [r for r in measured.values() if r["precision"] == "fp16"]
    assert 1 <= len(fp16) <= 5, len(fp16)  # the seeds that found fp16 without a drop, none explored after
    assert len(measured) < 20, len(measured)  # 43 before
    assert "21 configuration(s) left out (" in d.stop
    assert "fp16: their rows ran without an accuracy pass (run.accuracy_samples 0)" in d.stop


def test_with_accuracy_recorded_nothing_is_left_out_and_fp16_answers():
    points, _measured, d = searched(accuracy=True)
    assert answer_label(points, d).startswith("ort fp16 ")  # a 0.3-point drop meets the 1-point limit
    assert "left out" not in d.stop


def test_a_group_whose_rows_asked_for_accuracy_is_judged_row_by_row():
    sg = benchmark_module("synthetic_grid")
    rows, configs = sg.closed_form_rows(["fp32", "fp16"], [1, 2], [1], [""], repeats=1, accuracy=False)
    points = [make_point(fields, hashes) for fields, hashes in configs]
    fp16_a, fp16_b = (p for p in points if p.categories["precision"] == "fp16")
    status: dict[str, list[dict[str, Any]]] = {p.key: [] for p in points}
    status[fp16_a.key] = [{**rows[2], ACCURACY_DROP: None}]  # ran without an accuracy pass
    keys, words = _unjudgeable(points, status, GOAL)
    assert keys == {fp16_a.key, fp16_b.key}  # the whole group, the unmeasured one too
    assert words.startswith("2 configuration(s) left out (1 measured), fp16: their rows ran without an accuracy pass")
    # a pass asked for that gave no drop (it failed; no class scores): the answer judges such rows one by one
    status[fp16_a.key] = [{**rows[2], ACCURACY_DROP: None, "accuracy_samples": 200}]
    assert _unjudgeable(points, status, GOAL) == (set(), "")
    # a drop in any row of the group, an invalid one included
    status[fp16_a.key] = [{**rows[2], ACCURACY_DROP: None}, {**rows[2], "status": "invalid", ACCURACY_DROP: 0.3}]
    assert _unjudgeable(points, status, GOAL) == (set(), "")
    # another backend is another group: its rows say nothing of this one's
    other = make_point({**configs[3][0], "backend": "trt"}, ["x0"])
    status[fp16_a.key] = [{**rows[2], ACCURACY_DROP: None}]
    status[other.key] = []
    assert _unjudgeable([*points, other], status, GOAL)[0] == {fp16_a.key, fp16_b.key}
    status[other.key] = [{**rows[3], "backend": "trt", "status": "failed", ACCURACY_DROP: None}]
    assert _unjudgeable([*points, other], status, GOAL)[0] == {fp16_a.key, fp16_b.key}  # a failed row ran no pass
    status[other.key] = [{**rows[3], "backend": "trt", ACCURACY_DROP: None}]
    assert _unjudgeable([*points, other], status, GOAL)[0] == {fp16_a.key, fp16_b.key, other.key}
    no_accuracy_limit = Goal("best", "throughput", Limits(slo_ms=2.431, percentile="p90"))
    assert _unjudgeable(points, status, no_accuracy_limit) == (set(), "")
    assert _unjudgeable(points, status, Goal("pareto")) == (set(), "")
