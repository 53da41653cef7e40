"""Issue 54's score of a search's best answer (benchmarks/search_eval.score_best), the knife-edge draw
(draw_knife_edges) and the re-scoring of stored records (benchmarks/search_rescore.py), on planted grids whose
truth is known: an answer is right when it is the truth or its median lies inside the truth's repeat range
([min, max] of the truth's usable rows); at one repeat that range is a point; the old rank-test score ties any
answer at 1-2 repeats, this one does not."""

from __future__ import annotations

import random
from typing import Any

import pytest
from search_landscape import benchmark_module, fields_of, grid

from edgebench.answer.best import Limits
from edgebench.answer.candidates import IDENTITY
from edgebench.search.goal import Goal
from edgebench.search.space import make_point

BEST = Goal("best", "throughput", Limits(percentile="p90"))


def _grid(values: dict[str, list[float | None]], statuses: dict[str, list[str]] | None = None
          ) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """Points of one model (one per precision in `values`, batch 1) with these throughputs by repeat."""
    points, rows = [], {}
    for i, (precision, tps) in enumerate(values.items()):
        fields = fields_of(precision, 1, 1)
        hashes = [f"h{i}r{j}" for j in range(len(tps))]
        points.append(make_point(fields, hashes))
        for j, (h, tp) in enumerate(zip(hashes, tps)):
            row = {k: None for k in IDENTITY}
            row.update(fields)
            status = (statuses or {}).get(precision, ["ok"] * len(tps))[j]
            row.update({"config_hash": h, "repeat": j, "status": status, "throughput_ips": tp,
                        "latency_ms_p90": 1.0})
            rows[h] = row
    return points, rows


def _score(points: list[Any], rows: dict[str, dict[str, Any]], answer: str | None, truth: str | None
           ) -> dict[str, Any]:
    se = benchmark_module("search_eval")
    key = {p.categories["precision"]: p.key for p in points}
    final = {"net": (key[answer],) if answer else ()}
    true = {"net": (key[truth],) if truth else ()}
    return se.score_best(BEST, final, true, points, rows)


def test_right_is_the_truth_or_a_median_inside_the_truths_repeat_range():
    points, rows = _grid({"fp32": [100.0, 110.0, 120.0], "fp16": [104.0, 105.0, 200.0], "int8": [95.0, 99.0, 98.0]})
    same = _score(points, rows, "fp32", "fp32")
    assert same["exact"] and same["right"]
    inside = _score(points, rows, "fp16", "fp32")  # fp16's median 105 in fp32's [100, 120]
    assert inside["right"] and not inside["exact"]
    assert inside["truth_range"] == {"net": [100.0, 120.0]} and inside["answer_median"] == {"net": 105.0}
    outside = _score(points, rows, "int8", "fp32")  # int8's median 98: its ranges overlap fp32's, its median not
    assert not outside["right"] and not outside["exact"]


def test_one_repeat_is_a_point_and_an_invalid_repeat_is_not_in_the_range():
    points, rows = _grid({"fp32": [100.0], "fp16": [100.0], "int8": [99.9]})
    assert _score(points, rows, "fp16", "fp32")["right"]  # the same median: inside a point
    assert not _score(points, rows, "int8", "fp32")["right"]  # 0.1% off a one-repeat truth: wrong
    # the truth's invalid repeat (5,000/s) would stretch its range down to the answer: it does not count
    points, rows = _grid({"fp32": [8135.0, 8188.0, 5000.0], "fp16": [5699.0, 5775.0, 5850.0]},
                         {"fp32": ["ok", "ok", "invalid"]})
    assert _score(points, rows, "fp16", "fp32")["truth_range"] == {"net": [8135.0, 8188.0]}
    assert not _score(points, rows, "fp16", "fp32")["right"]


def test_no_answer_is_right_only_where_the_grid_has_none():
    points, rows = _grid({"fp32": [100.0, 101.0], "fp16": [90.0, 91.0]})
    assert _score(points, rows, None, None)["right"] and _score(points, rows, None, None)["exact"]
    assert not _score(points, rows, None, "fp32")["right"]
    assert not _score(points, rows, "fp32", None)["right"]


