"""A best search stops with "no answer" only when the configurations it has not measured are, together, far less
likely to hold one than the threshold of a stop with an answer (issue 36): P(some candidate meets every limit) <
NO_ANSWER_SHARE x explore_min_prob (0.01 by default). A wrong "no answer" loses the whole answer; a wrong stop with
one loses at most its gap to the best.

- decide itself, on picks whose scores are set (its per-model step replaced): the same score stops a model with
  an answer and keeps one with none going; the threshold is a parameter; with two models, the one with no answer
  keeps the search going when the other would stop.
- A replay on the known landscape: a search with no answer to find stops below the stricter threshold, and says it.
- Before a stop with no answer, the space-filling design is finished (effective features + DESIGN_EXTRA
  configurations): a replay on a stored grid that stopped after its 3 seeds now answers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from search_landscape import grid, replay

from edgebench.answer.best import Limits
from edgebench.search import decide as decide_module
from edgebench.search.decide import DESIGN_EXTRA, EXPLORE_MIN_PROB, NO_ANSWER_SHARE, Pick, decide
from edgebench.search.goal import Goal
from edgebench.search.space import Encoder, make_point

GOAL = Goal("best", "throughput", Limits(slo_ms=5.0, percentile="p90"))


def _points(models=("net",)):
    return [make_point({"model": m, "backend": "null", "precision": "fp32", "batch": b, "instances": 1,
                        "mode": "process", "placement": "cpu"}, [f"{m}{b}r0"]) for m in models for b in (1, 2)]


def _stub(monkeypatch, scores: dict[str, tuple[float, bool]]) -> None:
    """Each model's step returns an explore pick with the given (score, no answer yet)."""
    def step(mine, *_a, **_k):
        score, none = scores[mine[0].model]
        return (Pick("explore", mine[0].key, [mine[0].hashes[0]], f"{mine[0].label}: explore", score / 2, score,
                     mine[0].model, none, 2), [], None, "")

    monkeypatch.setattr(decide_module, "_model_step", step)


def test_a_score_that_stops_a_search_with_an_answer_keeps_one_with_none_going(monkeypatch):
    assert EXPLORE_MIN_PROB * NO_ANSWER_SHARE == pytest.approx(0.01)
    points = _points()
    _stub(monkeypatch, {"net": (0.03, False)})
    d = decide(points, {}, GOAL, budget_left=10)
    assert d.pick is None and d.stop is not None and "< 0.05" in d.stop, (d.pick, d.stop)
    _stub(monkeypatch, {"net": (0.03, True)})
    d = decide(points, {}, GOAL, budget_left=10)
    assert d.stop is None and d.pick is not None and d.pick.phase == "explore" and d.pick.no_answer
    # the threshold of a stop with no answer is a parameter: at explore_min_prob, the search before this rule
    d = decide(points, {}, GOAL, budget_left=10, no_answer_min_prob=EXPLORE_MIN_PROB)
    assert d.pick is None and d.stop is not None
    assert "no answer" in d.stop and "P(any meets every limit) = 0.030 < 0.05" in d.stop, d.stop
    _stub(monkeypatch, {"net": (0.008, True)})
    d = decide(points, {}, GOAL, budget_left=10)
    assert d.pick is None and d.stop is not None and "P(any meets every limit) = 0.008 < 0.01" in d.stop, d.stop


def test_a_model_with_no_answer_keeps_the_search_going_when_another_would_stop(monkeypatch):
    """Two models: 'a' with no answer at 0.03, 'b' with an answer at 0.04 (higher, but below its threshold). The
    pick is a's; before, b's higher score ranked first and stopped the search with a's 0.03 unexplored."""
    points = _points(("a", "b"))
    _stub(monkeypatch, {"a": (0.03, True), "b": (0.04, False)})
    d = decide(points, {}, GOAL, budget_left=10)
    assert d.stop is None and d.pick is not None and d.pick.model == "a", (d.stop, d.pick)
    d = decide(points, {}, GOAL, budget_left=10, no_answer_min_prob=0.05)
    assert d.pick is None and d.stop is not None and d.stop.count("< 0.05") == 2, d.stop


