"""benchmarks/search_eval.py scores the surrogates' 95% intervals on the configurations a search leaves unmeasured
(docs/results/search/README.md, "How far the surrogates' intervals could be trusted (before the widening)"). Proved on planted values: the
search never reads an unmeasured configuration's rows, so moving them far beyond every interval leaves its decisions
as they were while the score must go to 0% inside, and to 100% beyond the better end only when moved to the better
side, and to 100% inside when moved to the predicted medians. Both directions: throughput (higher is better) and
the p90 latency (lower)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from search_landscape import benchmark_module
from search_landscape import replay as landscape_replay

from edgebench.answer.best import Limits
from edgebench.answer.candidates import load_source
from edgebench.search.decide import EXPLORE_MIN_PROB
from edgebench.search.goal import Goal

pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")

ROOT = Path(__file__).resolve().parents[2]
GRID = ROOT / "docs" / "results" / "h200" / "ortgrid-results.csv"
GOAL = Goal("best", "throughput", Limits(slo_ms=4.0, percentile="p90"))
LATENCY = "latency_ms_p90"


def scored(se: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    points, grid = se.points_of(rows)
    point_of = {h: p.key for p in points for h in p.hashes}
    live = [r for r in rows if r.get("status") != "skipped"]
    full = se.grid_answer(GOAL, live, point_of)
    return se.replay(points, grid, GOAL, 0, "gp", sum(p.planned_rows for p in points), EXPLORE_MIN_PROB, full)


def test_interval_coverage_counts_the_unmeasured_rows_and_which_side_they_miss_on():
    se = benchmark_module("search_eval")
    rows = list(load_source(str(GRID)).rows)
    points, grid = se.points_of(rows)
    final, _picks, measured = landscape_replay(points, grid.__getitem__, GOAL, seed=0, surrogate="gp")
    left = {h for p in points if not set(p.hashes) & set(measured) for h in p.hashes}
    ok_left = [h for h in left if grid[h].get("status") == "ok" and grid[h].get("throughput_ips") is not None]
    assert len(ok_left) >= 5, "the search should leave most of the grid unmeasured"

    as_measured = scored(se, rows)
    inside, total, better = as_measured["coverage"]["throughput_ips"]
    assert total == len(ok_left) and 0 <= better <= total - inside

    def planted(col: str, factor: float) -> list[dict[str, Any]]:
        return [{**r, col: float(r[col]) * factor} if str(r.get("config_hash")) in ok_left and r.get(col) is not None
                else r for r in rows]

    up = scored(se, planted("throughput_ips", 100.0))  # higher is better: far beyond the better end
    down = scored(se, planted("throughput_ips", 0.01))
    assert up["rows"] == down["rows"] == as_measured["rows"]  # the planted rows are never read
    assert up["coverage"]["throughput_ips"] == [0, len(ok_left), len(ok_left)]
    assert down["coverage"]["throughput_ips"] == [0, len(ok_left), 0]
    # latency is lower-is-better: the better end is the low one
    slow, quick = scored(se, planted(LATENCY, 100.0)), scored(se, planted(LATENCY, 0.01))
    assert slow["rows"] == quick["rows"] == as_measured["rows"]
    n_latency = sum(1 for h in ok_left if grid[h].get(LATENCY) is not None)
    assert n_latency >= 5
    assert slow["coverage"][LATENCY] == [0, n_latency, 0] and quick["coverage"][LATENCY] == [0, n_latency, n_latency]
    # every unmeasured row at its configuration's predicted median: all inside
    mean = {pred.key: pred.metrics["throughput_ips"][0] for pred in final.predictions if pred.state == "predicted"}
    by_hash = {h: p.key for p in points for h in p.hashes}
    centred = [{**r, "throughput_ips": mean[by_hash[str(r["config_hash"])]]} if str(r.get("config_hash")) in ok_left
               else r for r in rows]
    assert scored(se, centred)["coverage"]["throughput_ips"] == [len(ok_left), len(ok_left), 0]

    text = se.coverage_summary([{**r, "grid": "h200-ort", "surrogate": "gp"} for r in (as_measured, up)])
    line = next(ln for ln in text.splitlines() if "| throughput_ips |" in ln)
    pooled_inside = inside / (2 * len(ok_left))
    pooled_better = (better + len(ok_left)) / (2 * len(ok_left))
    assert f"| 2 | {2 * len(ok_left)} | {pooled_inside:.1%} | {pooled_better:.1%} |" in line, line
