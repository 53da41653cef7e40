"""The search's stop line says only what holds (issue 36): "the answer's configurations have every planned repeat
measured" only when there is an answer and they have; with no answer it says there is none and how unlikely the
rest is to hold one; a configuration of the answer short of its repeats (a row failed) is named. Replays on the
known landscape (tests/search/search_landscape.py) with the Bayesian-ridge surrogate (milliseconds a fit)."""

from __future__ import annotations

import pytest
from search_landscape import grid, replay

from edgebench.answer.best import Limits
from edgebench.search.goal import Goal

pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")

BEST = Goal("best", "throughput", Limits(slo_ms=2.38, percentile="p90"))


def test_a_settled_answer_says_its_configurations_have_every_planned_repeat():
    points, rows = grid()
    final, _picks, measured = replay(points, rows.__getitem__, BEST, surrogate="loglinear")
    assert final.stop is not None and final.stop.startswith("settled: "), final.stop
    assert final.stop.endswith("and the answer's configurations have every planned repeat measured"), final.stop
    assert "P(any of the " in final.stop and " changes it) = " in final.stop
    assert "no answer" not in final.stop
    # the P is the surrogates' estimate, and the line says so (issue 54: not a measured error rate)
    assert "by the surrogates' estimate (P(any of the " in final.stop
    assert "a model's belief, not a measured error rate" in final.stop


def test_no_answer_is_said_and_no_repeats_are_claimed_even_when_everything_is_measured():
    """Nothing meets the limit: the stop names the missing answer, never its repeats, whether the search stops on
    P(any meets every limit) or (two configurations, both seeds) with every configuration measured."""
    points, rows = grid()
    impossible = Goal("best", "throughput", Limits(slo_ms=0.001, percentile="p90"))
    final, _picks, measured = replay(points, rows.__getitem__, impossible, surrogate="loglinear")
    assert final.stop is not None and "no answer: no measured configuration meets every limit" in final.stop
    assert "planned repeat" not in final.stop and "answer's configurations" not in final.stop
    small = points[:2]  # two configurations, both seeds: the other stop line
    sub = {h: rows[h] for p in small for h in p.hashes}
    final, _picks, measured = replay(small, sub.__getitem__, impossible, surrogate="loglinear")
    assert {h for p in small for h in p.hashes[:1]} <= set(measured)  # a repeat over the limit: no more of it
    assert final.stop == ("settled: every configuration is measured or exhausted; no answer: no measured "
                          "configuration meets every limit"), final.stop


def test_an_answer_configuration_cut_short_by_a_failed_row_is_named():
    """A failed row ends a configuration (it is not measured again): if it is in the answer with fewer rows than
    planned, the stop line says so instead of "every planned repeat"."""
    from search_landscape import fields_of

    from edgebench.search.decide import _repeats_text
    from edgebench.search.space import make_point

    p = make_point(fields_of("int8", 8, 4), ["a0", "a1", "a2"])
    ok = {"config_hash": "a0", "status": "ok"}
    assert _repeats_text([p.key], [p], {"a0": ok, "a1": {"config_hash": "a1", "status": "failed"}}) == (
        f"every planned repeat measured but {p.label} 2 of 3 (a row failed)")
    full = {h: {"config_hash": h, "status": "ok"} for h in p.hashes}
    assert _repeats_text([p.key], [p], full) == "every planned repeat measured"


def test_a_settled_front_says_what_counted_as_a_change_by_its_plan_of_repeats():
    """Pareto: with repeats planned, a change is one beyond the intervals of the repeats, and the stop says so;
    with one repeat planned there is no interval, and the stop says plainly that nothing left is likely to change
    the front."""
    from dataclasses import replace

    points, rows = grid()
    pareto = Goal("pareto")
    final, _picks, _measured = replay(points, rows.__getitem__, pareto, surrogate="loglinear")
    assert final.stop is not None and final.stop.startswith(
        "settled: no configuration left is likely to change the front beyond the intervals of the repeats by the "
        "surrogates' estimate (the most likely, "), final.stop
    single = [replace(p, hashes=p.hashes[:1]) for p in points]  # the same plan with one repeat each
    final, _picks, measured = replay(single, rows.__getitem__, pareto, surrogate="loglinear")
    assert final.stop is not None and final.stop.startswith(
        "settled: no configuration left is likely to change the front by the surrogates' estimate (the most "
        "likely, "), final.stop
    assert all(h.endswith("r0") for h in measured)