def test_the_design_before_a_stop_with_no_answer_ranks_as_an_explore_pick_that_goes_on(monkeypatch):
    """Two models: 'a' about to stop with no answer, short of its design (a design pick with its P = 0.006), 'b'
    exploring. b's pick above its threshold goes first (under a row budget, a model about to say "no answer" does
    not spend it before b); b's pick below its threshold goes after a's design row, which keeps the search going;
    b's check before its stop goes first."""
    points = _points(("a", "b"))

    def step(b_score):
        def model_step(mine, *_a, **_k):
            if mine[0].model == "a":
                return (Pick("design", mine[0].key, [mine[0].hashes[0]], "a: space-filling before a stop with no "
                             "answer", None, 0.006, "a", True, 2), [], None, "")
            if b_score is None:
                return Pick("check", mine[0].key, [mine[0].hashes[0]], "b: check", 0.001, None, "b"), [], None, ""
            return (Pick("explore", mine[0].key, [mine[0].hashes[0]], "b: explore", b_score, b_score, "b", False, 2),
                    [], None, "")
        return model_step

    monkeypatch.setattr(decide_module, "_model_step", step(0.2))
    d = decide(points, {}, GOAL, budget_left=10)
    assert d.pick is not None and d.pick.model == "b", d.pick
    monkeypatch.setattr(decide_module, "_model_step", step(0.03))
    d = decide(points, {}, GOAL, budget_left=10)
    assert d.stop is None and d.pick is not None and (d.pick.model, d.pick.phase) == ("a", "design"), (d.stop, d.pick)
    monkeypatch.setattr(decide_module, "_model_step", step(None))  # b: a check before its stop
    d = decide(points, {}, GOAL, budget_left=10)
    assert d.pick is not None and (d.pick.model, d.pick.phase) == ("b", "check"), d.pick


def test_only_a_search_with_no_answer_takes_the_design_before_its_stop(monkeypatch):
    """The same state (the landscape's 5 seeds measured: short of its design's 6) with every candidate's P set to
    1e-6: with a limit nothing meets, the next pick is the design row before a stop with no answer; with a limit
    the seeds meet, the search never takes that row (it checks a level or stops)."""
    pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")
    from search_landscape import point_of

    points, rows = grid()
    po = point_of(points)
    none = Goal("best", "throughput", Limits(slo_ms=0.1, percentile="p90"))
    some = Goal("best", "throughput", Limits(slo_ms=100.0, percentile="p90"))
    measured: dict = {}
    while (d := decide(points, measured, none, budget_left=90, surrogate="loglinear", point_of=po)).pick.phase \
            == "seed":
        measured.update({h: rows[h] for h in d.pick.hashes})
    assert len(measured) == 5 and len({p.categories["precision"] for p in points if p.hashes[0] in measured}) == 3
    monkeypatch.setattr(decide_module, "_p_change", lambda *_a, **_k: (1e-6, 1e-6))
    d = decide(points, measured, none, budget_left=90, surrogate="loglinear", point_of=po)
    assert d.pick is not None and d.pick.phase == "design", (d.stop, d.pick)
    assert "space-filling before a stop with no answer" in d.pick.why and "5 of 6 configurations" in d.pick.why
    d = decide(points, measured, some, budget_left=90, surrogate="loglinear", point_of=po)
    assert d.pick is None or "before a stop with no answer" not in d.pick.why, d.pick
    assert d.pick is not None or "no answer" not in (d.stop or ""), d.stop


def test_a_front_never_takes_the_design_before_a_stop_with_no_answer():
    pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")
    points, rows = grid()
    final, picks, _got = replay(points, rows.__getitem__, Goal("pareto"), surrogate="loglinear")
    assert final.stop is not None and final.stop.startswith("settled"), final.stop
    assert not [why for _ph, _k, _h, why in picks if "before a stop with no answer" in why], picks


