"""One step of the search: the next row(s) to measure, or why to stop. Pure: points, measured rows and the goal in,
a decision out (no file, no process), so the CLI driver and the replay evaluation (benchmarks/search_eval.py) run
the same code.

The order of a search:
1. seeds: a few points spread over the space (maximin in the encoder's features; max(MIN_SEEDS, SEED_SHARE of the
   model's points)), one row each;
2. design: a space-filling step (the open point farthest from every measured one, in the encoder's features) while
   - some level of a categorical axis that varies (a precision, a backend, an option set) has no configuration
     measured: a corner such as fp16 is never left unmeasured because the seeds happened to miss it; or
   - the surrogate cannot tell configurations apart (`design.distrust`: its predictions of a metric the answer reads
     nearly equal over the whole space, or its length scales collapsed, or its noise term taking most of the
     variance), up to DESIGN_EXTRA configurations beyond the model's effective features: a flat fit of three
     similar seeds says nothing about the rest of the space, and its narrow intervals must not stop the search;
   and before a stop with no answer, trusted or not, until the design holds that many configurations (this pick
   ranks among other models' picks as an explore pick above its threshold);
3. explore: fit a surrogate of every metric the answer reads on the usable rows, and measure (one row) the point
   whose measurement is most likely to change the answer:
   best under limits: P(meets every limit) x P(beats the current best beyond its 95% interval: a configuration
   inside it would tie, not change the answer), from the predictive normals; a configuration one of whose repeats
   (an invalid one included) already misses a limit can never meet it, and is not a candidate;
   Pareto: P(it changes the front beyond the intervals of the repeats), by sampling its next row from the
   predictive normals: it counts when, at the worse end of the interval of its rows with that one, no member at
   the better end of its own dominates it, or it dominates one so taken (a looser form of the verdicts by which
   the full grid's repeats settle a front; one that could only tie with a member within their intervals would
   leave the front open, not change it; _p_not_dominated);
   best: while P(some candidate changes the answer) = 1 - prod(1 - P_i) >= explore_min_prob, and while nothing
   measured meets every limit (no answer yet), P(some candidate meets every limit) >= NO_ANSWER_SHARE x
   explore_min_prob: a search never stops with "no answer", or with an answer, while the candidates together are
   not unlikely to change it, and a stop with no answer (which loses the whole answer if wrong) allows a five
   times smaller chance; Pareto: while the most likely one has P >= explore_min_prob;
4. check (best, about to stop with an answer): a level of a categorical axis that varies whose usable rows sit at
   fewer than 2 (batch, instances) positions is measured where the answer is (design.thin_level; it outranks
   another model's explore pick, so a multi-model search does not stop before it): one position gives the
   surrogate no curve of that level of its own, and what it says of the level at the answer's batch can be far
   off and narrow (ResNet-18: amp measured once, at b2 2x, was put at 16,895 [13,453, 21,219] img/s at b32; its
   rows there are 23,694-23,770, and the search answered fp16 b32, 4% slower); exploring then goes on;
   and at the stop itself (nothing left to confirm), the unmeasured configuration whose predicted infeasibility
   alone keeps it from changing the answer, above a measured configuration of its level that meets every limit
   (design.decider, DECIDER_CHECK): one outlier repeat of another level can put it far over a limit it meets;
5. confirm: the answer's configurations (the best and the runner-up; the front's members) get every planned repeat,
   so the final answer is measured with repeats (a repeat can move it: then exploring starts again);
6. stop: the answer is settled (no unmeasured point likely to change it, its configurations measured with every
   repeat; the verdict says whether the best is resolved or a tie), or the row budget is spent. The stop line says
   only what holds: with no answer, that none was found and how unlikely the rest is to hold one.
A model whose usable rows (at least MIN_SEEDS, after its seeds) all lack a column its answer reads (a p99 the
windows are too short for, an energy no sampler measured) is not explored further: no row can meet a limit or rank
on a column it lacks, and more rows of the same windows would not fill it; the stop says which column and why.
A point whose rows failed (or were skipped) is not measured again; one whose only rows are invalid stays a
candidate (its next repeat may be valid).

Size: one decision, seeds to stop, with the probabilities that steer it and the stop lines that must say only what
holds beside the rule they describe (the space-filling design and the level check are design.py; the goal is
goal.py).
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from edgebench.answer.best import with_accuracy_drop
from edgebench.answer.candidates import empty_reason
from edgebench.answer.intervals import median_ci
from edgebench.answer.pareto import dominates, interval_end
from edgebench.search.design import decider, distrust, effective_features, farthest, thin_level, uncovered
from edgebench.search.goal import ACCURACY_DROP, Goal, ModelState, current_answer
from edgebench.search.space import Encoder, SearchPoint, spread_seeds
from edgebench.search.surrogate import (
    Fitted,
    fit,
    inverse,
    transform,
)

MIN_SEEDS = 3
# the space-filling design asks for at most this many configurations beyond the model's effective features (numeric
# axes that vary + levels - 1 of each categorical axis that varies) while the surrogate cannot tell them apart
DESIGN_EXTRA = 2
SEED_SHARE = 0.10
EXPLORE_MIN_PROB = 0.05
# a stop with no answer asks that the candidates together be this much less likely (P(some candidate meets every
# limit) < NO_ANSWER_SHARE x explore_min_prob): a wrong "no answer" loses the whole answer, where a wrong stop with
# one loses at most its gap to the best
NO_ANSWER_SHARE = 0.2
# what a settled stop's P is: the surrogates' own estimate, whose rate of wrong stops was measured on replays
# (docs/search.md, "What the stop's P is"; issue 54), never a calibrated probability of being wrong
BELIEF = "by the surrogates' estimate"
NOT_A_RATE = "a model's belief, not a measured error rate"
# before a best-goal stop with an answer, measure the unmeasured configuration whose predicted infeasibility alone
# keeps it from changing the answer (design.decider; issue 54), only where its level's next smaller batch was
# measured and meets every limit (the frontier form). On the H100 set of issue 54 (p90 <= 7.9 ms, 20 seeds) it
# turned 7 wrong stops into 0 for 8.3% more rows; on 300 knife-edge sets 17 into 9 (+6.8% rows). Without the
# frontier restriction it cost 51% more rows on the first 87 knife-edge sets (docs/results/calibration/search-stop.md)
DECIDER_CHECK = True
DECIDER_FRONTIER = True
PARETO_SAMPLES = 256
Z95 = 1.959964


@dataclass
class Pick:
    phase: str  # seed | design | explore | check | confirm
    key: str
    hashes: list[str]  # the planned rows to measure now, in repeat order
    why: str
    p_change: float | None = None
    # explore: what the stop compares with explore_min_prob: p_change, or, while the model has no answer, P(some
    # candidate meets every limit)
    score: float | None = None
    model: str = ""
    no_answer: bool = False  # explore: nothing measured meets every limit yet
    candidates: int = 0  # explore: configurations scored
    # explore (best, with an answer, below its threshold): the check measured instead of stopping, when the stop
    # would rest on a predicted infeasibility (design.decider; DECIDER_CHECK)
    decider: Pick | None = None


@dataclass
class Predicted:
    """One point's predictions (natural units) and what the search made of it."""
    key: str
    model: str
    label: str
    state: str  # measured | predicted | failed | invalid only
    rows_measured: int
    rows_usable: int
    metrics: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # column -> (mean, lo95, hi95)
    p_feasible: float | None = None
    p_change: float | None = None


