"""search.decide on a known landscape (tests/search/search_landscape.py): the seeds come first and are spread, the
budget stops it, a replay finds the full grid's answer (best under a latency limit; the throughput-latency front)
from fewer rows than the grid and measures the answer with every planned repeat, failed points are never measured
again while invalid-only ones may be, both surrogates run, and the seed fixes the sequence.

Pure: no file, no process. The replays use the Bayesian-ridge surrogate where the kind does not matter (it fits in
milliseconds; the Gaussian process takes seconds per replay on a loaded 2-core box)."""

from __future__ import annotations

import math

import pytest
from search_landscape import BATCHES, REPEATS, answer_keys, fields_of, grid, latency_ms, point_of, replay

from edgebench.answer.best import Limits
from edgebench.search.decide import MIN_SEEDS, SEED_SHARE, decide
from edgebench.search.goal import Goal, current_answer
from edgebench.search.space import make_point

pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")

SLO_MS = 2.38  # p90: int8 b8 4x (2.33 ms) meets it on both repeats, the next (2.43 ms, 1% noise) does not
BEST = Goal("best", "throughput", Limits(slo_ms=SLO_MS, percentile="p90"))
PARETO = Goal("pareto")


@pytest.fixture(scope="module")
def landscape():
    return grid()


def label_of(points, key: str) -> str:
    return next(p.label for p in points if p.key == key)


def test_the_landscape_has_one_clear_best_under_the_limit(landscape):
    """The premise of the replays: the limit binds (the unlimited best is another configuration), no configuration's
    latency is within its run-to-run noise of the bound, and the best is int8 b8 4x."""
    points, rows = landscape
    assert len(points) == 45 and len(rows) == 90
    for p in points:
        lat = latency_ms(p.categories["precision"], p.batch, p.instances)
        assert abs(lat - SLO_MS) / SLO_MS > 0.015, p.label
    (best,) = answer_keys(BEST, rows.values(), points)
    assert label_of(points, best) == "null int8 b8 4x cpu"
    (unlimited,) = answer_keys(Goal("best", "throughput", Limits(percentile="p90")), rows.values(), points)
    assert label_of(points, unlimited) == "null int8 b16 4x cpu"


def test_the_first_picks_are_distinct_spread_seeds(landscape):
    points, rows = landscape
    n_seeds = max(MIN_SEEDS, math.ceil(SEED_SHARE * len(points)))
    measured: dict = {}
    seeds = []
    for _ in range(n_seeds):
        d = decide(points, measured, BEST, budget_left=90, seed=0, surrogate="loglinear")
        assert d.pick is not None and d.pick.phase == "seed", d.pick
        assert len(d.pick.hashes) == 1 and d.pick.hashes[0].endswith("r0")  # one row each, its first repeat
        seeds.append(next(p for p in points if p.key == d.pick.key))
        measured[d.pick.hashes[0]] = rows[d.pick.hashes[0]]
    assert len({s.key for s in seeds}) == n_seeds
    assert len({s.categories["precision"] for s in seeds}) >= 2
    assert {s.batch for s in seeds} >= {min(BATCHES), max(BATCHES)}  # maximin reaches both ends of the batch axis
    assert len({s.instances for s in seeds}) >= 2
    d = decide(points, measured, BEST, budget_left=90, seed=0, surrogate="loglinear")
    assert d.pick is not None and d.pick.phase != "seed"  # the seeds are done: the model picks now


def test_a_spent_budget_stops_the_search(landscape):
    points, rows = landscape
    d = decide(points, {}, BEST, budget_left=0, seed=0, surrogate="loglinear")
    assert d.pick is None and d.stop == "budget spent"
    assert len(d.predictions) == len(points) and {p.state for p in d.predictions} == {"predicted"}
    final, picks, measured = replay(points, rows.__getitem__, BEST, surrogate="loglinear", budget=5)
    assert final.stop == "budget spent" and len(measured) == 5 and len(picks) == 5


