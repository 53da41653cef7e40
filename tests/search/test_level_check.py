"""search.decide's check before a best-mode stop (issue 36): a level of a categorical axis whose usable rows sit at
fewer than 2 (batch, instances) positions is measured where the answer is before the search may stop on it.

- On the stored ResNet-18 grid of the reference shape (docs/results/search/refgrid-resnet18), best throughput with
  p90 <= 1.868 ms and a drop <= 1 pp, search seed 3: amp's only row was a seed at b2 2x, the surrogate put amp b32
  at 16,895 [13,453, 21,219] img/s, and the search stopped on fp16 b32 (22.7k), 4% below amp b32 (23.7k). With the
  check it measures amp b32 before the stop and answers it; without it (the check switched off), the old answer.
- design.thin_level itself on a small plan: which level it asks for, where, and when it asks for nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from search_landscape import answer_keys, replay, stored_grid

from edgebench.answer.best import Limits
from edgebench.answer.candidates import IDENTITY
from edgebench.search import decide as decide_module
from edgebench.search.design import thin_level
from edgebench.search.goal import Goal
from edgebench.search.space import Encoder, SearchPoint, make_point

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


def _label(points: list[SearchPoint], key: str) -> str:
    return next(p.label for p in points if p.key == key)


@pytest.mark.slow
def test_the_resnet18_confident_miss_is_measured_before_the_stop_and_answered(monkeypatch):
    pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")
    points, rows = stored_grid(RESULTS / "search" / "refgrid-resnet18" / "results.csv")
    goal = Goal("best", "throughput", Limits(slo_ms=1.868, percentile="p90", max_accuracy_drop_pct=1.0))
    (truth,) = answer_keys(goal, rows.values(), points)
    assert _label(points, truth).startswith("torch amp b32")

    final, picks, got = replay(points, rows.__getitem__, goal, seed=3, surrogate="gp")
    checks = [(key, why) for phase, key, _h, why in picks if phase == "check"]
    assert any(key == truth and "precision amp" in why for key, why in checks), checks
    assert answer_keys(goal, got.values(), points) == (truth,)
    assert final.stop is not None and final.stop.startswith("settled"), final.stop

    monkeypatch.setattr(decide_module, "thin_level", lambda *a, **k: None)
    final, picks, got = replay(points, rows.__getitem__, goal, seed=3, surrogate="gp")
    assert not [p for p in picks if p[0] == "check"]
    (old,) = answer_keys(goal, got.values(), points)
    assert old != truth and _label(points, old).startswith("torch fp16 b32"), _label(points, old)


def _plan(precisions=("fp32", "fp16", "amp"), batches=(1, 4, 16, 64)) -> list[SearchPoint]:
    out = []
    for precision in precisions:
        for batch in batches:
            i = len(out)
            fields = {"model": "net", "backend": "torch", "precision": precision, "batch": batch, "instances": 1,
                      "mode": "process", "placement": "cuda:0"}
            out.append(make_point(fields, [f"p{i}r0", f"p{i}r1"]))
    return out


def _row(p: SearchPoint, repeat: int, status: str = "ok") -> dict[str, Any]:
    row: dict[str, Any] = {c: None for c in IDENTITY}
    row.update({"config_hash": p.hashes[repeat], "status": status, "throughput_ips": 100.0 * p.batch})
    return row


def _check(points: list[SearchPoint], measured: dict[str, list[dict[str, Any]]], best: SearchPoint,
           candidates: list[SearchPoint] | None = None):
    status = {p.key: measured.get(p.key, []) for p in points}
    usable = {k: [r for r in v if r["status"] == "ok"] for k, v in status.items()}
    return thin_level(points, status, usable, points if candidates is None else candidates, best, Encoder(points))


def test_a_level_at_one_position_is_asked_for_where_the_answer_is_and_one_at_two_is_not():
    points = _plan()
    at = {(p.categories["precision"], p.batch): p for p in points}
    best = at["fp16", 16]
    measured = {p.key: [_row(p, 0)] for p in (at["fp32", 1], at["fp32", 64], best, at["amp", 4])}
    twin, level, positions = _check(points, measured, best)
    assert (twin.key, level, positions) == (at["amp", 16].key, "precision amp", 1)

    measured[at["amp", 64].key] = [_row(at["amp", 64], 0)]  # amp at a second position: it has a curve of its own
    assert _check(points, measured, best) is None
    # two repeats at one position are one position
    measured[at["amp", 64].key] = []
    measured[at["amp", 4].key] = [_row(at["amp", 4], 0), _row(at["amp", 4], 1)]
    assert _check(points, measured, best)[0].key == at["amp", 16].key
    # a level whose only rows are invalid has no position: it is asked for too
    measured[at["amp", 4].key] = [_row(at["amp", 4], 0, "invalid")]
    assert _check(points, measured, best)[2] == 0


def test_the_check_asks_for_nothing_already_tried_or_left_out_of_the_candidates():
    points = _plan()
    at = {(p.categories["precision"], p.batch): p for p in points}
    best = at["fp16", 16]
    measured = {p.key: [_row(p, 0)] for p in (at["fp32", 1], at["fp32", 64], best, at["amp", 4])}
    tried = dict(measured)
    tried[at["amp", 16].key] = [_row(at["amp", 16], 0, "failed")]
    assert _check(points, tried, best) is None  # its row failed: not measured again
    no_candidate = [p for p in points if p.key != at["amp", 16].key]  # e.g. its group ran with no accuracy pass
    assert _check(points, measured, best, no_candidate) is None


def test_each_axis_is_checked_with_the_answers_other_categories_and_the_instances_kept():
    """Two categorical axes (backend x precision) and two instance counts: a backend seen at one position is asked
    for at the answer's precision, batch and instances; a level of which no configuration shares the answer's
    other categories (int8 runs on ort only, the answer is torch) is not asked for."""
    out = []
    for backend, precisions in (("torch", ("fp32", "fp16")), ("ort", ("fp32", "fp16", "int8"))):
        for precision in precisions:
            for batch in (1, 8, 64):
                for instances in (1, 4):
                    fields = {"model": "net", "backend": backend, "precision": precision, "batch": batch,
                              "instances": instances, "mode": "process", "placement": "cuda:0"}
                    i = len(out)
                    out.append(make_point(fields, [f"q{i}r0"]))
    at = {(p.categories["backend"], p.categories["precision"], p.batch, p.instances): p for p in out}
    best = at["torch", "fp16", 8, 4]
    seen = [at["torch", "fp32", 1, 1], at["torch", "fp32", 64, 4], best, at["torch", "fp16", 1, 1],
            at["ort", "fp32", 64, 1]]
    measured = {p.key: [_row(p, 0)] for p in seen}
    twin, level, positions = _check(out, measured, best)
    assert (twin.key, level, positions) == (at["ort", "fp16", 8, 4].key, "backend ort", 1)
    measured[at["ort", "fp32", 8, 4].key] = [_row(at["ort", "fp32", 8, 4], 0)]  # ort now at 2 positions
    assert _check(out, measured, best) is None  # int8 (no position) has no torch twin: not asked for
    measured[at["ort", "int8", 1, 4].key] = [_row(at["ort", "int8", 1, 4], 0)]
    ort_best = {**measured, best.key: []}  # with an ort answer, int8 (1 position) is asked for at its position
    twin, level, _n = _check(out, ort_best, at["ort", "fp16", 8, 4])
    assert (twin.key, level) == (at["ort", "int8", 8, 4].key, "precision int8")


def test_a_check_outranks_another_models_explore_pick_that_would_stop_the_search(monkeypatch):
    """Two models: one about to stop with a level to check, the other exploring below explore_min_prob. The
    decision measures the check (before, the other's pick ranked by P could win and the search stopped, its stop
    line leaving the first model out)."""
    from edgebench.search.decide import Pick, decide

    points = _plan()
    other = [make_point({"model": "other", "backend": "torch", "precision": "fp32", "batch": 1, "instances": 1,
                         "mode": "process", "placement": "cuda:0"}, ["o0r0"])]

    def step(mine, *_a, **_k):
        if mine[0].model == "net":
            return Pick("check", mine[0].key, [mine[0].hashes[0]], "check", 0.001, None, "net"), [], None, ""
        return Pick("explore", mine[0].key, [mine[0].hashes[0]], "explore", 0.01, 0.02, "other", False, 1), [], None, ""

    monkeypatch.setattr(decide_module, "_model_step", step)
    d = decide(points + other, {}, Goal("best", "throughput"), budget_left=10)
    assert d.stop is None and d.pick is not None and d.pick.phase == "check", (d.stop, d.pick)


def test_where_the_plan_lacks_the_answers_batch_for_a_level_its_nearest_is_asked_for():
    points = [p for p in _plan() if not (p.categories["precision"] == "amp" and p.batch == 16)]
    at = {(p.categories["precision"], p.batch): p for p in points}
    best = at["fp16", 16]
    measured = {p.key: [_row(p, 0)] for p in (at["fp32", 1], at["fp32", 64], best, at["amp", 1])}
    twin, _level, _n = _check(points, measured, best)
    assert twin.key == at["amp", 4].key  # log2 16 is 2 from log2 4 and from log2 64: the earlier in the plan
    measured[at["amp", 4].key] = [_row(at["amp", 4], 0)]
    assert _check(points, measured, best) is None  # amp at 2 positions now


def test_a_pareto_search_and_a_search_with_no_answer_never_consult_the_check(monkeypatch):
    """The check reads the best's batch and instances: a front has no one best, and with no answer there is none.
    Both searches run to their stop (where a best-mode search with an answer would consult it) without a call."""
    from search_landscape import grid

    calls = []
    monkeypatch.setattr(decide_module, "thin_level", lambda *a, **k: calls.append(a) or None)
    points, rows = grid()
    final, picks, _got = replay(points, rows.__getitem__, Goal("pareto"), seed=0, surrogate="loglinear")
    assert final.stop is not None and final.stop.startswith("settled"), final.stop
    none = Goal("best", "throughput", Limits(slo_ms=0.001, percentile="p90"))
    final, picks, _got = replay(points, rows.__getitem__, none, seed=0, surrogate="loglinear")
    assert final.stop is not None and "no answer" in final.stop, final.stop
    assert calls == []
    # and a best-mode search with an answer does consult it before its stop
    some = Goal("best", "throughput", Limits(slo_ms=8.0, percentile="p90"))
    final, _picks, _got = replay(points, rows.__getitem__, some, seed=0, surrogate="loglinear")
    assert final.stop is not None and final.stop.startswith("settled"), final.stop
    assert calls