@dataclass
class Decision:
    pick: Pick | None
    stop: str | None
    answers: dict[str, ModelState]
    predictions: list[Predicted]
    # the stop line the search would have given here without the decider check it measures instead (a replay reads
    # the search without the check from the same run: until this step the two are the same search)
    stop_without_check: str | None = None


def _phi(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _rows_of(p: SearchPoint, rows: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [rows[h] for h in p.hashes if h in rows]


def _exhausted(p: SearchPoint, mine: list[dict[str, Any]]) -> bool:
    return len(mine) >= p.planned_rows or any(r.get("status") in ("failed", "skipped") for r in mine)


def _next_rows(p: SearchPoint, rows: Mapping[str, dict[str, Any]], n: int) -> list[str]:
    return [h for h in p.hashes if h not in rows][:max(n, 0)]


def metrics_of(goal: Goal, state: ModelState | None) -> list[tuple[str, bool]]:
    """(column, higher is better) of every metric the answer reads: the objective(s), then the limits."""
    if goal.mode == "best":
        out = [goal.objective_column()]
        out += [(col, False) for col, _bound in goal.limits.columns() if col != out[0][0]]
        return out
    if state is not None and state.objectives:
        return list(state.objectives)
    return [("throughput_ips", True)]


def decide(points: Sequence[SearchPoint], rows: Mapping[str, dict[str, Any]], goal: Goal, *, budget_left: int,
           seed: int = 0, surrogate: str = "gp", explore_min_prob: float = EXPLORE_MIN_PROB,
           point_of: Mapping[str, str] | None = None, no_answer_min_prob: float | None = None) -> Decision:
    """The next pick or the reason to stop. `rows`: config hash -> measured row (any status) of the points'
    planned rows; `budget_left`: rows the search may still measure; `no_answer_min_prob`: the threshold of a stop
    with no answer (default NO_ANSWER_SHARE x explore_min_prob; at most explore_min_prob)."""
    floors = (explore_min_prob, explore_min_prob * NO_ANSWER_SHARE if no_answer_min_prob is None
              else no_answer_min_prob)
    if not 0.0 < floors[1] <= explore_min_prob:
        raise ValueError(f"no_answer_min_prob {floors[1]:g}: 0 < P <= explore_min_prob ({explore_min_prob:g})")
    point_of = point_of or {h: p.key for p in points for h in p.hashes}
    measured = with_accuracy_drop(list(rows.values()))
    by_hash = {str(r.get("config_hash")): r for r in measured}
    answers = current_answer(goal, measured, point_of)
    predictions: list[Predicted] = []
    best_pick: Pick | None = None
    blocked: list[str] = []  # models that cannot be answered from more rows like theirs, with why
    explored: list[Pick] = []  # each model's explore pick (the most likely to change its answer)
    left_out: dict[str, str] = {}  # model -> its configurations no candidate for want of an accuracy drop, in words
    for model in sorted({p.model for p in points}):
        mine = [p for p in points if p.model == model]
        pick, preds, why, out = _model_step(mine, by_hash, goal, answers.get(model), seed, surrogate,
                                            floors)
        predictions += preds
        if out:
            left_out[model] = out
        if why is not None:
            blocked.append(why)
        if pick is not None and pick.phase == "explore":
            explored.append(pick)
        if pick is not None and (best_pick is None or _priority(pick, floors) > _priority(best_pick, floors)):
            best_pick = pick
    if budget_left <= 0:
        return Decision(None, "budget spent", answers, predictions)
    # the budget keeps what the current answer still lacks of its planned repeats: a search cut by its budget
    # ends on an answer measured with repeats, not on one more explored draw
    if best_pick is not None and best_pick.phase != "confirm" and budget_left <= _confirm_need(points, by_hash,
                                                                                              answers):
        best_pick = _confirm(points, by_hash, answers) or best_pick
    if best_pick is not None and best_pick.phase == "explore" and _below(best_pick, floors):
        confirm = _confirm(points, by_hash, answers)
        if confirm is not None:
            best_pick = confirm
        else:
            change = "change the answer" if goal.mode != "pareto" else (
                "change the front beyond the intervals of the repeats" if any(p.planned_rows > 1 for p in points)
                else "change the front")
            stop = _with(_settled_text(explored, answers, points, by_hash, floors, left_out, change), blocked)
            check = next((p.decider for p in explored if p.decider is not None), None)
            if check is None:
                return Decision(None, stop, answers, predictions)
            check.hashes = check.hashes[:budget_left]
            return Decision(check, None, answers, predictions, stop_without_check=stop)
    if best_pick is None:
        confirm = _confirm(points, by_hash, answers)
        if confirm is None:
            text = (_all_measured_text(answers, points, by_hash, left_out) if not blocked or any(
                st.answer_keys for st in answers.values()) else "; ".join(left_out.values()))
            return Decision(None, "; ".join([t for t in (text, *blocked) if t]), answers, predictions)
        best_pick = confirm
    best_pick.hashes = best_pick.hashes[:budget_left]
    return Decision(best_pick, None, answers, predictions)


def _with(text: str, blocked: list[str]) -> str:
    return "; ".join([text, *blocked])


def _below(pick: Pick, floors: tuple[float, float]) -> bool:
    """Whether an explore pick's score is below its stop threshold: floors = (with an answer, with none)."""
    return (pick.score or 0.0) < floors[1 if pick.no_answer else 0]


def _priority(pick: Pick, floors: tuple[float, float]) -> tuple[int, int, float]:
    # a check outranks any model's explore pick: an explore pick below explore_min_prob would otherwise stop the
    # search (decide) before the check is measured, and the stop line would leave its model out; an explore pick
    # above its threshold outranks one below its own (a model with no answer keeps the search going at a score
    # that would stop a model with one); the design before a stop with no answer (a design pick with no_answer)
    # ranks as such an explore pick: another model's explore picks above their thresholds (higher scores: the
    # no-answer threshold is at most explore_min_prob) and another model's checks go first (under a row budget, a
    # model about to say "no answer" does not spend it before them), an explore pick below its threshold after
    if pick.phase == "design" and pick.no_answer:
        return 1, 1, pick.score or 0.0
    return ({"seed": 4, "design": 3, "check": 2, "explore": 1, "confirm": 0}[pick.phase],
            int(pick.phase == "explore" and not _below(pick, floors)),
            pick.score if pick.score is not None else pick.p_change or 0.0)


def _repeats_text(keys: Sequence[str], points: Sequence[SearchPoint], rows: Mapping[str, dict[str, Any]]) -> str:
    """What the answer's configurations hold of their planned repeats, as it is: 'every planned repeat measured',
    or which are short and why (a failed row ends a configuration)."""
    by_key = {p.key: p for p in points}
    short = []
    for key in keys:
        p = by_key.get(key)
        if p is None:
            continue
        mine = _rows_of(p, rows)
        if len(mine) < p.planned_rows:
            short.append(f"{p.label} {len(mine)} of {p.planned_rows} (a row failed)")
    return "every planned repeat measured" if not short else "every planned repeat measured but " + ", ".join(short)


def _answer_clause(model: str, st: ModelState | None, points: Sequence[SearchPoint],
                   rows: Mapping[str, dict[str, Any]], many: bool) -> str:
    who = f"{model}: " if many else ""
    if st is None or not st.answer_keys:
        return f"{who}no answer: no measured configuration meets every limit"
    return f"{who}the answer's configurations have {_repeats_text(st.answer_keys, points, rows)}"


def _settled_text(explored: list[Pick], answers: Mapping[str, ModelState], points: Sequence[SearchPoint],
                  rows: Mapping[str, dict[str, Any]], floors: tuple[float, float], left_out: Mapping[str, str],
                  change: str = "change the answer") -> str:
    """The stop line when no candidate is likely to change any model's answer: per model, what holds (the answer's
    repeats, or that there is none and how unlikely the unmeasured are to hold one), the most likely change, and
    the configurations left out for want of an accuracy drop (_unjudgeable). `floors`: the stop thresholds (with an
    answer, with none); `change`: what counts as a change, in words."""
    threshold = floors[0]
    many = len(explored) > 1
    parts = []
    for pick in explored:
        name = pick.why.split(":")[0]
        st = answers.get(pick.model)
        if pick.no_answer:
            text = (f"{pick.model + ': ' if many else ''}no answer: no measured configuration meets every limit, "
                    f"and the {pick.candidates} candidate(s) left are unlikely to {BELIEF} (P(any meets every limit) "
                    f"= {pick.score or 0.0:.3f} < {floors[1]:g}, {NOT_A_RATE}; the most likely, {name}, P = "
                    f"{pick.p_change or 0.0:.3f})")
        elif pick.score is not None and pick.score != pick.p_change:
            text = (f"{pick.model + ': ' if many else ''}no configuration left is likely to change the answer "
                    f"{BELIEF} (P(any of the {pick.candidates} changes it) = {pick.score:.3f} < {threshold:g}, "
                    f"{NOT_A_RATE}; the most likely, {name}, P = {pick.p_change or 0.0:.3f}), and "
                    + _answer_clause(pick.model, st, points, rows, False))
        else:
            text = (f"{pick.model + ': ' if many else ''}no configuration left is likely to {change} {BELIEF} "
                    f"(the most likely, {name}, P = {pick.p_change or 0.0:.3f} < {threshold:g}, {NOT_A_RATE}), and "
                    + _answer_clause(pick.model, st, points, rows, False))
        parts.append(text + (f"; {left_out[pick.model]}" if pick.model in left_out else ""))
    explored_models = {p.model for p in explored}
    parts += [f"{m}: {words}" for m, words in sorted(left_out.items()) if m not in explored_models]
    return "settled: " + "; ".join(parts)


def _all_measured_text(answers: Mapping[str, ModelState], points: Sequence[SearchPoint],
                       rows: Mapping[str, dict[str, Any]], left_out: Mapping[str, str]) -> str:
    models = sorted({p.model for p in points})
    clauses = [_answer_clause(m, answers.get(m), points, rows, len(models) > 1) for m in models]
    clauses += [f"{m}: {text}" if len(models) > 1 else text for m, text in sorted(left_out.items())]
    every = "every configuration the answer can hold" if left_out else "every configuration"
    return f"settled: {every} is measured or exhausted; " + "; ".join(clauses)


def _unconfirmed(points: Sequence[SearchPoint], rows: Mapping[str, dict[str, Any]],
                 answers: Mapping[str, ModelState]) -> list[tuple[SearchPoint, int]]:
    """The answers' configurations that still lack planned repeats (model by model, in answer order), each with
    how many of its rows are measured."""
    by_key = {p.key: p for p in points}
    out = []
    for model in sorted(answers):
        for key in answers[model].answer_keys:
            p = by_key.get(key)
            if p is not None and not _exhausted(p, mine := _rows_of(p, rows)):
                out.append((p, len(mine)))
    return out


def _confirm_need(points: Sequence[SearchPoint], rows: Mapping[str, dict[str, Any]],
                  answers: Mapping[str, ModelState]) -> int:
    """Rows the answers' configurations still lack of their planned repeats."""
    return sum(p.planned_rows - done for p, done in _unconfirmed(points, rows, answers))


def _confirm(points: Sequence[SearchPoint], rows: Mapping[str, dict[str, Any]],
             answers: Mapping[str, ModelState]) -> Pick | None:
    """The first configuration of an answer that lacks planned repeats: all of them, now."""
    pending = _unconfirmed(points, rows, answers)
    if not pending:
        return None
    p, done = pending[0]
    return Pick("confirm", p.key, _next_rows(p, rows, p.planned_rows),
                f"{p.label}: in the answer, {done} of {p.planned_rows} planned repeats measured")


def _model_step(points: list[SearchPoint], rows: Mapping[str, dict[str, Any]], goal: Goal,
                state: ModelState | None, seed: int, kind: str, floors: tuple[float, float]
                ) -> tuple[Pick | None, list[Predicted], str | None, str]:
    """(this model's pick, its predictions, why it cannot be answered from more rows like its own: None while it
    can, the configurations left out for want of an accuracy drop, in words: '' when none). `floors`: the stop
    thresholds (with an answer, with none), as decide resolved them."""
    explore_min_prob = floors[0]
    encoder = Encoder(points)
    model = points[0].model
    status = {p.key: _rows_of(p, rows) for p in points}
    usable = {k: [r for r in v if r.get("status") == "ok"] for k, v in status.items()}
    open_points = [p for p in points if not usable[p.key] and not _exhausted(p, status[p.key])]
    n_seeds = max(MIN_SEEDS, math.ceil(SEED_SHARE * len(points)))
    seeds = spread_seeds(points, encoder, n_seeds, random.Random(seed).randrange(len(points)))
    metrics = metrics_of(goal, state)
    fits = _fit_all(points, usable, metrics, encoder, seed, kind)
    preds, normals = _predict(points, status, usable, fits)
    for s in seeds:  # seeds first: a spread start before any model is trusted
        if s in open_points and not status[s.key]:
            return Pick("seed", s.key, _next_rows(s, rows, 1), f"{s.label}: seed {seeds.index(s) + 1} of "
                                                               f"{len(seeds)}", model=model), preds, None, ""
    if (why := _unanswerable(model, usable, metrics)) is not None:
        return None, preds, why, ""
    # never tried: neither measured (any status) nor exhausted
    fresh = [p for p in open_points if not status[p.key]]
    tried = [p for p in points if status[p.key]]
    if (gap := uncovered(points, status, fresh, encoder)) is not None:
        level, p = gap
        return Pick("design", p.key, _next_rows(p, rows, 1),
                    f"{p.label}: space-filling, {level} has no configuration measured yet (every level of every "
                    "axis is measured before the surrogate is trusted)", model=model), preds, None, ""
    untrusted = distrust(fits, points, normals, metrics, encoder)
    design_size = effective_features(points, encoder) + DESIGN_EXTRA
    if untrusted is not None and fresh and len(tried) < design_size:
        p = farthest(fresh, tried, encoder)
        return Pick("design", p.key, _next_rows(p, rows, 1),
                    f"{p.label}: space-filling, the surrogate cannot tell configurations apart yet ({untrusted}; "
                    f"{len(tried)} of up to {design_size} configurations in the design)", model=model), preds, None, ""
    # measured once or twice and outside the answer: one draw can hide a configuration that belongs in it (a slow
    # repeat of the true best); the surrogate, fitted on its rows and the rest, says how likely that is (Pareto:
    # likely only if the worse end of its rows could escape the front, which a dominated row's cannot)
    in_answer = set(state.answer_keys) if state is not None else set()
    retry = [p for p in points if usable[p.key] and p.key not in in_answer and not _exhausted(p, status[p.key])]
    # a configuration one of whose repeats (an invalid one included) misses a limit never meets it (answer.best's
    # every-repeat rule): more of its rows cannot change the answer
    unjudged, left_out = _unjudgeable(points, status, goal)
    candidates = [p for p in open_points + retry
                  if goal.mode != "best" or not (_misses(status[p.key], goal) or p.key in unjudged)]
    if not candidates:
        return None, preds, None, left_out
    scored = []
    by_pred = {p.key: p for p in preds}
    for p in candidates:
        prob, p_feasible = _p_change(p, goal, state, normals, metrics, usable[p.key])
        by_pred[p.key].p_change, by_pred[p.key].p_feasible = prob, p_feasible
        scored.append((prob, p))
    order = {q.key: i for i, q in enumerate(points)}  # ties: the earlier point of the plan's order
    prob, p = max(scored, key=lambda t: (t[0], -order[t[1].key]))
    no_answer = goal.mode == "best" and (state is None or not state.answer_keys)
    score = prob
    if goal.mode == "best":
        # stop only when the candidates together are unlikely to change the answer (to hold one, with none yet):
        # many configurations each a little likely are, together, likely (1 - prod(1 - P_i), as if independent: an
        # upper bound when their errors are positively correlated, as neighbouring configurations' mostly are)
        miss_all = 1.0
        for q, _p in scored:
            miss_all *= 1.0 - q
        score = 1.0 - miss_all
    if no_answer and score < floors[1] and fresh and len(tried) < design_size:
        # about to stop with no answer on models fitted to fewer configurations than the design holds: a few seeds
        # that miss the limit can leave a fit that reverts to their mean everywhere else, narrow enough to call
        # every other configuration infeasible (H200-instances, p95 <= 4.52 ms: two seeds with a p95, 8.7 and
        # 15.3 ms, every b1 configuration put at 11.5 [6.6, 20.1] ms; ort fp16 b1 4x is at 4.5 ms). The design is
        # finished first; it ranks as an explore pick that keeps the search going (_priority)
        far = farthest(fresh, tried, encoder)
        return Pick("design", far.key, _next_rows(far, rows, 1),
                    f"{far.label}: space-filling before a stop with no answer (P(some candidate meets every limit) = "
                    f"{score:.3f}; {len(tried)} of {design_size} configurations in the design)", None, score, model,
                    True, len(scored)), preds, None, left_out
    check_pick: Pick | None = None
    if goal.mode == "best" and state is not None and not no_answer and score < explore_min_prob:
        best = next((p for p in points if p.key == state.answer_keys[0]), None)  # with an answer: one key at least
        check = thin_level(points, status, usable, candidates, best, encoder) if best is not None else None
        if check is not None:
            twin, level, positions = check
            return Pick("check", twin.key, _next_rows(twin, rows, 1),
                        f"{twin.label}: before the stop, {level} is measured where the answer is (its usable rows sit at "
                        f"{positions} batch and instance position(s): the surrogate's {level} there is a guess from "
                        f"the other levels), P(changes the answer) = {by_pred[twin.key].p_change or 0.0:.3f}",
                        by_pred[twin.key].p_change, None, model), preds, None, left_out
        if DECIDER_CHECK and state.to_beat is not None:  # measured at the stop itself (decide), not before it
            beats = {q.key: _p_beats(q, state, normals, metrics) for q in candidates if not status[q.key]}
            feasible = {k: f for k in beats if (f := by_pred[k].p_feasible) is not None}
            dec = decider(points, status, candidates, beats, feasible, explore_min_prob,
                          lambda q: _misses(status[q.key], goal), DECIDER_FRONTIER)
            if dec is not None:
                check_pick = Pick("check", dec.key, _next_rows(dec, rows, 1),
                                  f"{dec.label}: before the stop, measured since only its predicted infeasibility "
                                  f"keeps it from changing the answer (P(meets every limit) = {feasible[dec.key]:.3g}, "
                                  f"P(beats the answer) = {beats[dec.key]:.3f}; its level's next smaller batch "
                                  + ("was measured and meets every limit)" if DECIDER_FRONTIER else "misses no limit)"),
                                  by_pred[dec.key].p_change, None, model)
    what = ("another repeat" if usable[p.key] else "the next repeat (its rows so far are invalid)" if status[p.key]
            else "not measured yet")
    why = f"{p.label}: {what}, P(changes the answer) = {prob:.3f}"
    if no_answer:
        why += f"; no answer yet, P(some candidate meets every limit) = {score:.3f}"
    elif score != prob:
        why += f"; P(some candidate changes it) = {score:.3f}"
    return Pick("explore", p.key, _next_rows(p, rows, 1), why, prob, score, model, no_answer,
                len(scored), check_pick), preds, None, left_out


def _misses(mine: Sequence[dict[str, Any]], goal: Goal) -> bool:
    """Whether a measured repeat (any status; rows carry ACCURACY_DROP) breaks one of the goal's limits."""
    for col, bound in goal.limits.columns():
        if any(r.get(col) is not None and float(r[col]) > bound for r in mine):
            return True
    return False


ACCURACY_GROUP = ("backend", "precision", "options", "devices")  # what a row's accuracy pass depends on (runner.probe)


def _unjudgeable(points: Sequence[SearchPoint], status: Mapping[str, list[dict[str, Any]]],
                 goal: Goal) -> tuple[set[str], str]:
    """Best mode with an accuracy limit: keys of every configuration of a group (backend, precision, options,
    devices) whose rows measured so far (ok or invalid: rows that ran; a failed one may have stopped before its
    pass) all ran without an accuracy pass (`accuracy_samples` empty: `run.accuracy_samples: 0`) and have no
    accuracy drop, with what the stop line says of them ('' when none). The answer leaves out a row with no drop
    (answer.candidates; fp32's is 0 by definition), so none of them can be the answer, while the drop's surrogate,
    fitted on the configurations that have one, would call them feasible and the search would measure them all
    (213 of 504 rows of a synthetic grid, to answer fp32). A group whose pass was asked for and gave no drop (it
    failed, or the outputs hold no class scores) stays a candidate: the answer judges it row by row."""
    if goal.mode != "best" or not any(col == ACCURACY_DROP for col, _bound in goal.limits.columns()):
        return set(), ""

    def group(p: SearchPoint) -> tuple[str, ...]:
        return tuple(p.categories.get(axis, "") for axis in ACCURACY_GROUP)

    seen: dict[tuple[str, ...], bool] = {}  # group -> some row of it has a drop or asked for one
    for p in points:
        g = group(p)
        for r in status[p.key]:
            if r.get("status") in ("ok", "invalid"):
                seen[g] = seen.get(g, False) or r.get(ACCURACY_DROP) is not None or bool(r.get("accuracy_samples"))
    dark = {g for g, judged in seen.items() if not judged}
    keys = {p.key for p in points if group(p) in dark}
    if not keys:
        return set(), ""
    precisions = sorted({g[1] or "(no precision)" for g in dark})
    measured = sum(1 for p in points if p.key in keys and status[p.key])
    return keys, (f"{len(keys)} configuration(s) left out ({measured} measured), {', '.join(precisions)}: their "
                  f"rows ran without an accuracy pass (run.accuracy_samples 0) and have no {ACCURACY_DROP}, so none "
                  "can meet the accuracy limit")


def _unanswerable(model: str, usable: Mapping[str, list[dict[str, Any]]],
                  metrics: list[tuple[str, bool]]) -> str | None:
    """Why the answer cannot come from more rows: a column it reads is empty in every usable row (at least
    MIN_SEEDS of them); None otherwise."""
    ok = [r for rs in usable.values() for r in rs]
    if len(ok) < MIN_SEEDS:
        return None
    for col, _higher in metrics:
        if all(r.get(col) is None for r in ok):
            whys = list(dict.fromkeys(empty_reason(r, col, keep_numbers=True) for r in ok))
            hint = (" (judge another percentile: --slo-percentile; or longer windows: --duration)"
                    if col.startswith("latency_ms_") else "")
            return (f"cannot answer for {model}: {col} is empty in every usable row measured ({len(ok)}; e.g. "
                    f"{'; '.join(whys[:2])}), so no configuration can be judged on it{hint}")
    return None


def _fit_all(points: list[SearchPoint], usable: Mapping[str, list[dict[str, Any]]],
             metrics: list[tuple[str, bool]], encoder: Encoder, seed: int, kind: str) -> dict[str, Fitted]:
    fits: dict[str, Fitted] = {}
    for col, _higher in metrics:
        xs, ys = [], []
        for p in points:
            for r in usable[p.key]:
                if r.get(col) is not None:
                    xs.append(p)
                    ys.append(float(r[col]))
        fitted = fit(col, kind, encoder, xs, ys, seed)
        if fitted is not None:
            fits[col] = fitted
    return fits


Normals = Mapping[str, Mapping[str, tuple[float, float]]]  # metric -> point key -> (mean, sd), modelled space


def _predict(points: list[SearchPoint], status: Mapping[str, list[dict[str, Any]]],
             usable: Mapping[str, list[dict[str, Any]]], fits: Mapping[str, Fitted]
             ) -> tuple[list[Predicted], Normals]:
    """Every point's predictions (natural units, for predictions.csv) and its predictive normals in the modelled
    space (what the scores read): one predict call per metric."""
    out = []
    normals: dict[str, dict[str, tuple[float, float]]] = {}
    for p in points:
        mine = status[p.key]
        state = ("measured" if usable[p.key] else "failed" if any(r.get("status") in ("failed", "skipped")
                                                                   for r in mine)
                 else "invalid only" if mine else "predicted")
        out.append(Predicted(p.key, p.model, p.label, state, len(mine), len(usable[p.key])))
    for col, fitted in fits.items():
        mus, sds = fitted.predict(points)
        normals[col] = {p.key: (mu, sd) for p, mu, sd in zip(points, mus, sds)}
        for pred, mu, sd in zip(out, mus, sds):
            pred.metrics[col] = (inverse(col, mu), inverse(col, mu - Z95 * sd), inverse(col, mu + Z95 * sd))
    return out, normals


def _normal(normals: Normals, col: str, p: SearchPoint) -> tuple[float, float] | None:
    return normals.get(col, {}).get(p.key)


def _p_change(p: SearchPoint, goal: Goal, state: ModelState | None, normals: Normals,
              metrics: list[tuple[str, bool]], measured: Sequence[dict[str, Any]] = ()
              ) -> tuple[float, float | None]:
    """(P that measuring p changes the answer, P that p meets every limit; None in Pareto mode). Pareto reads
    `measured`, p's usable rows (_p_not_dominated)."""
    if goal.mode == "best":
        p_feasible = 1.0
        for col, bound in goal.limits.columns():
            normal = _normal(normals, col, p)
            t = transform(col, bound) if bound > 0 or col == ACCURACY_DROP else None
            if normal is None:
                p_feasible *= 0.5  # nothing measured says either way
            elif t is None:
                p_feasible *= 0.0  # a bound of 0 on a positive metric: nothing meets it
            else:
                p_feasible *= _phi((t - normal[0]) / normal[1])
        if state is None or state.to_beat is None:
            return p_feasible, p_feasible
        col, higher = metrics[0]
        normal = _normal(normals, col, p)
        inc = transform(col, state.to_beat) if state.to_beat > 0 or col == ACCURACY_DROP else None
        if normal is None or inc is None:
            return 0.5 * p_feasible, p_feasible
        z = (normal[0] - inc) / normal[1]
        return p_feasible * _phi(z if higher else -z), p_feasible
    if state is None or not state.front:
        return 1.0, None
    return _p_not_dominated(p, state, normals, metrics, measured), None


def _p_beats(p: SearchPoint, state: ModelState, normals: Normals, metrics: list[tuple[str, bool]]) -> float:
    """P that p's next row beats the answer beyond its interval (state.to_beat), whatever the limits say."""
    col, higher = metrics[0]
    normal = _normal(normals, col, p)
    inc = transform(col, state.to_beat) if state.to_beat is not None and (state.to_beat > 0 or col == ACCURACY_DROP) \
        else None
    if normal is None or inc is None:
        return 0.5
    z = (normal[0] - inc) / normal[1]
    return _phi(z if higher else -z)


def _p_not_dominated(p: SearchPoint, state: ModelState, normals: Normals,
                     metrics: list[tuple[str, bool]], measured: Sequence[dict[str, Any]] = ()) -> float:
    """P that p's next row changes the front beyond the intervals of the repeats: the share of samples in which p, with
    its usable rows (`measured`) and that row, taken at the worse end of their interval (answer.intervals), is
    dominated by no member taken at the better (far) end of its own, or dominates one so taken.

    Those are the two verdicts by which the full grid's repeats settle a front (answer.pareto.membership_settled:
    on the front even at the worse end of its interval; off it, dominated at its better end by another at its worse
    end). A configuration that could only tie with a member within their intervals leaves the front open between
    them, and does not hold the search. The search's form is looser than the grid's, so it explores more, not less
    (with up to 8 rows a configuration, where every interval is [min, max]; from 9 the grid's can be narrower):
    p's interval is over the rows it would have after its next one (its further planned repeats would widen it); a
    member with fewer rows than planned is at the better end of the rows it has (its median with one); only the
    current members are compared.
    What it settles: a configuration measured once and dominated (its row beaten by a member's median) is not given
    another repeat, since the worse end of its rows is no better than that row (with up to 8 rows, where the
    interval is [min, max]); before, the median of its row and one draw was judged, and one lucky draw asked for a
    repeat that could at most tie (13 of the 58 rows of a reference-shape replay: docs/results/search/pareto-noise).
    With no rows yet the sample is the draw itself, as before. The objectives are drawn independently: drawing
    their errors together (a configuration faster than predicted is also lower in latency and energy) moved no
    replay in docs/results/search by a row, so the simpler draw stays."""
    rng = random.Random(zlib.crc32(p.key.encode()))
    mine = []
    for col, higher in metrics:
        normal = _normal(normals, col, p)
        if normal is None:
            return 1.0
        mine.append((normal, higher, col))
    front = [tuple(-v if higher else v for v, (_c, higher) in zip(member, metrics))
             for member in state.front_far]
    have = {col: [float(r[col]) for r in measured if r.get(col) is not None] for _n, _h, col in mine}
    kept = 0
    for _ in range(PARETO_SAMPLES):
        sample = []
        for (mu, sd), higher, col in mine:
            v = inverse(col, rng.gauss(mu, sd))
            if have[col]:  # with no rows yet the draw is its own worse end
                end = interval_end(median_ci([*have[col], v]), higher, "worse")
                v = v if end is None else end
            sample.append(-v if higher else v)
        mine_now = tuple(sample)
        if not any(dominates(m, mine_now) for m in front) or any(dominates(mine_now, m) for m in front):
            kept += 1
    return kept / PARETO_SAMPLES