@pytest.mark.parametrize("surrogate", ["gp", "loglinear"])
def test_replay_finds_the_best_under_the_limit_from_a_fraction_of_the_grid(landscape, surrogate):
    points, rows = landscape
    final, picks, measured = replay(points, rows.__getitem__, BEST, surrogate=surrogate)
    (truth,) = answer_keys(BEST, rows.values(), points)
    assert final.stop is not None and final.stop.startswith("settled"), final.stop
    assert answer_keys(BEST, measured.values(), points) == (truth,)
    assert len(measured) <= len(rows) // 3, f"{len(measured)} of {len(rows)} rows"
    # the answer is measured with every planned repeat: the best and the runner-up
    (state,) = final.answers.values()
    assert state.answer_keys[0] == truth and len(state.answer_keys) == 2
    by_key = {p.key: p for p in points}
    for key in state.answer_keys:
        assert set(by_key[key].hashes) <= set(measured), label_of(points, key)
    assert [ph for ph, _k, _h, _w in picks][:5] == ["seed"] * 5
    assert {ph for ph, _k, _h, _w in picks} <= {"seed", "design", "explore", "confirm"}
    explored = [why for ph, _k, _h, why in picks if ph == "explore"]
    assert explored and all(why.count("P(changes the answer) = ") == 1 for why in explored), explored
    assert any(why.split(": ")[1].startswith("not measured yet, ") for why in explored), explored
    # what was not measured is predicted, with a 95% interval around each metric the answer reads
    preds = {p.key: p for p in final.predictions}
    assert preds[truth].state == "measured" and preds[truth].rows_usable == REPEATS
    unmeasured = [p for p in final.predictions if p.state == "predicted"]
    assert len(unmeasured) == len(points) - len({point_of(points)[h] for h in measured})
    for p in unmeasured:
        for col in ("throughput_ips", "latency_ms_p90"):
            mean, lo, hi = p.metrics[col]
            assert 0 < lo <= mean <= hi, (p.label, col, p.metrics[col])


def test_the_confirm_phase_measures_the_answers_missing_repeats(landscape):
    """Every point measured once and nothing worth exploring (explore_min_prob 0.99): the pick is the best's missing
    repeat, in the confirm phase."""
    points, rows = landscape
    measured = {p.hashes[0]: rows[p.hashes[0]] for p in points}
    d = decide(points, measured, BEST, budget_left=90, seed=0, surrogate="loglinear", explore_min_prob=0.99)
    (truth,) = answer_keys(BEST, rows.values(), points)
    assert d.pick is not None and d.pick.phase == "confirm" and d.pick.key == truth
    assert d.pick.hashes == [next(p for p in points if p.key == truth).hashes[1]]
    # a budget of one row cuts a pick to one row
    d1 = decide(points, {}, BEST, budget_left=1, seed=0, surrogate="loglinear")
    assert d1.pick is not None and len(d1.pick.hashes) == 1


def test_a_point_whose_row_failed_is_never_picked_again(landscape):
    """The true best's first repeat failed: its second is never measured, it stays 'failed', and the answer is the
    best of the others."""
    points, rows = landscape
    (truth,) = answer_keys(BEST, rows.values(), points)
    best = next(p for p in points if p.key == truth)
    failed = {**rows[best.hashes[0]], "status": "failed", "reason": "worker died", "throughput_ips": None,
              "latency_ms_p90": None, "latency_ms_p50": None}
    final, picks, measured = replay(points, rows.__getitem__, BEST, surrogate="loglinear",
                                    measured={best.hashes[0]: failed})
    assert best.hashes[1] not in measured
    assert all(key != truth for _ph, key, _h, _w in picks)
    assert next(p for p in final.predictions if p.key == truth).state == "failed"
    others = [r for h, r in rows.items() if h not in best.hashes]
    assert answer_keys(BEST, measured.values(), points) == answer_keys(BEST, others, points)


def test_a_point_with_only_an_invalid_row_can_be_picked_for_its_next_repeat(landscape):
    """The true best's first repeat was invalid: it stays a candidate, its second repeat is measured and it is the
    answer (with the invalid row and the valid one)."""
    points, rows = landscape
    (truth,) = answer_keys(BEST, rows.values(), points)
    best = next(p for p in points if p.key == truth)
    invalid = {**rows[best.hashes[0]], "status": "invalid", "reason": "throughput unstable"}
    first = decide(points, {best.hashes[0]: invalid}, BEST, budget_left=90, seed=0, surrogate="loglinear")
    assert next(p for p in first.predictions if p.key == truth).state == "invalid only"
    final, picks, measured = replay(points, rows.__getitem__, BEST, surrogate="loglinear",
                                    measured={best.hashes[0]: invalid})
    assert best.hashes[1] in measured
    (again,) = [(ph, hs, why) for ph, key, hs, why in picks if key == truth]
    assert again[1] == [best.hashes[1]]
    assert again[0] == "confirm" or "the next repeat (its rows so far are invalid)" in again[2], again
    assert answer_keys(BEST, measured.values(), points) == (truth,)


