"""`edgebench bench --search best|pareto`: the search loop over the ordinary sweep.

Every row it measures is a planned row of the grid, measured by pipeline.sweep.run_sweep exactly as the full sweep
would (same config hash, same row steps), one pick at a time; skipped configurations are written first with their
reasons and are not part of the search. After each pick the measured rows are read back from results.csv and
search.decide chooses the next pick or stops; predictions.csv and search.csv (search.records) record what it
predicted and why it picked. --resume re-reads results.csv and goes on from there: the seeds and every later choice
depend only on the plan, the seed and the rows measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.answer.best import Limits, best_answer
from edgebench.answer.pareto import membership_settled, pareto_fronts
from edgebench.errors import EdgebenchError
from edgebench.pipeline.plan import PlannedRun
from edgebench.pipeline.sweep import run_sweep, sweep_session
from edgebench.report.answer import to_text
from edgebench.report.pareto import pareto_table
from edgebench.results.runs import load_run
from edgebench.search.decide import Decision, decide
from edgebench.search.goal import Goal
from edgebench.search.records import append_step, write_predictions
from edgebench.search.space import SearchPoint, make_point
from edgebench.search.surrogate import sklearn_missing

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.config.profile import Profile
    from edgebench.config.run_config import RunConfig
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.results.store import ResultsStore

PREDICTIONS = "predictions.csv"
STEPS = "search.csv"


@dataclass
class SearchOutcome:
    goal: Goal
    points: list[SearchPoint]
    decision: Decision
    rows_used: int
    budget: int
    planned_rows: int


def goal_of(profile: Profile) -> Goal:
    s = profile.search
    if s.goal is None:
        raise EdgebenchError(f"{profile.source}: search.goal is not set")
    return Goal(s.goal, s.objective, Limits(slo_ms=s.slo_ms, percentile=s.slo_percentile, power_cap_w=s.power_cap_w,
                                             max_accuracy_drop_pct=s.max_accuracy_drop_pct))


def _fields(cfg: RunConfig) -> dict[str, Any]:
    """The configuration's identity (answer.candidates.IDENTITY) as its rows will hold it."""
    return {"model": cfg.model, "backend": cfg.backend, "precision": cfg.precision, "batch": cfg.batch,
            "instances": cfg.instances, "mode": cfg.mode, "placement": cfg.placement, "options": cfg.options_cell,
            "power_mode": cfg.power_mode, "scenario": cfg.scenario,
            "gpu_sharing": cfg.gpu_sharing if cfg.uses_gpu else None, "rate_per_stream_hz": cfg.rate_hz,
            "arrival": cfg.arrival if cfg.rate_hz is not None else None}


def points_from_plan(live: list[PlannedRun]) -> list[SearchPoint]:
    """One point per configuration of the plan: its rows differ only in repeat (in the plan's order)."""
    groups: dict[str, list[RunConfig]] = {}
    for p in live:
        groups.setdefault(dataclasses.replace(p.cfg, repeat=0).config_hash(), []).append(p.cfg)
    points = []
    for cfgs in groups.values():
        cfgs.sort(key=lambda c: c.repeat)
        points.append(make_point(_fields(cfgs[0]), [c.config_hash() for c in cfgs]))
    return points


