"""The check before a best-goal stop that rests on a predicted infeasibility (issue 54; edgebench.search.design.
decider, switched by decide.DECIDER_CHECK). On the H100 grid one outlier repeat of amp b64 (p90 10.15 ms; its
other repeats 7.68) put fp16 b64, never measured, at 11.2 [9.6, 13.0] ms with P(meets p90 <= 7.9 ms) = 5e-6, and 7
of 20 searches stopped on fp16 b32, 29% slower (fp16 b64's worst p90 is 7.896 ms). The rule measures such a
configuration before the stop, unless its own level's rows at a smaller batch already miss a limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from search_landscape import fields_of, stored_grid

from edgebench.answer.best import Limits
from edgebench.search.design import decider
from edgebench.search.goal import Goal
from edgebench.search.space import make_point

ROOT = Path(__file__).resolve().parents[2]
H100 = ROOT / "docs" / "results" / "h100" / "grid-results.csv"


def _points():
    return [make_point(fields_of(prec, b, 1), [f"{prec}{b}r0"]) for prec in ("fp32", "fp16") for b in (8, 16, 32)]


def test_the_configuration_whose_predicted_infeasibility_decides_is_measured_first():
    points = _points()
    key = {(p.categories["precision"], p.batch): p.key for p in points}
    status = {p.key: [] for p in points}
    status[key[("fp16", 16)]] = [{"status": "ok"}]  # measured, meets the limit
    candidates = [p for p in points if not status[p.key]]
    beats = {p.key: 0.0 for p in points} | {key[("fp16", 32)]: 0.6, key[("fp32", 32)]: 0.3, key[("fp32", 16)]: 0.9}
    feasible = {p.key: 0.001 for p in points} | {key[("fp32", 16)]: 0.7}  # fp32 b16: predicted feasible

    def misses(p):
        return False

    got = decider(points, status, candidates, beats, feasible, 0.05, misses)
    assert got is not None and got.key == key[("fp16", 32)]  # the likeliest to beat among the predicted infeasible
    # fp16 b16, the next smaller batch of its level, misses a limit: latency grows with batch, so b32 does too
    got = decider(points, status, candidates, beats, feasible, 0.05, lambda p: p.key == key[("fp16", 16)])
    assert got is not None and got.key == key[("fp32", 32)]
    # a miss two steps down (fp16 b8; b16 unmeasured) says little on a rough grid: fp16 b32 is still measured
    status[key[("fp16", 8)]] = [{"status": "invalid"}]
    got = decider(points, status, candidates, beats, feasible, 0.05, lambda p: p.key == key[("fp16", 8)])
    assert got is not None and got.key == key[("fp16", 32)]
    status[key[("fp16", 8)]] = []
    # below explore_min_prob even if it met every limit: not a decider
    assert decider(points, status, candidates, beats | {key[("fp16", 32)]: 0.01, key[("fp32", 32)]: 0.04},
                   feasible, 0.05, misses) is None
    # measured already (any status): not asked again
    status[key[("fp16", 32)]] = [{"status": "invalid"}]
    got = decider(points, status, [p for p in candidates if p.key != key[("fp16", 32)]], beats, feasible, 0.05, misses)
    assert got is not None and got.key == key[("fp32", 32)]


def test_the_frontier_form_checks_only_above_a_measured_configuration_that_meets_the_limits():
    """frontier=True: a decider is measured only where its level's next smaller batch was measured (ok or invalid)
    and misses no limit: there the level's own rows contradict the predicted infeasibility. A level whose next
    smaller batch is unmeasured is left to the model."""
    points = _points()
    key = {(p.categories["precision"], p.batch): p.key for p in points}
    status = {p.key: [] for p in points}
    candidates = [p for p in points if not status[p.key]]
    beats = {p.key: 0.0 for p in points} | {key[("fp16", 32)]: 0.6, key[("fp32", 32)]: 0.3}
    feasible = {p.key: 0.001 for p in points}

    def misses(p):
        return False

    assert decider(points, status, candidates, beats, feasible, 0.05, misses, frontier=True) is None
    status[key[("fp32", 16)]] = [{"status": "invalid"}]  # measured (an invalid row is a measured value), meets
    candidates = [p for p in points if not status[p.key]]
    got = decider(points, status, candidates, beats, feasible, 0.05, misses, frontier=True)
    assert got is not None and got.key == key[("fp32", 32)]
    status[key[("fp16", 16)]] = [{"status": "ok"}]
    candidates = [p for p in points if not status[p.key]]
    got = decider(points, status, candidates, beats, feasible, 0.05, misses, frontier=True)
    assert got is not None and got.key == key[("fp16", 32)]  # both levels qualify: the likelier to beat
    status[key[("fp16", 16)]] = [{"status": "failed"}]  # a failed row measured nothing
    candidates = [p for p in points if not status[p.key]]
    got = decider(points, status, candidates, beats, feasible, 0.05, misses, frontier=True)
    assert got is not None and got.key == key[("fp32", 32)]


@pytest.mark.slow
def test_the_issues_h100_searches_answer_fp16_b64_with_the_check():
    """Search seeds 3 and 1 of the issue's set (best throughput, p90 <= 7.9 ms) stop on fp16 b32 (29% off) and
    tf32 b32 (36% off) without the check, and answer fp16 b64 as the search ships (the frontier form)."""
    pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")
    from search_landscape import replay

    import edgebench.search.decide as decide_module

    assert decide_module.DECIDER_CHECK and decide_module.DECIDER_FRONTIER  # what ships
    points, rows = stored_grid(H100)
    goal = Goal("best", "throughput", Limits(slo_ms=7.9, percentile="p90"))
    label = {p.key: p.label for p in points}
    for seed, wrong in ((3, "torch fp16 b32 cuda:0"), (1, "torch tf32 b32 cuda:0")):
        final, picks, _m = replay(points, rows.__getitem__, goal, seed=seed)
        assert label[final.answers["resnet50"].answer_keys[0]] == "torch fp16 b64 cuda:0"
        assert any(phase == "check" and "predicted infeasibility" in why for phase, _k, _h, why in picks)
        decide_module.DECIDER_CHECK = False
        try:
            final, _picks, _m = replay(points, rows.__getitem__, goal, seed=seed)
        finally:
            decide_module.DECIDER_CHECK = True
        answer = label[final.answers["resnet50"].answer_keys[0]]
        if answer != wrong:  # replays differ by machine near ties
            pytest.skip(f"seed {seed} without the check answers {answer} on this machine, not the issue's miss "
                        f"({wrong}): the check is not shown to fix anything here")