def test_replay_finds_the_throughput_latency_front(landscape):
    points, rows = landscape
    truth = answer_keys(PARETO, rows.values(), points)
    assert len(truth) >= 5  # a front with several members, all int8 (it is faster in both objectives)
    assert {label_of(points, k).split()[1] for k in truth} == {"int8"}
    final, picks, measured = replay(points, rows.__getitem__, PARETO, surrogate="loglinear")
    assert final.stop is not None and final.stop.startswith("settled"), final.stop
    assert answer_keys(PARETO, measured.values(), points) == truth
    assert len(measured) < len(rows) * 0.6, f"{len(measured)} of {len(rows)} rows"
    (state,) = final.answers.values()
    assert [c for c, _h in state.objectives] == ["throughput_ips", "latency_ms_p90"]  # no power: two objectives
    by_key = {p.key: p for p in points}
    for key in truth:  # every member measured with every planned repeat
        assert set(by_key[key].hashes) <= set(measured), label_of(points, key)


def test_the_same_seed_gives_the_same_picks_and_another_seed_another_first_seed(landscape):
    points, rows = landscape
    _d, picks_a, _m = replay(points, rows.__getitem__, BEST, seed=0, surrogate="loglinear")
    _d, picks_b, _m = replay(points, rows.__getitem__, BEST, seed=0, surrogate="loglinear")
    assert picks_a == picks_b
    firsts = {decide(points, {}, BEST, budget_left=90, seed=s, surrogate="loglinear").pick.key for s in range(3)}
    assert len(firsts) == 3
    _d, picks_c, _m = replay(points, rows.__getitem__, BEST, seed=1, surrogate="loglinear")
    assert picks_c[0][1] != picks_a[0][1]


def test_a_limit_column_empty_in_every_usable_row_stops_after_the_seeds(landscape):
    """Windows too short for the limit's percentile: no row can meet the limit and more rows like them would not
    fill it, so the search stops after its seeds and says which column and why, instead of measuring the grid."""
    points, rows = landscape
    short = {h: {**r, "latency_ms_p90": None,
                 "empty_reasons": "latency_ms_p90: 40 inferences in the window, p90 needs 64"} for h, r in rows.items()}
    final, picks, measured = replay(points, short.__getitem__, BEST, surrogate="loglinear")
    n_seeds = max(MIN_SEEDS, math.ceil(SEED_SHARE * len(points)))
    assert [ph for ph, _k, _h, _w in picks] == ["seed"] * n_seeds and len(measured) == n_seeds
    assert final.stop is not None and final.stop.startswith("cannot answer for net: latency_ms_p90 is empty in "
                                                            f"every usable row measured ({n_seeds}; e.g. "), final.stop
    assert "40 inferences in the window, p90 needs 64" in final.stop and "--slo-percentile" in final.stop
    # the unlimited objective needs no latency: the same rows answer it, and the search goes on past its seeds
    d = decide(points, measured, Goal("best", "throughput", Limits(percentile="p90")), budget_left=90,
               surrogate="loglinear")
    assert d.pick is not None and d.pick.phase == "explore"


