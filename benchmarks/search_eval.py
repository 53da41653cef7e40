"""Evaluate the adaptive search (`bench --search`) on full grids already measured: replay it over a results.csv,
each row it asks for answered by the grid's row of the same configuration and repeat.

For each grid, goal and search seed: how many rows the search measured before it stopped, whether its answer is
the full grid's, the row at which its answer first became the grid's and stayed, and the prediction error on the
configurations it did not measure (median absolute % error of its predicted medians against the grid's, per
metric). The truth is the answer layer's over the whole grid (every repeat counted). A best answer is scored by
`score_best` (issue 54): exact (the truth's configuration), right (exact, or its median, by the grid's usable rows,
inside the truth's repeat range: the [min, max] of the truth's usable rows, a point with one), and the gap of the
rest; a front is right when it holds every member the grid's repeat ranges settle on it and none they settle off.
The old score, `same_within_noise` (the grid's exact rank test cannot tell the answer from the best), ties every
feasible answer at 1-2 repeats: records keep it, tables show it only as "scored the old way".

Goals: the fixed limit sets (goals_for: bounds at quantiles of the grid's own values, and the front), plus with
--drawn N, N best-under-limits goals per grid drawn at random (draw_goals); or one goal of your own, given as
`edgebench best` takes it (--objective, --slo-ms, --slo-percentile, --power-cap-w, --max-accuracy-drop).

It imports edgebench.search: it evaluates the search's decisions (the same `decide` the CLI runs), not the harness's
measurements, which come from the grids (measured through the CLI; their commands are in docs/results).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/search_eval.py --seeds 5 --drawn 50 --jobs 2 --out docs/results/search
    PYTHONPATH=$PWD .venv/bin/python benchmarks/search_eval.py --grids h100-torch --surrogates gp --seeds 4 \
        --objective throughput --slo-ms 6 --slo-percentile p90 --power-cap-w 300
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import zlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import edgebench.search.decide as decide_module
from edgebench.answer.best import ACCURACY_DROP, Limits, answer_from_runs, with_accuracy_drop
from edgebench.answer.candidates import IDENTITY, Candidate, load_source
from edgebench.answer.pareto import membership_settled, pareto_fronts
from edgebench.answer.verdict import tied_with_best
from edgebench.commands.best import OBJECTIVE_CHOICES, PERCENTILE_CHOICES, add_limit_arguments
from edgebench.results.runs import Run
from edgebench.search.decide import EXPLORE_MIN_PROB, decide
from edgebench.search.goal import Goal, ModelState, current_answer, point_key
from edgebench.search.space import SearchPoint, make_point

GRIDS = {
    "h100-torch": "docs/results/h100/grid-results.csv",
    "h200-ort": "docs/results/h200/ortgrid-results.csv",
    "h200-instances": "docs/results/h200/instgrid-results.csv",
    "cpu-small_cnn": "docs/results/search/cpu-grid-results.csv",
}
TITLE = "# Adaptive search replayed on full grids"
HEADER = """{title}

{command_line}

The truth is the answer `edgebench best` (or the report's Pareto front) gives over the whole grid, under the
every-repeat rule of answer/best.py (issue 34): a limit is checked on every repeat that measured it, invalid
repeats included, so a configuration with one invalid repeat over the limit is not feasible. A best answer is
**right** when it is the truth's configuration (**exact**) or when its median (over the grid's usable rows of it)
lies inside the truth's repeat range, the [min, max] of the truth's usable rows (with one usable row a point: right
is then exact but for an equal median); "no answer" is right only where the grid has none (issue 54,
`score_best`). A front is right when it holds every member the grid's repeat ranges settle on the front and none
they settle off it (answer.pareto.membership_settled). The gap is how much worse the answer's median is than the
truth's (%). "Scored the old way" is the score before issue 54: right when the grid's exact rank test cannot tell
the answer from the best (answer.verdict.tied_with_best), which at 1 or 2 repeats a side ties every feasible
configuration with the best."""
# the grids of the reference experiment's shape (docs/results/search/refgrid*), by the names their records use;
# named in --grids like GRIDS, but not replayed by default
MORE_GRIDS = {
    "h200-refgrid": "docs/results/search/refgrid/results.csv",
    "h200-refgrid-r18": "docs/results/search/refgrid-resnet18/results.csv",
}
LATENCY = "latency_ms_p90"  # every grid here has a p90 in every ok row (not every one has a p99)
# of the metrics a search reads, the one where higher is better; latency, power and energy: lower (the accuracy drop,
# derived inside the search, is not in the grids' rows and is not scored)
HIGHER_IS_BETTER = ("throughput_ips",)


def points_of(rows: list[dict[str, Any]]) -> tuple[list[SearchPoint], dict[str, dict[str, Any]]]:
    """The grid's configurations (rows differing only in repeat folded together; all-skipped ones left out, as
    the CLI writes skipped rows before it searches) and its rows by config hash."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[tuple(r.get(k) for k in IDENTITY)].append(r)
    points = []
    for members in groups.values():
        members.sort(key=lambda r: r.get("repeat") or 0)
        if all(r.get("status") == "skipped" for r in members):
            continue
        points.append(make_point(members[0], [str(r["config_hash"]) for r in members]))
    by_hash = {str(r["config_hash"]): r for r in rows}
    return points, by_hash


def _quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


def goals_for(rows: list[dict[str, Any]]) -> list[tuple[str, Goal]]:
    """Limit sets that bind on this grid (bounds at quantiles of its configurations' values), and the front."""
    ok = with_accuracy_drop([r for r in rows if r.get("status") == "ok"])
    lat = [float(r[LATENCY]) for r in ok if r.get(LATENCY) is not None]
    power = [float(r["power_w_mean"]) for r in ok if r.get("power_w_mean") is not None]
    drops = [float(r["accuracy_drop_pct"]) for r in ok if r.get("accuracy_drop_pct") is not None]
    out = [("best throughput, no limit", Goal("best", "throughput", Limits(percentile="p90")))]
    slo = round(_quantile(lat, 0.4), 3)
    drop = 1.0 if drops else None
    out.append((f"best throughput, p90 <= {slo:g} ms" + (f", drop <= {drop:g} pp" if drop else ""),
                Goal("best", "throughput", Limits(slo_ms=slo, percentile="p90", max_accuracy_drop_pct=drop))))
    if power:
        cap = round(_quantile(power, 0.5), 1)
        slo2 = round(_quantile(lat, 0.6), 3)
        out.append((f"lowest energy, p90 <= {slo2:g} ms, power <= {cap:g} W",
                    Goal("best", "energy", Limits(slo_ms=slo2, percentile="p90", power_cap_w=cap))))
    else:
        out.append(("lowest p90 latency, drop <= 0.5 pp",
                    Goal("best", "latency", Limits(percentile="p90", max_accuracy_drop_pct=0.5 if drops else None))))
    out.append(("Pareto front", Goal("pareto")))
    return out