def run_search(planned: list[PlannedRun], profile: Profile, run_dir: Path, store: ResultsStore, models: ModelCache,
               on_row: Callable[[int, int, dict[str, Any]], None] | None = None,
               on_start: Callable[[int, int, RunConfig], None] | None = None,
               on_step: Callable[[str], None] | None = None,
               idle_power_w: float | None = None) -> SearchOutcome:
    if (missing := sklearn_missing()) is not None:
        raise EdgebenchError(missing)
    goal = goal_of(profile)
    s = profile.search
    live = [p for p in planned if p.skip_reason is None]
    skipped = [p for p in planned if p.skip_reason is not None]
    if skipped:  # written first, with their reasons: not part of the search
        run_sweep(skipped, profile, run_dir, store, models, on_row=on_row, idle_power_w=idle_power_w)
    points = points_from_plan(live)
    by_hash = {p.cfg.config_hash(): p for p in live}
    point_of = {h: pt.key for pt in points for h in pt.hashes}
    labels = {pt.key: (pt.model, pt.label) for pt in points}
    budget = min(s.budget_rows or len(live), len(live))
    steps_path = run_dir / STEPS
    step = len(steps_path.read_text().splitlines()) - 1 if steps_path.exists() else 0  # a resumed search numbers on
    # one session for every pick: cooldown waits against one baseline, a power mode is set and restored once, and
    # the time spent deciding between picks is the next row's between_rows phase
    with sweep_session(live, profile, store) as session:
        while True:
            rows = {str(r["config_hash"]): r for r in _measured(run_dir) if str(r.get("config_hash")) in by_hash}
            decision = decide(points, rows, goal, budget_left=budget - len(rows), seed=s.seed, surrogate=s.surrogate,
                              explore_min_prob=s.explore_min_prob, point_of=point_of)
            write_predictions(run_dir / PREDICTIONS, decision.predictions)
            step += 1
            append_step(steps_path, step, decision, labels, len(rows), budget)
            if decision.pick is None:
                return SearchOutcome(goal, points, decision, len(rows), budget, len(live))
            if on_step is not None:
                on_step(f"search step {step} ({decision.pick.phase}): {decision.pick.why}")
            todo = [by_hash[h] for h in decision.pick.hashes]
            done = len(rows)

            def row_seen(i: int, _total: int, row: dict[str, Any], done: int = done) -> None:
                if on_row is not None:
                    on_row(done + i, budget, row)

            def row_starts(i: int, _total: int, cfg: RunConfig, done: int = done) -> None:
                if on_start is not None:
                    on_start(done + i, budget, cfg)

            written = run_sweep(todo, profile, run_dir, store, models, on_row=row_seen, idle_power_w=idle_power_w,
                                on_start=row_starts, session=session)
            if not written:  # never loop on a pick that leaves no row
                raise EdgebenchError(f"search: the rows of {decision.pick.why.split(':')[0]} were not written to "
                                     f"{run_dir / 'results.csv'}; stopping the search (rows so far are kept)")


def _measured(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of results.csv, typed (none before the first is written)."""
    return load_run(run_dir).rows if (run_dir / "results.csv").is_file() else []


def open_members(fronts: list[Any]) -> list[str]:
    """One line per front whose measured intervals leave configurations' places open (answer.pareto's
    membership_settled): the search stops when no configuration is likely to change the front beyond the
    intervals of the repeats, so a configuration whose interval straddles a member's ties with the front and more
    repeats could move it on or off."""
    lines = []
    for front in fronts:
        settled = membership_settled(front.points, front.objectives)
        open_ = [f"{p.candidate.label()} ({'on' if p.on_front else 'off'})"
                 for p, s in zip(front.points, settled) if s is None]
        if open_:
            lines.append(f"{front.model}: within the intervals, not settled on or off the front (more repeats could "
                         f"move them): {', '.join(open_)}")
    return lines


def search_text(outcome: SearchOutcome, run_dir: Path) -> str:
    """What bench prints at the end of a search: what it measured and why it stopped, the answer (as `edgebench
    best` / the report's Pareto table give it: measured rows only), and what stayed predicted."""
    d = outcome.decision
    measured = [p for p in d.predictions if p.rows_measured]
    lines = [f"edgebench search: {outcome.goal.describe()}",
             f"measured {outcome.rows_used} of {outcome.planned_rows} planned row(s) ({len(measured)} of "
             f"{len(outcome.points)} configurations), budget {outcome.budget} row(s); stopped: {d.stop}"]
    if outcome.goal.mode == "best":
        lines.append(to_text(best_answer([run_dir], outcome.goal.objective, outcome.goal.limits)))
    else:
        fronts = pareto_fronts([load_run(run_dir)])
        lines.append(pareto_table(fronts).to_markdown())
        lines += open_members(fronts)
    in_answer = {k for st in d.answers.values() for k in st.answer_keys}
    if in_answer:
        by_key = {p.key: p for p in d.predictions}
        backing = [f"{by_key[k].label}: {by_key[k].rows_usable} usable of {by_key[k].rows_measured}"
                   for st in d.answers.values() for k in st.answer_keys if k in by_key]
        lines.append(f"every configuration in this answer was measured ({'; '.join(backing)} row(s)); predicted "
                     "values are in predictions.csv only, never in results.csv")
    else:
        lines.append("no measured configuration answers it (above: why); predicted values are in predictions.csv "
                     "only, never in results.csv")
    predicted = [p for p in d.predictions if p.state == "predicted"]
    if predicted:
        likely = max(predicted, key=lambda p: p.p_change or 0.0)
        lines.append(f"not measured: {len(predicted)} configuration(s), predicted in {run_dir / PREDICTIONS}; the most "
                     f"likely to change the answer by the surrogates' estimate: {likely.label} (P = "
                     f"{likely.p_change or 0.0:.3f}, a model's belief, not a measured error rate)")
    return "\n".join(lines)