def test_each_model_gets_its_own_seeds_and_answer(landscape):
    """Two models (the second twice as slow): the search seeds and answers each; the picks cover both."""
    points, rows = landscape
    slow_points, slow_rows = [], {}
    for p in points:
        hashes = ["g" + h[1:] for h in p.hashes]
        slow_points.append(make_point({**fields_of(p.categories["precision"], p.batch, p.instances),
                                       "model": "slow"}, hashes))
        for h, g in zip(p.hashes, hashes):
            slow_rows[g] = {**rows[h], "model": "slow", "config_hash": g,
                            "latency_ms_p90": rows[h]["latency_ms_p90"] * 2, "throughput_ips": rows[h]["throughput_ips"] / 2}
    both, both_rows = points + slow_points, {**rows, **slow_rows}
    truth = current_answer(BEST, list(both_rows.values()), point_of(both))
    assert label_of(both, truth["slow"].answer_keys[0]) == "null int8 b4 cpu"  # the limit binds differently
    final, picks, measured = replay(both, both_rows.__getitem__, BEST, surrogate="loglinear")
    got = current_answer(BEST, list(measured.values()), point_of(both))
    assert {m: s.answer_keys[0] for m, s in got.items()} == {m: s.answer_keys[0] for m, s in truth.items()}
    assert {k[0] for ph, k, _h, _w in picks if ph == "seed"} == {"h", "g"}
    assert len(measured) < len(both_rows) // 3


def test_a_budget_no_larger_than_the_answers_missing_repeats_confirms_instead_of_exploring(landscape):
    """Every point measured once except a few left to explore: with rows to spare the search explores (P is high
    with explore_min_prob tiny); with only as many rows left as the answer still lacks, it confirms the answer."""
    points, rows = landscape
    seeds: set[str] = set()
    picked: dict = {}
    while (d := decide(points, picked, BEST, budget_left=90, seed=0, surrogate="loglinear")).pick is not None \
            and d.pick.phase == "seed":
        seeds.add(d.pick.key)
        picked.update({h: rows[h] for h in d.pick.hashes})
    # three non-seed points near the answer (int8, the fastest) stay unmeasured: one of them could still change it
    left_open = [p for p in points if p.key not in seeds and p.categories["precision"] == "int8"][-3:]
    measured = {p.hashes[0]: rows[p.hashes[0]] for p in points if p not in left_open}
    spare = decide(points, measured, BEST, budget_left=50, seed=0, surrogate="loglinear", explore_min_prob=1e-9)
    assert spare.pick is not None and spare.pick.phase == "explore"
    state = spare.answers["net"]
    need = sum(REPEATS - 1 for _ in state.answer_keys)  # each answer configuration has 1 of REPEATS rows
    tight = decide(points, measured, BEST, budget_left=need, seed=0, surrogate="loglinear", explore_min_prob=1e-9)
    assert tight.pick is not None and tight.pick.phase == "confirm"
    assert tight.pick.key in state.answer_keys


# ------------------------------------------------------------- Pareto: what changes a front, and what only ties it

def _pareto_case(front: tuple[float, float], far: tuple[float, float], predicted: tuple[float, float], sd: float):
    from search_landscape import fields_of

    from edgebench.search.goal import ModelState

    p = make_point(fields_of("fp16", 4, 1), ["x0", "x1", "x2"])
    metrics = [("throughput_ips", True), ("latency_ms_p90", False)]
    state = ModelState("net", metrics, answer_keys=["member"], front=[front], front_far=[far])
    normals = {"throughput_ips": {p.key: (math.log(predicted[0]), sd)},
               "latency_ms_p90": {p.key: (math.log(predicted[1]), sd)}}
    return p, state, normals, metrics


def test_a_configuration_inside_a_members_intervals_ties_with_the_front_rather_than_changing_it():
    from edgebench.search.decide import _p_not_dominated

    # predicted faster and quicker than the member's medians, but not past the far ends of its intervals
    p, state, normals, metrics = _pareto_case((1000.0, 10.0), (1100.0, 9.0), (1050.0, 9.5), sd=0.005)
    assert _p_not_dominated(p, state, normals, metrics) < 0.05
    state.front_far = list(state.front)  # judged against the medians alone it would change the front
    assert _p_not_dominated(p, state, normals, metrics) > 0.95


def test_another_repeat_is_judged_by_the_rows_it_would_join_not_by_one_draw():
    from edgebench.search.decide import _p_not_dominated

    # the surrogate gives the next row an even chance of escaping the member; the rows already measured sit far
    # behind it, so the worse end of their interval with that row stays dominated
    p, state, normals, metrics = _pareto_case((1000.0, 10.0), (1000.0, 10.0), (1000.0, 10.0), sd=0.05)
    alone = _p_not_dominated(p, state, normals, metrics)
    behind = [{"throughput_ips": 600.0, "latency_ms_p90": 16.0}, {"throughput_ips": 620.0, "latency_ms_p90": 15.0}]
    with_rows = _p_not_dominated(p, state, normals, metrics, behind)
    assert alone > 0.5
    assert with_rows < 0.05


