"""search.decide does not stop while an unmeasured configuration could change the answer (issue 36):

- on the stored H100 grid (docs/results/h100/grid-results.csv), the best throughput with p90 <= 6 ms and power <=
  300 W: the three seeds' p90 are all 6.7-7.1 ms, a Gaussian process fitted on them predicts ~6.7 ms everywhere and
  the search used to stop there with no answer; it now measures every precision and a space-filling design until
  the surrogate can tell configurations apart, and finds the grid's answer;
- on the stored H200 ORT grid, the lowest energy with p90 <= 8 ms: the search used to answer tf32 b32 (91 mJ)
  with fp16 never measured; fp16 b32 (62 mJ) is the grid's answer;
- on a small synthetic grid with more precisions than seeds, the precision the seeds missed is measured before
  anything else (a corner such as fp16 is never left unmeasured by accident), a fit that cannot tell
  configurations apart is not trusted, a configuration one of whose repeats missed a limit is no candidate, and
  the stop line says only what holds (no "every planned repeat" without an answer).

The stored-grid replays use the Gaussian process (the failures were its); each takes a second or two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from search_landscape import answer_keys, point_of, replay, stored_grid

from edgebench.answer.best import Limits
from edgebench.answer.candidates import IDENTITY
from edgebench.search.decide import decide
from edgebench.search.goal import Goal
from edgebench.search.space import SearchPoint, make_point

pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


def labels(points: list[SearchPoint], keys) -> list[str]:
    by_key = {p.key: p.label for p in points}
    return [by_key[k] for k in keys]


H100_SLO = Goal("best", "throughput", Limits(slo_ms=6.0, percentile="p90", power_cap_w=300.0))


@pytest.fixture(scope="module")
def h100():
    return stored_grid(RESULTS / "h100" / "grid-results.csv")


def test_three_similar_seeds_do_not_stop_the_search_with_no_answer(h100):
    points, rows = h100
    (truth,) = answer_keys(H100_SLO, rows.values(), points)
    assert labels(points, [truth]) == ["torch tf32 b8 cuda:0"]
    # the state the search used to stop in: its three seeds measured, each p90 in 6.7-7.1 ms
    po = point_of(points)
    measured: dict[str, dict[str, Any]] = {}
    for _ in range(3):
        d = decide(points, measured, H100_SLO, budget_left=84, seed=1, surrogate="gp", point_of=po)
        assert d.pick is not None and d.pick.phase == "seed"
        measured.update({h: rows[h] for h in d.pick.hashes})
    assert all(6.6 < rows[h]["latency_ms_p90"] < 7.2 for h in measured)
    d = decide(points, measured, H100_SLO, budget_left=81, seed=1, surrogate="gp", point_of=po)
    assert d.pick is not None and d.stop is None
    assert d.pick.phase == "design", d.pick  # the precision the seeds missed (amp), then a space-filling design
    final, picks, got = replay(points, rows.__getitem__, H100_SLO, seed=1, surrogate="gp")
    assert len(got) > 3
    assert answer_keys(H100_SLO, got.values(), points) == (truth,), final.stop
    assert final.stop is not None and final.stop.startswith("settled") and "no answer" not in final.stop
    measured_precisions = {p.categories["precision"] for p in points if set(p.hashes) & set(got)}
    assert measured_precisions == {"fp32", "tf32", "fp16", "amp"}


def test_the_fp16_corner_of_the_h200_ort_grid_is_measured_for_the_lowest_energy():
    points, rows = stored_grid(RESULTS / "h200" / "ortgrid-results.csv")
    goal = Goal("best", "energy", Limits(slo_ms=8.0, percentile="p90"))
    (truth,) = answer_keys(goal, rows.values(), points)
    assert labels(points, [truth]) == ["ort fp16 b32 cuda:0"]
    final, picks, got = replay(points, rows.__getitem__, goal, seed=0, surrogate="gp")
    assert any(p.categories["precision"] == "fp16" and set(p.hashes) & set(got) for p in points)
    assert answer_keys(goal, got.values(), points) == (truth,), final.stop


# ------------------------------------------------------------------ a small synthetic grid: 4 precisions, 3 seeds

SPEED = {"fp32": 1.0, "tf32": 1.5, "fp16": 2.5, "amp": 2.2}
BATCHES = (1, 2, 4, 8, 16, 32, 64)


def small_grid(latency=None) -> tuple[list[SearchPoint], dict[str, dict[str, Any]]]:
    """28 configurations (4 precisions x 7 batches), 2 repeats each; latency per batch rises with batch and falls
    with a faster precision (fp16 fastest), throughput = batch / latency."""
    points, rows = [], {}
    for precision, k in SPEED.items():
        for batch in BATCHES:
            i = len(points)
            fields = {"model": "net", "backend": "null", "precision": precision, "batch": batch, "instances": 1,
                      "mode": "process", "placement": "cpu"}
            hashes = [f"s{i}r{j}" for j in range(2)]
            points.append(make_point(fields, hashes))
            for j, h in enumerate(hashes):
                lat = latency(precision, batch) if latency else 2.0 * (1 + batch / 8) / k
                lat *= 1.01 if j else 0.99
                row = {c: None for c in IDENTITY}
                row.update(fields)
                row.update({"config_hash": h, "repeat": j, "status": "ok", "reason": "", "latency_ms_p90": lat,
                            "throughput_ips": batch * 1000.0 / lat})
                rows[h] = row
    return points, rows


def test_a_precision_the_seeds_missed_is_measured_before_the_model_is_trusted():
    points, rows = small_grid()
    goal = Goal("best", "throughput", Limits(slo_ms=3.0, percentile="p90"))
    final, picks, got = replay(points, rows.__getitem__, goal, seed=0, surrogate="loglinear")
    seeds = [k for ph, k, _h, _w in picks if ph == "seed"]
    assert len(seeds) == 3
    seeded = {p.categories["precision"] for p in points if p.key in seeds}
    assert len(seeded) < 4  # three seeds cannot cover four precisions
    first = picks[3]
    assert first[0] == "design" and "precision" in first[3] and "no configuration measured yet" in first[3], first
    measured_precisions = {p.categories["precision"] for p in points if set(p.hashes) & set(got)}
    assert measured_precisions == set(SPEED)
    assert answer_keys(goal, got.values(), points) == answer_keys(goal, rows.values(), points)


def test_a_fit_that_cannot_tell_configurations_apart_is_not_trusted():
    """Every configuration at the same latency (over the limit) and throughput: the surrogate's predictions are
    flat, so after the seeds and the missed precision the search measures a space-filling design (effective
    features + DESIGN_EXTRA configurations: log2 batch, 3 of the 4 precisions, + 2) before it may conclude that
    nothing meets the limit."""
    from edgebench.search.decide import DESIGN_EXTRA

    points, rows = small_grid(latency=lambda precision, batch: 5.0)
    flat = {h: {**r, "throughput_ips": 800.0} for h, r in rows.items()}
    goal = Goal("best", "throughput", Limits(slo_ms=4.0, percentile="p90"))
    final, picks, got = replay(points, flat.__getitem__, goal, seed=0, surrogate="gp")
    untrusted = [why for ph, _k, _h, why in picks if ph == "design" and "cannot tell configurations apart" in why]
    assert untrusted, picks
    assert "predictions within" in untrusted[0] or "flat along" in untrusted[0], untrusted[0]
    tried = {p.key for p in points if set(p.hashes) & set(got)}
    assert len(tried) >= 1 + 3 + DESIGN_EXTRA
    assert final.stop is not None and "no answer" in final.stop, final.stop


def test_a_configuration_whose_repeat_missed_a_limit_is_no_candidate():
    """A measured violation is a violation (answer.best): a configuration whose invalid repeat broke the SLO can
    never meet it, so its next repeat is never measured."""
    points, rows = small_grid()
    goal = Goal("best", "throughput", Limits(slo_ms=3.0, percentile="p90"))
    (truth,) = answer_keys(goal, rows.values(), points)
    best = next(p for p in points if p.key == truth)
    over = {**rows[best.hashes[0]], "status": "invalid", "reason": "throughput unstable", "latency_ms_p90": 3.5}
    final, picks, got = replay(points, rows.__getitem__, goal, seed=0, surrogate="loglinear",
                               measured={best.hashes[0]: over})
    assert best.hashes[1] not in got
    assert all(key != truth for _ph, key, _h, _w in picks)
    assert answer_keys(goal, got.values(), points) != (truth,)


def test_with_no_answer_the_stop_line_says_so_and_claims_no_repeats():
    points, rows = small_grid()
    goal = Goal("best", "throughput", Limits(slo_ms=0.01, percentile="p90"))  # nothing is that fast
    final, picks, got = replay(points, rows.__getitem__, goal, seed=0, surrogate="loglinear")
    assert final.stop is not None and "no answer" in final.stop, final.stop
    assert "planned repeat" not in final.stop and "the answer's configurations" not in final.stop
    assert "P(any meets every limit) = " in final.stop
    assert len(got) > 3  # not the seeds alone