def test_the_threshold_of_a_stop_with_no_answer_is_at_most_that_of_one_with_an_answer():
    with pytest.raises(ValueError, match="no_answer_min_prob 0.2"):
        decide(_points(), {}, GOAL, budget_left=10, no_answer_min_prob=0.2)


def test_a_search_with_no_answer_to_find_stops_below_the_stricter_threshold(monkeypatch):
    """Nothing on the landscape is that fast (its quickest row, int8 b1 1x, is 0.74 ms): the search measures until
    the candidates together are less than 1% likely to meet the limit; with the threshold of a stop with an answer
    (NO_ANSWER_SHARE 1; the design before a stop with no answer stays on, and is done here by then) it stops
    sooner, on a P between the two."""
    pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")
    points, rows = grid()
    impossible = Goal("best", "throughput", Limits(slo_ms=0.7, percentile="p90"))
    assert all(r["latency_ms_p90"] > 0.7 for r in rows.values())  # the truth: no answer
    final, _picks, strict = replay(points, rows.__getitem__, impossible, surrogate="loglinear")
    assert final.stop is not None and "no answer" in final.stop, final.stop
    got = re.search(r"P\(any meets every limit\) = ([0-9.]+) < ([0-9.]+)", final.stop)
    assert got is not None and float(got.group(1)) < 0.01 and got.group(2) == "0.01", final.stop
    monkeypatch.setattr(decide_module, "NO_ANSWER_SHARE", 1.0)
    final, _picks, loose = replay(points, rows.__getitem__, impossible, surrogate="loglinear")
    got = re.search(r"P\(any meets every limit\) = ([0-9.]+) < 0.05", final.stop or "")
    assert got is not None and float(got.group(1)) >= 0.01, final.stop
    assert 3 < len(loose) < len(strict)


def test_a_stop_with_no_answer_waits_for_the_design_on_the_stored_h200_grid():
    """The stored H200 instances grid, best throughput with p95 <= 4.52 ms and power <= 205 W (a tight set drawn for
    docs/results/search/no-answer-stop), gp, search seed 3. Its seeds are torch fp16 b1 4x, ort fp32 b64 2x and torch
    amp b64 2x: two with a p95 (8.7 and 15.3 ms, over the SLO) and one with none (it draws 537 W, over the
    cap). The latency fit then put nearly every other configuration at 11.5 [6.6, 20.1] ms: P(some candidate meets
    every limit) = 0.006, and the search stopped with no answer after 3 rows. Before a stop with no answer the
    design is finished now; its first row shows the fit what a b1 configuration costs, and the search answers ort
    fp16 b1 4x (4.5 ms), the grid's answer."""
    pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")
    from search_landscape import answer_keys, stored_grid

    from edgebench.search.design import effective_features

    results = Path(__file__).resolve().parents[2] / "docs" / "results"
    points, rows = stored_grid(results / "h200" / "instgrid-results.csv")
    goal = Goal("best", "throughput", Limits(slo_ms=4.52, percentile="p95", power_cap_w=205.0))
    final, picks, got = replay(points, rows.__getitem__, goal, seed=3, surrogate="gp")
    assert [ph for ph, *_ in picks[:3]] == ["seed"] * 3
    phase, _key, _hashes, why = picks[3]
    assert phase == "design" and "space-filling before a stop with no answer" in why, picks[3]
    assert float(re.search(r"P\(some candidate meets every limit\) = ([0-9.]+)", why).group(1)) < 0.01
    assert f"3 of {effective_features(points, Encoder(points)) + DESIGN_EXTRA} configurations" in why
    (truth,) = answer_keys(goal, rows.values(), points)
    assert answer_keys(goal, got.values(), points) == (truth,)
    assert next(p.label for p in points if p.key == truth).startswith("ort fp16 b1 4x")
    assert final.stop is not None and "no answer" not in final.stop, final.stop