def test_the_old_rank_test_ties_what_the_repeat_range_does_not():
    """Two usable repeats a side: the exact rank test cannot resolve anything at 95%, so tied_with_best ties a
    configuration 10% slower with non-overlapping ranges; the repeat range does not."""
    se = benchmark_module("search_eval")
    points, rows = _grid({"fp32": [100.0, 101.0], "fp16": [90.0, 91.0]})
    point_of = {h: p.key for p in points for h in p.hashes}
    full = se.grid_answer(BEST, list(rows.values()), point_of)
    key = {p.categories["precision"]: p.key for p in points}
    assert full.truth == {"net": (key["fp32"],)}
    assert key["fp16"] in full.tied["net"]  # the old score: right
    assert not _score(points, rows, "fp16", "fp32")["right"]  # the new one: wrong


def test_knife_edge_sets_sit_within_half_a_percent_of_the_configuration_that_decides():
    se = benchmark_module("search_eval")
    points, by_hash = grid()
    rows = list(by_hash.values())
    goals = se.draw_knife_edges(rows, 30, random.Random(3))
    assert goals == se.draw_knife_edges(rows, 30, random.Random(3))  # reproducible from its seed
    assert goals != se.draw_knife_edges(rows, 30, random.Random(4))
    point_of = {h: p.key for p in points for h in p.hashes}
    label = {p.key: p.label for p in points}
    inside = outside = 0
    for name, goal in goals:
        edge_label = name.split("(edge: ")[1].split(", worst")[0]
        edge = next(p for p in points if p.label == edge_label)
        col = goal.limits.columns()[0][0]
        worst = max(float(by_hash[h][col]) for h in edge.hashes)
        bound = goal.limits.columns()[0][1]
        assert abs(bound / worst - 1) <= se.KNIFE_EDGE + 1e-12, name
        truth = se.grid_answer(goal, rows, point_of).truth["net"]
        if bound >= worst:  # just inside: the edge configuration is the truth (it is on the limit's staircase)
            assert truth and label[truth[0]] == edge_label, name
            inside += 1
        else:  # just outside: the truth is another configuration, or none
            assert not truth or label[truth[0]] != edge_label, name
            outside += 1
    assert inside >= 5 and outside >= 5


def test_rescore_reads_a_stored_record_back_against_its_grid(tmp_path):
    """A record as search_eval prints it (labels, the goal's name, no limits) is scored from the grid file."""
    import csv

    sr = benchmark_module("search_rescore")
    points, by_hash = grid()
    path = tmp_path / "results.csv"
    cols = sorted({k for r in by_hash.values() for k in r})
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, cols)
        w.writeheader()
        for r in by_hash.values():
            w.writerow({k: "" if v is None else v for k, v in r.items()})
    se = benchmark_module("search_eval")
    goal = Goal("best", "throughput", Limits(slo_ms=2.38, percentile="p90"))
    truth = se.grid_answer(goal, list(by_hash.values()), {h: p.key for p in points for h in p.hashes}).truth
    label = {p.key: p.label for p in points}
    truth_label = label[truth["net"][0]]
    runner = next(p.label for p in points if p.label != truth_label)
    record = {"grid": "planted", "goal": "#1: " + se.goal_text(goal), "mode": "best", "goal_set": "drawn",
              "surrogate": "gp", "seed": 0, "answer": {"net": [runner]}, "same_within_noise": True}
    new = sr.rescore(record, str(path))
    assert new["truth"] == {"net": [truth_label]} and new["right"] is False and new["same"] is False
    assert new["gap_pct"] is not None and new["gap_pct"] > 0
    record["answer"] = {"net": [truth_label]}
    assert sr.rescore(record, str(path))["right"] is True


@pytest.mark.parametrize("text,parsed", [
    ("best throughput, p90 <= 7.9 ms", ("throughput", 7.9, "p90", None, None)),
    ("#7: lowest p95 latency, drop <= 0.5 pp", ("latency", None, "p95", None, 0.5)),
    ("knife-edge #3: lowest energy, p90 <= 7.862 ms (edge: torch fp16 b64 cuda:0, worst 7.896, -0.43%)",
     ("energy", 7.862, "p90", None, None)),
    ("#2: best throughput, p50 <= 5.23 ms, power <= 223 W, drop <= 0.5 pp", ("throughput", 5.23, "p50", 223.0, 0.5)),
])
def test_a_goal_is_read_back_from_its_name(text, parsed):
    se = benchmark_module("search_eval")
    goal = se.goal_of_record({"goal": text, "mode": "best"})
    lim = goal.limits
    assert (goal.objective, lim.slo_ms, lim.percentile, lim.power_cap_w, lim.max_accuracy_drop_pct) == parsed