def answer_keys(goal: Goal, states: dict[str, ModelState]) -> dict[str, tuple[str, ...]]:
    """model -> the answer's configurations in `states` (search.goal.current_answer, or a decision's answers):
    (best,) or the front's members (sorted)."""
    if goal.mode == "best":
        return {m: tuple(s.answer_keys[:1]) for m, s in states.items()}
    return {m: tuple(sorted(s.answer_keys)) for m, s in states.items()}


def tied_keys(goal: Goal, rows: list[dict[str, Any]], point_of: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """model -> the configurations the full grid's repeats cannot tell from its best (best mode)."""
    if goal.mode != "best":
        return {}
    column, higher = goal.objective_column()
    answer = answer_from_runs([Run(path=Path("grid"), rows=rows)], goal.objective, goal.limits)
    return {a.model: tuple(point_key(r.candidate.rows, point_of) for r in tied_with_best(a.feasible, column, higher))
            for a in answer.answers}


def front_settled(rows: list[dict[str, Any]], point_of: dict[str, str]) -> dict[str, tuple[set[str], set[str]]]:
    """model -> (configurations the full grid's repeats settle on its front, those they settle off it); the rest
    the grid's own intervals leave open (report.pareto.membership_settled)."""
    out = {}
    for front in pareto_fronts([Run(path=Path("grid"), rows=rows)]):
        settled = membership_settled(front.points, front.objectives)
        keys = [point_key(p.candidate.rows, point_of) for p in front.points]
        out[front.model] = ({k for k, s in zip(keys, settled) if s is True},
                            {k for k, s in zip(keys, settled) if s is False})
    return out


def ok_values(point: SearchPoint, grid: dict[str, dict[str, Any]], col: str) -> list[float]:
    """`col` of the configuration's usable rows in the grid (status ok, the column measured), in repeat order."""
    return [float(grid[h][col]) for h in point.hashes if grid[h].get("status") == "ok" and grid[h].get(col) is not None]


def objective_gap(goal: Goal, final: dict[str, tuple[str, ...]], truth: dict[str, tuple[str, ...]],
                  points: list[SearchPoint], grid: dict[str, dict[str, Any]]) -> float | None:
    """How much worse, by the full grid's own medians, the search's best is than the full grid's best (%, worst
    model; 0 when they are the same; None when either has no answer)."""
    col, higher = goal.objective_column()
    by_key = {p.key: p for p in points}

    def median_of(key: str) -> float | None:
        vals = ok_values(by_key[key], grid, col)
        return statistics.median(vals) if vals else None

    gaps = []
    for m, ks in truth.items():
        if not ks or not final.get(m):
            return None
        t, f = median_of(ks[0]), median_of(final[m][0])
        if t is None or f is None or t == 0:
            return None
        gaps.append(max(0.0, (t - f) / t * 100 if higher else (f - t) / t * 100))
    return max(gaps) if gaps else None


def repeat_range(point: SearchPoint, grid: dict[str, dict[str, Any]], col: str) -> tuple[float, float] | None:
    """The configuration's repeat range in `col`: [min, max] of its usable rows in the grid (status ok, the column
    measured; the rows its median is taken over); a point with one such row; None with none."""
    vals = ok_values(point, grid, col)
    return (min(vals), max(vals)) if vals else None


def score_best(goal: Goal, final: dict[str, tuple[str, ...]], truth: dict[str, tuple[str, ...]],
               points: list[SearchPoint], grid: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Issue 54's score of a best answer against the full grid's truth, per model and over all models:
    - exact: the answer is the truth's configuration (both "no answer" counts exact);
    - right: exact, or the answer's median (over the grid's usable rows of it, the median `edgebench best` ranks)
      lies inside the truth's repeat range (repeat_range: [min, max] of the truth's usable rows; a point with one,
      so right is exact there but for an equal median). An answer where the grid has none, or none where it has
      one, is wrong. The range is the truth's own run-to-run spread, what a second measurement of the truth could
      give: an answer whose median sits in it could have been the truth's on another day. It is never wider than the
      repeats themselves, unlike answer.verdict.tied_with_best (the exact rank test at 95%, which cannot resolve
      anything below 3 usable repeats a side and so ties every feasible configuration at 1-2 repeats).
    Returns {"exact", "right", "truth_range": model -> [lo, hi] or None, "answer_median": model -> value or None}."""
    col, _higher = goal.objective_column()
    by_key = {p.key: p for p in points}
    exact = right = True
    ranges: dict[str, list[float] | None] = {}
    medians: dict[str, float | None] = {}
    for m in sorted(set(truth) | set(final)):
        t, a = truth.get(m, ()), final.get(m, ())
        t_range = repeat_range(by_key[t[0]], grid, col) if t else None
        a_vals = ok_values(by_key[a[0]], grid, col) if a else []
        a_median = statistics.median(a_vals) if a_vals else None
        ranges[m] = list(t_range) if t_range else None
        medians[m] = a_median
        same = (t[:1] == a[:1])
        exact = exact and same
        inside = (not same and t_range is not None and a_median is not None
                  and t_range[0] <= a_median <= t_range[1])
        right = right and (same or inside)
    return {"exact": exact, "right": right, "truth_range": ranges, "answer_median": medians}


@dataclass
class GridAnswer:
    """What the full grid answers for one goal, computed once per grid and goal (not per replay)."""
    truth: dict[str, tuple[str, ...]]  # model -> the answer's configurations (answer_keys)
    tied: dict[str, tuple[str, ...]]  # best mode: model -> configurations its repeats cannot tell from the best
    settled: dict[str, tuple[set[str], set[str]]]  # pareto: model -> (settled on the front, settled off it)


def grid_answer(goal: Goal, live: list[dict[str, Any]], point_of: dict[str, str]) -> GridAnswer:
    return GridAnswer(answer_keys(goal, current_answer(goal, live, point_of)), tied_keys(goal, live, point_of),
                      front_settled(live, point_of) if goal.mode == "pareto" else {})


def replay(points: list[SearchPoint], grid: dict[str, dict[str, Any]], goal: Goal, seed: int, surrogate: str,
           budget: int, explore_min_prob: float, full: GridAnswer, no_answer_min_prob: float | None = None
           ) -> dict[str, Any]:
    truth = full.truth
    point_of = {h: p.key for p in points for h in p.hashes}
    measured: dict[str, dict[str, Any]] = {}
    reached_at: int | None = None
    steps = 0
    phase_rows: dict[str, int] = defaultdict(int)  # rows measured by the picks of each phase
    t0 = time.monotonic()
    # the search without the decider check stops where the check is first measured instead (decide's
    # stop_without_check): until then the two are one search, so one replay gives both
    without_check: dict[str, Any] | None = None
    while True:
        d = decide(points, measured, goal, budget_left=budget - len(measured), seed=seed, surrogate=surrogate,
                   explore_min_prob=explore_min_prob, point_of=point_of, no_answer_min_prob=no_answer_min_prob)
        if d.stop_without_check is not None and without_check is None:
            without_check = {"stop": d.stop_without_check, "final": answer_keys(goal, d.answers),
                             "rows": len(measured), "phase_rows": dict(phase_rows)}
        now = answer_keys(goal, d.answers) if measured else {}  # decide answered over exactly these rows
        same = now == truth
        reached_at = (reached_at if reached_at is not None else len(measured)) if same else None
        if d.pick is None:
            break
        for h in d.pick.hashes:
            measured[h] = grid[h]
        phase_rows[d.pick.phase] += len(d.pick.hashes)
        steps += 1
    final = answer_keys(goal, d.answers)  # the last decision's: over the rows measured when it stopped
    tied = full.tied
    within_noise = final == truth or (goal.mode == "best" and all(
        bool(final.get(m)) and bool(ks) and final[m][0] in (ks[0], *tied.get(m, ())) for m, ks in truth.items()))
    if goal.mode == "pareto" and not within_noise:  # every member the grid settles on, none it settles off
        settled = full.settled
        within_noise = all(bool(final.get(m)) and on <= set(final.get(m, ())) and not (off & set(final.get(m, ())))
                           for m, (on, off) in settled.items())
    found = (sum(len(set(final.get(m, ())) & set(ks)) for m, ks in truth.items())
             / max(1, sum(len(ks) for ks in truth.values())))
    errors: dict[str, list[float]] = defaultdict(list)
    # the surrogates' 95% intervals for one new row of each configuration left unmeasured at the stop, against the
    # grid's own rows of it: [rows inside, rows, rows beyond the end that is better for the answer]
    coverage: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for pred in d.predictions:
        if pred.state != "predicted":
            continue
        point = next(p for p in points if p.key == pred.key)
        for col, (mean, lo, hi) in pred.metrics.items():
            actual = ok_values(point, grid, col)
            if actual and statistics.median(actual) != 0:
                true = statistics.median(actual)
                errors[col].append(abs(mean - true) / abs(true) * 100)
            for v in actual:
                c = coverage[col]
                c[0] += lo <= v <= hi
                c[1] += 1
                c[2] += v > hi if col in HIGHER_IS_BETTER else v < lo
    gap = objective_gap(goal, final, truth, points, grid) if goal.mode == "best" else None
    score = (score_best(goal, final, truth, points, grid) if goal.mode == "best"
             else {"exact": final == truth, "right": bool(within_noise)})  # a front: the settled rule (docstring)
    floor = sum(len(p.hashes) for p in points if any(p.key in ks for ks in truth.values()))
    extra: dict[str, Any] = {}
    if goal.mode == "best" and decide_module.DECIDER_CHECK:  # what the search without the check answered
        w = without_check or {"stop": d.stop, "final": final, "rows": len(measured), "phase_rows": dict(phase_rows)}
        w_score = score_best(goal, w["final"], truth, points, grid)
        extra["without_check"] = {"stop": w["stop"], "final": w["final"], "rows": w["rows"],
                                  "phase_rows": w["phase_rows"], "same": w_score["exact"], "right": w_score["right"],
                                  "gap_pct": objective_gap(goal, w["final"], truth, points, grid)}
    return {**extra, "final": final, "rows": len(measured), "answer_rows": floor, "steps": steps, "phase_rows": dict(phase_rows), "same": final == truth, "same_within_noise": bool(within_noise),
            "right": score["right"], **{k: v for k, v in score.items() if k in ("truth_range", "answer_median")},
            "gap_pct": gap,
            "answer_members_found": found, "reached_at": reached_at,
            "stop": d.stop, "error_pct": {c: statistics.median(v) for c, v in errors.items()},
            "coverage": dict(coverage),
            "predicted_points": sum(1 for p in d.predictions if p.state == "predicted"), "wall_s": time.monotonic() - t0}


def goal_text(goal: Goal) -> str:
    """'lowest energy, p90 <= 6.5 ms, power <= 300 W, drop <= 1 pp' (the limits as `edgebench best` names them)."""
    if goal.mode == "pareto":
        return "Pareto front"
    words = {"throughput": "best throughput", "energy": "lowest energy",
             "latency": f"lowest {goal.limits.percentile} latency"}[goal.objective]
    lim = goal.limits
    parts = [words]
    if lim.slo_ms is not None:
        parts.append(f"{lim.percentile} <= {lim.slo_ms:g} ms")
    if lim.power_cap_w is not None:
        parts.append(f"power <= {lim.power_cap_w:g} W")
    if lim.max_accuracy_drop_pct is not None:
        parts.append(f"drop <= {lim.max_accuracy_drop_pct:g} pp")
    return ", ".join(parts) if len(parts) > 1 else f"{words}, no limit"


def goal_of_record(r: dict[str, Any]) -> Goal:
    """The goal a record was replayed for: its `limits` and `objective` where it carries them, else read back from
    its name (goal_text's words, after any '#N: ' prefix), as records printed one a line (without limits) hold it."""
    if r.get("mode") == "pareto":
        return Goal("pareto")
    text = str(r["goal"]).split(": ", 1)[1] if str(r["goal"]).startswith(("#", "knife-edge #")) else str(r["goal"])
    text = text.split(" (edge:")[0]
    parts = [t.strip() for t in text.split(",")]
    head = parts[0]
    objective = {"best throughput": "throughput", "lowest energy": "energy"}.get(head, "latency")
    percentile = head.split()[1] if objective == "latency" else None
    slo = cap = drop = None
    for part in parts[1:]:
        words = part.split()
        if part == "no limit":
            continue
        if words[0] == "power":
            cap = float(words[2])
        elif words[0] == "drop":
            drop = float(words[2])
        elif words[0].startswith("p") and words[1] == "<=":
            slo, percentile = float(words[2]), percentile or words[0]
        else:
            raise ValueError(f"goal {r['goal']!r}: cannot read {part!r}")
    if isinstance(r.get("limits"), dict):
        lim = r["limits"]
        limits = Limits(slo_ms=lim.get("slo_ms"), percentile=lim.get("percentile") or "p99",
                        power_cap_w=lim.get("power_cap_w"), max_accuracy_drop_pct=lim.get("max_accuracy_drop_pct"))
        return Goal("best", str(r.get("objective") or objective), limits)
    return Goal("best", objective, Limits(slo_ms=slo, percentile=percentile or "p90", power_cap_w=cap,
                                          max_accuracy_drop_pct=drop))


def _round3(x: float) -> float:
    return float(f"{x:.3g}")


def draw_goals(rows: list[dict[str, Any]], count: int, rng: random.Random,
               quantiles: tuple[float, float] = (0.15, 0.95)) -> list[tuple[str, Goal]]:
    """`count` best-under-limits goals drawn at random: objective (energy only where power is measured), the SLO's
    percentile (one that at least 3 in 4 measured rows have), and each limit with a threshold inside the grid's
    observed range (a quantile, drawn uniformly in `quantiles` (default [0.15, 0.95]), of the configurations'
    worst-repeat values, every repeat counted as the answer counts it), so that most sets leave something feasible;
    low quantiles (--draw-quantiles 0,0.3) draw tight sets, where few configurations or none are feasible."""
    measured = with_accuracy_drop([r for r in rows if r.get("status") in ("ok", "invalid")])
    by_config: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in measured:
        by_config[tuple(r.get(k) for k in IDENTITY)].append(r)

    def worst(col: str) -> list[float]:
        out = []
        for members in by_config.values():
            vals = [float(r[col]) for r in members if r.get(col) is not None]
            if vals:
                out.append(max(vals))
        return sorted(out)

    percentiles = [p for p in ("p50", "p90", "p95", "p99")
                   if sum(1 for r in measured if r.get(f"latency_ms_{p}") is not None) >= 0.75 * len(measured)]
    power = worst("power_w_mean")
    drops = worst(ACCURACY_DROP)
    objectives = ["throughput", "latency"] + (["energy"] if power else [])
    out = []
    for _ in range(count):
        objective = rng.choice(objectives)
        pct = rng.choice(percentiles)
        slo = cap = drop = None
        if rng.random() < 0.8:
            slo = _round3(_quantile(worst(f"latency_ms_{pct}"), rng.uniform(*quantiles)))
        if power and rng.random() < 0.6:
            cap = _round3(_quantile(power, rng.uniform(*quantiles)))
        if drops and rng.random() < 0.3:
            drop = rng.choice((0.5, 1.0, 2.0))
        goal = Goal("best", objective, Limits(slo_ms=slo, percentile=pct, power_cap_w=cap,
                                              max_accuracy_drop_pct=drop))
        out.append((f"#{len(out) + 1}: {goal_text(goal)}", goal))
    return out


KNIFE_EDGE = 0.005  # a knife-edge limit lies within this share of a configuration's worst repeat (issue 54)


def draw_knife_edges(rows: list[dict[str, Any]], count: int, rng: random.Random,
                     edge: float = KNIFE_EDGE) -> list[tuple[str, Goal]]:
    """`count` knife-edge goals (issue 54): one limit within `edge` (0.5%) of a configuration's worst repeat, on the
    side drawn at random, so that configuration is feasible by less than 0.5% (or infeasible by as little).
    Each set draws an objective and one limit kind: throughput or energy (energy only where power is measured) with a
    latency SLO on a percentile at least 3 in 4 measured rows have, or with a power cap; lowest latency with a power
    cap. The edge configuration is drawn uniformly from the limit's staircase: the configurations that are the best
    by the objective among all whose worst repeat is at or under theirs, i.e. those that are the grid's answer when
    the limit sits exactly on their worst repeat, so the edge always decides the answer (just inside: it is the
    truth; just outside: the truth is the staircase's next step). Worst repeats count every measured repeat
    (invalid ones too), medians the usable (ok) rows, as the answer does. The threshold is rounded to 4 significant
    figures, kept within `edge`."""
    measured = with_accuracy_drop([r for r in rows if r.get("status") in ("ok", "invalid")])
    by_config: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in measured:
        by_config[tuple(r.get(k) for k in IDENTITY)].append(r)
    percentiles = [p for p in ("p50", "p90", "p95", "p99")
                   if sum(1 for r in measured if r.get(f"latency_ms_{p}") is not None) >= 0.75 * len(measured)]
    power = any(r.get("power_w_mean") is not None for r in measured)
    kinds = [("throughput", "slo")] + ([("throughput", "power"), ("energy", "slo"), ("energy", "power"),
                                        ("latency", "power")] if power else [])
    out: list[tuple[str, Goal]] = []
    while len(out) < count:
        objective, kind = rng.choice(kinds)
        pct = rng.choice(percentiles)
        limit_col = f"latency_ms_{pct}" if kind == "slo" else "power_w_mean"
        col, higher = Goal("best", objective, Limits(percentile=pct)).objective_column()
        configs = []
        for members in by_config.values():
            worst = [float(r[limit_col]) for r in members if r.get(limit_col) is not None]
            usable = [float(r[col]) for r in members if r.get("status") == "ok" and r.get(col) is not None]
            if worst and usable:
                configs.append((max(worst), statistics.median(usable) * (1 if higher else -1), members[0]))
        configs.sort(key=lambda c: (c[0], -c[1]))
        stairs, best = [], float("-inf")
        for worst_value, score, first in configs:
            if score > best:
                stairs.append((worst_value, first))
                best = score
        if not stairs:
            continue
        worst_value, first = rng.choice(stairs)
        share = rng.uniform(-edge, edge)
        threshold = float(f"{worst_value * (1 + share):.4g}")
        threshold = min(max(threshold, worst_value * (1 - edge)), worst_value * (1 + edge))
        limits = Limits(slo_ms=threshold if kind == "slo" else None, percentile=pct,
                        power_cap_w=threshold if kind == "power" else None)
        goal = Goal("best", objective, limits)
        label = Candidate({k: first.get(k) for k in IDENTITY}, setup="").label()
        out.append((f"knife-edge #{len(out) + 1}: {goal_text(goal)} (edge: {label}, worst {worst_value:.4g}, "
                    f"{(threshold / worst_value - 1) * 100:+.2f}%)", goal))
    return out


@dataclass
class Job:
    grid: str
    path: str
    goal_set: str  # fixed | drawn | given
    goal_name: str
    goal: Goal
    surrogate: str
    seed: int
    explore_min_prob: float
    no_answer_min_prob: float | None = None
    variant: str = ""  # '+'-joined VARIANTS names applied for this replay ('' or 'shipped': the search as it ships)


_GRIDS: dict[str, tuple[list[SearchPoint], dict[str, dict[str, Any]], list[dict[str, Any]]]] = {}
_ANSWERS: dict[tuple[str, Goal], GridAnswer] = {}


def _grid(path: str) -> tuple[list[SearchPoint], dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """(points, rows by config hash, the live rows) of a grid, loaded once per process."""
    if path not in _GRIDS:
        rows = list(load_source(path).rows)
        points, grid = points_of(rows)
        _GRIDS[path] = (points, grid, [r for r in rows if r.get("status") != "skipped"])
    return _GRIDS[path]


def run_job(job: Job) -> dict[str, Any]:
    apply_variant(job.variant)
    points, grid, live = _grid(job.path)
    point_of = {h: p.key for p in points for h in p.hashes}
    if (job.path, job.goal) not in _ANSWERS:
        _ANSWERS[(job.path, job.goal)] = grid_answer(job.goal, live, point_of)
    full = _ANSWERS[(job.path, job.goal)]
    res = replay(points, grid, job.goal, job.seed, job.surrogate, len(live), job.explore_min_prob, full,
                 job.no_answer_min_prob)
    label = {p.key: p.label for p in points}
    lim = job.goal.limits
    if "without_check" in res:  # its answer by label, as the record's
        w = res["without_check"]
        w["answer"] = {m: [label[k] for k in ks] for m, ks in w.pop("final").items()}
    return {"grid": job.grid, "grid_rows": len(live), "configurations": len(points), "goal_set": job.goal_set,
            "goal": job.goal_name, "mode": job.goal.mode, "objective": job.goal.objective,
            "limits": {"slo_ms": lim.slo_ms, "percentile": lim.percentile, "power_cap_w": lim.power_cap_w,
                       "max_accuracy_drop_pct": lim.max_accuracy_drop_pct},
            "surrogate": job.surrogate, "seed": job.seed, **({"variant": job.variant} if job.variant else {}), **res,
            "truth": {m: [label[k] for k in ks] for m, ks in full.truth.items()},
            "answer": {m: [label[k] for k in ks] for m, ks in res.pop("final").items()}}


def _indexed(item: tuple[int, Job]) -> tuple[int, dict[str, Any]]:
    return item[0], run_job(item[1])


def step_cost(surrogate: str, repeats_timed: int = 5) -> str:
    """What one step of `bench --search` costs at a 500-row plan, apart from measuring: the driver's reads and writes
    of its run folder (results.csv through the typed reader, predictions.csv written and read back, one line of
    search.csv) and decide itself (the surrogates' fits), each the median of `repeats_timed` runs. The plan: 4
    precisions x 7 batches x 3 instance counts x 2 option sets, 3 repeats (504 rows), every row measured (the
    largest results.csv and predictions.csv a 500-row search reads), rows from a closed form with 3% noise
    (synthetic_grid.closed_form_rows)."""
    import csv
    import tempfile

    from synthetic_grid import closed_form_rows

    from edgebench.results.runs import load_run
    from edgebench.results.store import ResultsStore
    from edgebench.search.records import append_step, write_predictions

    rows, configs = closed_form_rows(["fp32", "tf32", "fp16", "int8"], [1, 2, 4, 8, 16, 32, 64], [1, 2, 4],
                                     ["", "graph_opt=all"], repeats=3)
    points = [make_point(fields, hashes) for fields, hashes in configs]
    goal = Goal("best", "throughput", Limits(slo_ms=4.0, percentile="p90", power_cap_w=80.0))
    point_of = {h: p.key for p in points for h in p.hashes}
    labels = {p.key: (p.model, p.label) for p in points}
    times: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        store = ResultsStore(run_dir)
        for r in rows:
            store.append(r)
        for _ in range(repeats_timed):
            t = time.perf_counter()
            measured = {str(r["config_hash"]): r for r in load_run(run_dir).rows}  # driver._measured
            times["read results.csv (typed reader)"].append(time.perf_counter() - t)
            t = time.perf_counter()
            d = decide(points, measured, goal, budget_left=1, seed=0, surrogate=surrogate, point_of=point_of)
            times[f"decide ({surrogate} fits, scores)"].append(time.perf_counter() - t)
            t = time.perf_counter()
            write_predictions(run_dir / "predictions.csv", d.predictions)
            times["write predictions.csv"].append(time.perf_counter() - t)
            t = time.perf_counter()
            with (run_dir / "predictions.csv").open(newline="") as fh:
                read_back = list(csv.DictReader(fh))
            times["read predictions.csv"].append(time.perf_counter() - t)
            t = time.perf_counter()
            append_step(run_dir / "search.csv", 1, d, labels, len(measured), len(rows))
            times["append a search.csv line"].append(time.perf_counter() - t)
        assert len(read_back) == len(points) and len(measured) == len(rows)
    io = sum(statistics.median(v) for k, v in times.items() if not k.startswith("decide"))
    lines = [f"one search step at {len(rows)} rows ({len(points)} configurations), median of {repeats_timed}:"]
    lines += [f"  {k}: {statistics.median(v) * 1000:.1f} ms" for k, v in times.items()]
    lines.append(f"  reads and writes of the run folder together: {io * 1000:.1f} ms")
    return "\n".join(lines)


VARIANTS = {  # --variant NAME: (module, attribute, value)
    "decider-check": ("edgebench.search.decide", "DECIDER_CHECK", True),  # shipped (issue 54)
    "no-decider-check": ("edgebench.search.decide", "DECIDER_CHECK", False),  # the search before issue 54
    "decider-frontier": ("edgebench.search.decide", "DECIDER_FRONTIER", True),  # shipped: the check's frontier form
    "decider-unrestricted": ("edgebench.search.decide", "DECIDER_FRONTIER", False),  # tried, not adopted
    "conformal-spread": ("edgebench.search.surrogate", "CV_SCALE_RULE", "conformal"),
    "rms-spread": ("edgebench.search.surrogate", "CV_SCALE_RULE", "rms"),
}


_SHIPPED: dict[tuple[str, str], Any] = {}  # each VARIANTS attribute as the search ships it, read before any change


def set_variant(name: str) -> None:
    """Switch one of the search's trial rules (VARIANTS) for the replays of this process and the workers it forks."""
    import importlib

    if name not in VARIANTS:
        raise SystemExit(f"--variant {name}: one of {', '.join(VARIANTS)}")
    module, attribute, value = VARIANTS[name]
    mod = importlib.import_module(module)
    _SHIPPED.setdefault((module, attribute), getattr(mod, attribute))
    setattr(mod, attribute, value)


def apply_variant(variant: str) -> None:
    """A job's variant ('a+b', or '' / 'shipped'): every VARIANTS attribute back to the shipped value, then each
    named one set. '' leaves the process's settings (--variant) as they are."""
    import importlib

    if not variant:
        return
    for module, attribute, _value in VARIANTS.values():
        mod = importlib.import_module(module)
        _SHIPPED.setdefault((module, attribute), getattr(mod, attribute))
        setattr(mod, attribute, _SHIPPED[(module, attribute)])
    for name in variant.split("+"):
        if name != "shipped":
            set_variant(name)


def _quantiles(text: str) -> tuple[float, float]:
    """--draw-quantiles LO,HI: two numbers, 0 <= LO <= HI <= 1."""
    try:
        lo, hi = (float(q) for q in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give two quantiles, LO,HI (e.g. 0,0.3)") from None
    if not 0.0 <= lo <= hi <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r}: need 0 <= LO <= HI <= 1")
    return lo, hi


def _probability(text: str) -> float:
    p = float(text)
    if not 0.0 < p < 1.0:
        raise argparse.ArgumentTypeError(f"{text}: a probability, 0 < P < 1")
    return p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grids", default=",".join(GRIDS), help="names of GRIDS, or NAME=PATH (any results.csv)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--surrogates", default="gp,loglinear")
    ap.add_argument("--explore-min-prob", type=_probability, default=EXPLORE_MIN_PROB)
    ap.add_argument("--no-answer-min-prob", type=_probability, default=None,
                    help="the threshold of a stop with no answer, at most --explore-min-prob (default: "
                         "NO_ANSWER_SHARE x --explore-min-prob)")
    ap.add_argument("--goals", default="", help="only fixed goals whose name contains one of these (comma-separated; "
                                                "e.g. 'Pareto')")
    ap.add_argument("--drawn", type=int, default=0, metavar="N",
                    help="also N best-under-limits goals drawn at random per grid (draw_goals)")
    ap.add_argument("--drawn-surrogates", default=None,
                    help="surrogates for the drawn goals (default: --surrogates)")
    ap.add_argument("--draw-seed", type=int, default=0)
    ap.add_argument("--draw", choices=("uniform", "knife-edge"), default="uniform",
                    help="how --drawn draws its sets: uniform (draw_goals) or knife-edge (draw_knife_edges: one "
                         "limit within 0.5%% of a configuration's worst repeat, the one that decides the answer)")
    ap.add_argument("--draw-quantiles", type=_quantiles, default=(0.15, 0.95), metavar="LO,HI",
                    help="the drawn thresholds' quantiles of the grid's worst-repeat values (low: tight sets)")
    ap.add_argument("--no-fixed", action="store_true", help="leave out the fixed goals (goals_for)")
    g = ap.add_argument_group("a goal of your own (as `edgebench best` takes it): replaces the fixed and drawn goals")
    g.add_argument("--objective", choices=OBJECTIVE_CHOICES)
    add_limit_arguments(g, slo_help="latency SLO on the --slo-percentile column, on every repeat")
    g.add_argument("--slo-percentile", choices=PERCENTILE_CHOICES, default="p99")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME",
                    help="replay a variant of the search (issue 54's trials; repeatable): no-decider-check (the "
                         "search before issue 54: no check of a predicted infeasibility before a stop; "
                         "decide.DECIDER_CHECK), decider-unrestricted (the check wherever the level's next smaller "
                         "batch does not miss a limit; decide.DECIDER_FRONTIER off), conformal-spread "
                         "(surrogate.CV_SCALE_RULE 'conformal'); decider-check, decider-frontier and rms-spread are "
                         "the shipped settings")
    ap.add_argument("--compare", default="", metavar="V1,V2,...",
                    help="replay every search once per variant, in one pool (each Vi 'shipped' or '+'-joined "
                         "--variant names; records carry it as 'variant'), interleaved so that a run cut short has "
                         "as many of each")
    ap.add_argument("--records", help="append each record, one JSON line, to this file as it comes (a run cut "
                                      "short keeps what it finished)")
    ap.add_argument("--jobs", type=int, default=1, help="replays run in this many processes")
    ap.add_argument("--out", help="folder for eval.md / eval.json")
    ap.add_argument("--notes", help="a markdown file appended to eval.md (what changed, read by people)")
    ap.add_argument("--step-cost", action="store_true",
                    help="time one search step's reads and writes (and decide) at a 500-row plan, and exit")
    ap.add_argument("--render", metavar="EVAL_JSON",
                    help="write eval.md (to --out) from the records of an earlier run instead of replaying "
                         "(the command line it prints is that run's: pass it as --command)")
    ap.add_argument("--command", help="with --render: the command line that made the records")
    args = ap.parse_args(argv)
    if args.no_answer_min_prob is not None and args.no_answer_min_prob > args.explore_min_prob:
        ap.error(f"--no-answer-min-prob {args.no_answer_min_prob:g} is above --explore-min-prob "
                 f"{args.explore_min_prob:g}: a stop with no answer is never the easier one")
    if args.render:
        records = json.loads(Path(args.render).read_text())
        write_out(records, args.out, args.notes, args.command or "")
        return 0
    if args.step_cost:
        print(step_cost(args.surrogates.split(",")[0]))
        return 0
    for variant in args.variant:
        set_variant(variant)
    given = args.objective is not None or any(v is not None for v in (args.slo_ms, args.power_cap_w,
                                                                      args.max_accuracy_drop))
    jobs: list[Job] = []
    for spec in args.grids.split(","):
        name, _, path = spec.partition("=")
        path = path or GRIDS.get(name) or MORE_GRIDS[name]
        rows = list(load_source(path).rows)
        sets: list[tuple[str, str, Goal, list[str]]] = []
        surrogates = args.surrogates.split(",")
        if given:
            goal = Goal("best", args.objective or "throughput",
                        Limits(slo_ms=args.slo_ms, percentile=args.slo_percentile, power_cap_w=args.power_cap_w,
                               max_accuracy_drop_pct=args.max_accuracy_drop))
            sets.append(("given", goal_text(goal), goal, surrogates))
        else:
            if not args.no_fixed:
                sets += [("fixed", n, goal, surrogates) for n, goal in goals_for(rows)
                         if not args.goals or any(g in n for g in args.goals.split(","))]
            rng = random.Random(args.draw_seed * 1_000_003 + zlib.crc32(name.encode()))
            drawn_surrogates = (args.drawn_surrogates or args.surrogates).split(",")
            drawn = (draw_knife_edges(rows, args.drawn, rng) if args.draw == "knife-edge"
                     else draw_goals(rows, args.drawn, rng, args.draw_quantiles))
            sets += [("drawn", n, goal, drawn_surrogates) for n, goal in drawn]
        for goal_set, goal_name, goal, surs in sets:
            for surrogate in surs:
                for seed in range(args.seeds):
                    for variant in (args.compare.split(",") if args.compare else [""]):
                        jobs.append(Job(name, path, goal_set, goal_name, goal, surrogate, seed,
                                        args.explore_min_prob, args.no_answer_min_prob, variant))
    if args.compare:  # round-robin over the grids' sets: a run cut short holds each grid and variant alike
        queues: dict[str, list[Job]] = defaultdict(list)
        for job in jobs:
            queues[job.grid].append(job)
        jobs = [q[i] for i in range(max(len(q) for q in queues.values())) for q in queues.values() if i < len(q)]
    records = []
    t0 = time.monotonic()
    try:  # the surrogates' matrices are tiny: BLAS threads only fight over the cores (a replay runs ~2x slower)
        import numpy  # noqa: F401 - loaded first: the limit reaches only the BLAS libraries already loaded
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover - scikit-learn brings it
        pass
    stream = Path(args.records).open("a") if args.records else None

    def came(rec: dict[str, Any]) -> None:  # printed (and streamed to --records) as each replay finishes
        print(json.dumps({k: v for k, v in rec.items() if k not in ("truth", "limits")}, default=str), flush=True)
        if stream is not None:
            stream.write(json.dumps(rec, default=str) + "\n")
            stream.flush()

    if args.jobs > 1:
        import multiprocessing

        done: dict[int, dict[str, Any]] = {}
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            for i, rec in pool.imap_unordered(_indexed, list(enumerate(jobs))):
                done[i] = rec
                came(rec)
        records = [done[i] for i in range(len(jobs))]  # in job order
    else:
        for job in jobs:
            records.append(run_job(job))
            came(records[-1])
    wall = time.monotonic() - t0
    print(f"{len(records)} replays in {wall:.0f} s ({args.jobs} process(es))")
    command = " ".join(["PYTHONPATH=$PWD .venv/bin/python benchmarks/search_eval.py", *(argv or sys.argv[1:])])
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "eval.json").write_text(json.dumps(records, indent=1, default=str))
    write_out(records, args.out, args.notes, command)
    return 0