def test_a_dominated_row_earns_no_repeat_however_likely_a_fast_next_draw():
    from edgebench.search.decide import _p_not_dominated

    # the member at (1000/s, 10 ms), its better end (1020/s, 9.8 ms); the configuration's one row (990/s, 10.2 ms)
    # is dominated; the surrogate puts its next row far ahead (1200/s, 8 ms): its median with that row would escape,
    # the worse end of the two rows (its own) cannot, so no repeat of it can settle it on the front
    p, state, normals, metrics = _pareto_case((1000.0, 10.0), (1020.0, 9.8), (1200.0, 8.0), sd=0.02)
    row = [{"throughput_ips": 990.0, "latency_ms_p90": 10.2}]
    assert _p_not_dominated(p, state, normals, metrics, row) == 0.0
    # not yet measured, the same prediction is a change: its one row would be the worse end
    assert _p_not_dominated(p, state, normals, metrics) > 0.95


def test_a_configuration_that_would_settle_a_member_off_the_front_is_a_change_though_another_dominates_it():
    from edgebench.search.decide import _p_not_dominated
    from edgebench.search.goal import ModelState

    # m1's better end (110/s, 9.7 ms) dominates the candidate (106/s, 9.75 ms), which dominates m2's better end
    # (104/s, 9.8 ms): the full grid would settle m2 off the front, so measuring the candidate can change it
    p, _state, normals, metrics = _pareto_case((105.0, 10.0), (110.0, 9.7), (106.0, 9.75), sd=0.001)
    state = ModelState("net", metrics, answer_keys=["m1", "m2"], front=[(105.0, 10.0), (104.0, 9.8)],
                       front_far=[(110.0, 9.7), (104.0, 9.8)])
    assert _p_not_dominated(p, state, normals, metrics) > 0.95
    state.front_far = state.front_far[:1]  # m1 alone: the candidate is dominated and changes nothing
    assert _p_not_dominated(p, state, normals, metrics) < 0.05


def test_the_front_state_holds_each_members_better_interval_end(landscape):
    points, rows = landscape
    (state,) = current_answer(PARETO, list(rows.values()), point_of(points)).values()
    assert [c for c, _h in state.objectives] == ["throughput_ips", "latency_ms_p90"]
    assert len(state.front_far) == len(state.front) == len(state.answer_keys) >= 5
    for (tput, lat), (tput_far, lat_far) in zip(state.front, state.front_far):
        # two repeats 1% either side of the landscape: the far end is the better repeat, not the median
        assert tput_far > tput and lat_far < lat
        assert tput_far == pytest.approx(tput * 1.01, rel=1e-3)


def test_predictions_widen_the_intervals_of_unmeasured_configurations_only(landscape, monkeypatch):
    """What predictions.csv and the scores read: with the surrogates' cross-validated scale forced to 3 instead of
    1, every measured configuration keeps its interval and every unmeasured one gets a wider one (3x its spread,
    in the modelled space, unless a floor is wider still)."""
    import edgebench.search.surrogate as surrogate

    points, rows = landscape
    measured = {h: rows[h] for p in points[::4] for h in p.hashes}  # every 4th configuration, both repeats

    def predictions(scale: float):
        monkeypatch.setattr(surrogate, "cv_scale", lambda *a, **k: scale)
        d = decide(points, measured, BEST, budget_left=90, seed=0, surrogate="loglinear")
        return {p.key: p for p in d.predictions}

    one, three = predictions(1.0), predictions(3.0)
    states = {k: p.state for k, p in one.items()}
    assert set(states.values()) == {"measured", "predicted"}
    for key, p in one.items():
        for col, (mean, lo, hi) in p.metrics.items():
            mean3, lo3, hi3 = three[key].metrics[col]
            assert mean3 == pytest.approx(mean), (p.label, col)
            if states[key] == "measured":
                assert (lo3, hi3) == pytest.approx((lo, hi)), (p.label, col)
            else:
                assert math.log(hi3 / lo3) > 1.5 * math.log(hi / lo), (p.label, col, lo, hi, lo3, hi3)