def write_out(records: list[dict[str, Any]], out: str | None, notes_path: str | None, command: str,
              command_line: str | None = None) -> None:
    """The tables (printed; and eval.md in `out`, under the header and above the notes). `command_line`: the
    header's line as it stands (a re-render keeps an earlier eval.md's words), else `command` in backticks."""
    text = "\n\n".join(part for part in (overview(records), summary([r for r in records if r["goal_set"] != "drawn"]),
                                         drawn_summary(records), coverage_summary(records)) if part)
    print(text)
    if out:
        notes = Path(notes_path).read_text().strip() + "\n" if notes_path else ""
        Path(out).mkdir(parents=True, exist_ok=True)
        header = HEADER.format(title=TITLE, command_line=command_line or f"`{command}`")
        (Path(out) / "eval.md").write_text("\n\n".join([header, text, notes]).rstrip() + "\n")


def correct(r: dict[str, Any]) -> bool:
    """The search's answer is right (score_best: the truth, or inside the truth's repeat range; a front: every
    member the grid's repeat ranges settle on it, none they settle off). Records made before issue 54 carry it once
    benchmarks/search_rescore.py has scored them."""
    if "right" not in r:
        raise KeyError("a record without 'right' (made before issue 54): score it first with "
                       "benchmarks/search_rescore.py")
    return bool(r["right"])


def old_way(r: dict[str, Any]) -> bool:
    """The score before issue 54: the same configuration, or one the grid's exact rank test cannot tell from the
    best (answer.verdict.tied_with_best; a front: the settled rule, as now)."""
    return bool(r["same_within_noise"])


def who(r: dict[str, Any]) -> str:
    """The surrogate, and the variant of the search a record replayed where it is not the shipped one."""
    return r["surrogate"] + (f" [{r['variant']}]" if r.get("variant") not in (None, "", "shipped") else "")


def _share(rs: list[dict[str, Any]], pred: Any) -> str:
    return f"{sum(1 for r in rs if pred(r))} of {len(rs)} ({sum(1 for r in rs if pred(r)) / max(1, len(rs)):.1%})"


def _rows_share(rs: list[dict[str, Any]]) -> str:
    shares = sorted(r["rows"] / r["grid_rows"] for r in rs)
    if not shares:
        return "-"
    return (f"{statistics.median(shares):.0%} (p90 {shares[min(len(shares) - 1, int(0.9 * len(shares)))]:.0%}, "
            f"max {shares[-1]:.0%})")


def rest_text(rs: list[dict[str, Any]]) -> str:
    """The answers that are not right: how many, their gaps to the truth (median, max), and those with no gap (a
    "no answer" where the grid has one, or an answer where it has none)."""
    wrong = [r for r in rs if not correct(r)]
    if not wrong:
        return "0"
    gaps = sorted(r["gap_pct"] for r in wrong if r.get("gap_pct") is not None)
    parts = [f"{len(wrong)}"]
    if gaps:
        parts.append(f"gap median {statistics.median(gaps):.1f}%, max {gaps[-1]:.1f}%")
    if len(gaps) < len(wrong):
        parts.append(f"{len(wrong) - len(gaps)} no answer / answer where none")
    return parts[0] + (f" ({'; '.join(parts[1:])})" if len(parts) > 1 else "")


def _worse_than(rs: list[dict[str, Any]], pct: float) -> int:
    return sum(1 for r in rs if r.get("gap_pct") is not None and r["gap_pct"] > pct)


def overview(records: list[dict[str, Any]]) -> str:
    """One line per goal set (fixed best, fixed Pareto, drawn, given) and surrogate: right (score_best), exact, the
    answers not right with their gaps, those more than 5% worse than the truth, the old score, and the rows used
    (median share of the grid, over searches)."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        kind = {"fixed": "fixed limit sets", "drawn": "drawn limit sets", "given": "the given goal"}[r["goal_set"]]
        groups[(f"{kind}, {'Pareto front' if r['mode'] == 'pareto' else 'best'}", who(r))].append(r)
    lines = ["| goals | surrogate | searches | right (the truth, or inside its repeat range) | exact | not right (gap "
             "to the truth) | more than 5% worse than the truth | scored the old way (tied in the full grid) | rows "
             "used: median share of the grid (p90, max) |",
             "| --- | --- | ---: | --- | --- | --- | ---: | --- | --- |"]
    for (kind, surrogate), rs in groups.items():
        best = "Pareto" not in kind
        lines.append(f"| {kind} | {surrogate} | {len(rs)} | {_share(rs, correct)} | {_share(rs, lambda r: r['same'])} "
                     f"| {rest_text(rs) if best else '-'} | {_worse_than(rs, 5.0) if best else '-'} | "
                     f"{_share(rs, old_way)} | {_rows_share(rs)} |")
    return "\n".join(lines)


def drawn_summary(records: list[dict[str, Any]]) -> str:
    """The drawn limit sets per grid and surrogate, and every search among them whose answer is not right."""
    drawn = [r for r in records if r["goal_set"] == "drawn"]
    if not drawn:
        return ""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in drawn:
        groups[(r["grid"], who(r))].append(r)
    lines = ["Drawn limit sets, per grid (draw_goals: objective, percentile, SLO, power cap and accuracy drop drawn "
             "within the grid's observed ranges; or draw_knife_edges):", "",
             "| grid | surrogate | sets | sets with a feasible configuration | searches | right | exact | "
             "not right (gap to the truth) | scored the old way | rows used: median share (p90, max) |",
             "| --- | --- | ---: | ---: | ---: | --- | --- | --- | --- | --- |"]
    for (grid, surrogate), rs in groups.items():
        sets = {r["goal"]: r for r in rs}
        feasible = sum(1 for r in sets.values() if any(r["truth"].values()))
        lines.append(f"| {grid} | {surrogate} | {len(sets)} | {feasible} | {len(rs)} | {_share(rs, correct)} | "
                     f"{_share(rs, lambda r: r['same'])} | {rest_text(rs)} | {_share(rs, old_way)} | "
                     f"{_rows_share(rs)} |")
    wrong = [r for r in drawn if not correct(r)]
    if wrong:
        lines += ["", "Searches whose answer is not right:", "",
                  "| grid | goal | surrogate | seed | rows | answer | truth | gap | stop |",
                  "| --- | --- | --- | ---: | ---: | --- | --- | ---: | --- |"]
        for r in wrong:
            gap = "-" if r.get("gap_pct") is None else f"{r['gap_pct']:.1f}%"
            lines.append(f"| {r['grid']} | {r['goal']} | {who(r)} | {r['seed']} | {r['rows']} | "
                         f"{_names(r['answer'])} | {_names(r['truth'])} | {gap} | {str(r['stop'])[:120]} |")
    return "\n".join(lines)


def coverage_summary(records: list[dict[str, Any]]) -> str:
    """How often the surrogates' 95% intervals held the grid's rows of the configurations the searches left
    unmeasured (at each search's stop, pooled per grid, surrogate and metric): what the stop's probabilities rest
    on. Calibrated intervals hold 95% of the rows and miss 2.5% beyond the better end."""
    pooled: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in records:
        for col, (inside, rows, better) in r.get("coverage", {}).items():
            c = pooled[(r["grid"], r["surrogate"], col)]
            c[0] += inside
            c[1] += rows
            c[2] += better
            c[3] += 1
    if not pooled:
        return ""
    lines = ["95% intervals of the configurations left unmeasured at the stop, against the grid's rows of them "
             "(pooled over searches; calibrated: 95% inside, 2.5% beyond the better end):", "",
             "| grid | surrogate | metric | searches | rows | inside the 95% interval | beyond the better end |",
             "| --- | --- | --- | ---: | ---: | --- | --- |"]
    for (grid, surrogate, col), (inside, rows, better, n) in sorted(pooled.items()):
        if rows:
            lines.append(f"| {grid} | {surrogate} | {col} | {n} | {rows} | {inside / rows:.1%} | {better / rows:.1%} |")
    return "\n".join(lines)


def _names(answer: dict[str, list[str]]) -> str:
    return "; ".join(", ".join(v) or "none" for v in answer.values()) or "none"


def summary(records: list[dict[str, Any]]) -> str:
    if not records:
        return ""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["grid"], r["goal"], who(r))].append(r)
    lines = ["| grid | rows in full grid | goal | surrogate | rows measured (median, range) | share | the answer's "
             "own rows (a floor) | same answer "
             "(seeds) | right (the truth, or inside its repeat range) | scored the old way (tied in the full grid) | "
             "answer members found | worst gap to the full grid's best "
             "| rows until the answer was reached (median) | prediction error on unmeasured, median % (throughput / "
             "power / latency) |",
             "| --- | ---: | --- | --- | --- | ---: | ---: | --- | --- | --- | ---: | ---: | ---: | --- |"]
    for (grid, goal, surrogate), rs in groups.items():
        n = rs[0]["grid_rows"]
        used = [r["rows"] for r in rs]
        reached = [r["reached_at"] for r in rs if r["reached_at"] is not None]
        errs = []
        for col in ("throughput_ips", "power_w_mean", LATENCY):
            vals = [r["error_pct"][col] for r in rs if col in r["error_pct"]]
            errs.append(f"{statistics.median(vals):.1f}" if vals else "-")
        lines.append(f"| {grid} | {n} | {goal} | {surrogate} | {statistics.median(used):g} ({min(used)}-{max(used)}) "
                     f"| {statistics.median(used) / n:.0%} | {rs[0]['answer_rows']} ({rs[0]['answer_rows'] / n:.0%}) "
                     f"| {sum(r['same'] for r in rs)} of {len(rs)} | "
                     f"{sum(correct(r) for r in rs)} of {len(rs)} | {sum(old_way(r) for r in rs)} of {len(rs)} | "
                     f"{statistics.mean(r['answer_members_found'] for r in rs):.0%} | "
                     f"{_worst_gap(rs)} | "
                     f"{statistics.median(reached) if reached else '-'} | {' / '.join(errs)} |")
    return "\n".join(lines)


def _worst_gap(rs: list[dict[str, Any]]) -> str:
    gaps = [r["gap_pct"] for r in rs if r.get("gap_pct") is not None]
    return f"{max(gaps):.1f}%" if gaps else "-"


if __name__ == "__main__":
    sys.exit(main())
