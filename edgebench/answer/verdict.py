"""Whether the best configuration is resolved from the others (issue 54): the exact rank test with the pick of the
best counted, against every other configuration that meets the limits (answer.best picks, ranks and words the
answer; this decides how sure it may say it is).

The best is picked from the data, so a pair's test is two-sided (answer.intervals.picked_confidence: 1 - 2p of the
one-sided test); "resolved" needs it against the runner-up and every other configuration whose repeats can reach
LEVEL_PROB against the best's (an intersection-union test); configurations whose repeats spread more than
SPREAD_ALIKE_RATIO times apart must also be wholly apart. Measured: benchmarks/selection_ties.py,
docs/results/calibration/selection-ties.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from edgebench.answer.candidates import Candidate
from edgebench.answer.intervals import (
    Interval,
    most_picked_confidence,
    percent,
    picked_confidence,
    spread_ratio,
)

LEVEL_PROB = 0.95
# the fewest repeats per side whose exact rank test, two-sided for the pick of the best, can reach LEVEL_PROB
# (4 vs 4 all apart: 1 - 2/70 = 97.1%; 3 vs 3 reaches 1 - 2/20 = 90%); unequal counts reach it below that (3 vs 5:
# 96.4%, 2 vs 8: 95.6%), which the verdict allows (benchmarks/selection_ties.py measures them), but advises 4 each
LEAST_REPEATS_TO_RESOLVE = 4
# The rank test's level assumes that configurations which perform alike vary alike. Two configurations with the same
# median and a 4x-10x wider spread on one side came out "resolved" in up to 9.7% of trials. When the repeats' ranges
# differ more than SPREAD_ALIKE_RATIO times, the best must also be wholly apart from the other (every repeat beyond
# every one of the other's) at >= LEAST_REPEATS_UNALIKE repeats each: with one side's spread far the narrower, a
# false separation needs all of the other's repeats on one side of the common median, 2 x 2^-6 = 3.1% (selection
# counted). Measured on spreads 2x-100x apart: benchmarks/selection_ties.py (docs/results/calibration).
SPREAD_ALIKE_RATIO = 3.0
LEAST_REPEATS_UNALIKE = 6


@dataclass
class Ranked:
    candidate: Candidate
    interval: Interval  # of the objective
    limit_values: dict[str, float]  # column -> worst of every repeat that measured it (invalid ones included)


@dataclass
class Verdict:
    resolved: bool | None  # None: no runner-up, or too few repeats to tell
    text: str
    # the exact rank test's confidence that the best beats the closest other configuration, two-sided since the
    # best was picked from the data (answer.intervals.picked_confidence); resolved needs it >= LEVEL_PROB against
    # every other configuration that meets the limits
    confidence: float | None = None
    more_repeats: int | None = None
    closest: Ranked | None = None  # the other configuration the verdict turns on (the lowest confidence)


def _confidence_key(v: Verdict) -> float:
    return v.confidence if v.confidence is not None else -1.0


def _pair_verdict(best: Ranked, other: Ranked, column: str, higher: bool) -> Verdict:
    """Whether the best's repeats are resolved from one other configuration's, with the pick of the best counted
    (two-sided exact rank test), and when not, why: too few repeats for any outcome to reach LEVEL_PROB (the text
    is then only the repeats behind it: _too_few words the advice), equal medians, or a gap within noise (with
    roughly the repeats that would separate it)."""
    a, b = best.interval, other.interval
    va, vb = best.candidate.values(column), other.candidate.values(column)
    conf = picked_confidence(va, vb, higher)
    behind = f"{best.candidate.repeats_text()} vs {other.candidate.repeats_text()}"
    test = "exact rank test, two-sided as the best was picked from the data"
    ratio = spread_ratio(va, vb)
    if conf is not None and conf >= LEVEL_PROB - 1e-12 and ratio <= SPREAD_ALIKE_RATIO:
        return Verdict(True, f"confidence {percent(conf)} ({test}; {behind})", conf, closest=other)
    if conf is not None and conf >= LEVEL_PROB - 1e-12:
        return _unalike(best, other, va, vb, ratio, conf, higher, behind)
    if most_picked_confidence(len(va), len(vb)) < LEVEL_PROB - 1e-12:
        return Verdict(False, behind, conf, closest=other)
    diff = abs((a.median or 0.0) - (b.median or 0.0))
    n = min(len(va), len(vb))
    if diff == 0 or a.lo is None or a.hi is None or b.lo is None or b.hi is None:
        return Verdict(False, f"tie: the medians are equal ({behind}); more repeats would not separate them", conf,
                       closest=other)
    half = (a.hi - a.lo) / 2 + (b.hi - b.lo) / 2
    needed = max(math.ceil(n * (half / diff) ** 2), n + 1) if half > 0 else n + 1
    more = needed - n
    return Verdict(False, f"tie within noise: confidence {percent(conf or 0.0)} < {LEVEL_PROB:.0%} ({test}; "
                          f"{behind}); roughly {more} more repeat(s) of each (n = {needed}) would separate a gap this "
                          "size, if it is real (interval width ~ 1/sqrt(n))", conf, more, closest=other)


def _unalike(best: Ranked, other: Ranked, va: list[float], vb: list[float], ratio: float, conf: float,
             higher: bool, behind: str) -> Verdict:
    """The verdict when the rank test reaches LEVEL_PROB but the two configurations' repeats spread more than
    SPREAD_ALIKE_RATIO times apart (where the rank test's level does not hold): resolved only when every repeat of
    the best is beyond every one of the other's at >= LEAST_REPEATS_UNALIKE repeats each."""
    apart = min(va) > max(vb) if higher else max(va) < min(vb)
    least = LEAST_REPEATS_UNALIKE
    times = "one side flat" if math.isinf(ratio) else f"{ratio:.1f}x"
    why = (f"their repeats spread {times} apart, where the rank test's level needs alike spreads, so every repeat "
           f"of the best must be beyond every one of the other's at >= {least} repeats each")
    if apart and min(len(va), len(vb)) >= least:
        return Verdict(True, f"confidence {percent(conf)} (exact rank test, two-sided as the best was picked from "
                             f"the data; {why}: it is; {behind})", conf, closest=other)
    more = max(least - min(len(va), len(vb)), 1)
    need = (f"measure {least - min(len(va), len(vb))} more usable repeat(s) of each side with fewer than {least}"
            if min(len(va), len(vb)) < least else
            "the best is not wholly apart from it (more repeats of the wider side make that less likely, not more)")
    return Verdict(False, f"cannot tell at {LEVEL_PROB:.0%} from {behind}: the rank test's confidence is "
                          f"{percent(conf)}, but {why}; {need}", conf, more, closest=other)


def _too_few(best: Ranked, runner: Verdict, column: str) -> Verdict:
    """The verdict when the best cannot reach LEVEL_PROB against the runner-up with the repeats there are: the
    advice brings both to LEAST_REPEATS_TO_RESOLVE usable repeats."""
    least = LEAST_REPEATS_TO_RESOLVE
    asks = []
    sides = [("the best", best)] + ([("the runner-up", runner.closest)] if runner.closest is not None else [])
    for name, ranked in sides:
        have = len(ranked.candidate.values(column))
        if have < least:
            invalid = ranked.candidate.invalid_rows
            asks.append(f"{least - have} more usable repeat(s) of {name}"
                        + (f" ({len(invalid)} of its {len(invalid) + have} were invalid)" if invalid else ""))
    fewest = min(len(r.candidate.values(column)) for _n, r in sides)
    return Verdict(False, f"cannot tell at {LEVEL_PROB:.0%} from {runner.text}: with the best picked from the data a "
                          f"rank test needs more usable repeats to reach {LEVEL_PROB:.0%} ({least} of each; 3 against 5 or 2 against 8 "
                          f"at the fewest; confidence "
                          f"now {percent(runner.confidence or 0.0)}); measure {' and '.join(asks) or 'more repeats'}",
                   runner.confidence, max(least - fewest, 1), closest=runner.closest)


def _not_compared(best: Ranked, left: list[Ranked], column: str) -> str:
    """'; not compared (too few repeats to reach 95% against the best's): 2 configuration(s), ort fp32 b1 cpu (1
    usable repeat), ...' for the configurations the verdict leaves out; '' when none is."""
    if not left:
        return ""
    names = ", ".join(f"{r.candidate.label()} ({r.candidate.repeats_text()})" for r in left[:3])
    more = f" and {len(left) - 3} more" if len(left) > 3 else ""
    return (f"; not compared, too few usable repeats for any outcome to reach {LEVEL_PROB:.0%} against the best's "
            f"{len(best.candidate.values(column))}: {len(left)} configuration(s), {names}{more} (repeat them to "
            "include them)")


def verdict_of(feasible: list[Ranked], column: str, higher: bool) -> Verdict:
    """The best (feasible[0]) against every other configuration that meets the limits and has repeats enough for a
    rank test to reach LEVEL_PROB against the best's: resolved only when each pairwise test is (an
    intersection-union test: the claim "better than all of them" needs each part). Which are compared depends on
    repeat counts only, never on the values, so the claim keeps its level; the others are named as not compared
    (an adaptive search repeats only the best and the runner-up). The runner-up is always compared: with too few
    repeats there, the verdict asks for them. When not resolved, the words name the comparison it turns on: the
    lowest confidence, the runner-up's unless another is closer."""
    if len(feasible) < 2:
        return Verdict(None, "no runner-up: only one configuration meets every limit")
    best, runner = feasible[0], feasible[1]
    n_best = len(best.candidate.values(column))
    reach = [most_picked_confidence(n_best, len(r.candidate.values(column))) >= LEVEL_PROB - 1e-12
             for r in feasible[1:]]
    first = _pair_verdict(best, runner, column, higher)
    if not reach[0]:
        return _too_few(best, first, column)
    compared = [runner] + [r for r, ok in zip(feasible[2:], reach[1:]) if ok]
    left = [r for r, ok in zip(feasible[2:], reach[1:]) if not ok]
    pairs = [first] + [_pair_verdict(best, other, column, higher) for other in compared[1:]]
    aside = _not_compared(best, left, column)
    if all(v.resolved for v in pairs):
        weakest = min(pairs, key=_confidence_key)
        closest = weakest.closest
        versus = ("the runner-up's" if len(pairs) == 1 else
                  f"those of each of the {len(pairs)} other configurations compared (closest: "
                  f"{'the runner-up' if closest is runner or closest is None else closest.candidate.label()})")
        return Verdict(True, f"resolved at {LEVEL_PROB:.0%}: the best's repeats rank above {versus}, "
                             f"{weakest.text}{aside}", weakest.confidence, closest=closest)
    turn = min((v for v in pairs if not v.resolved), key=_confidence_key)
    if turn.closest is not None and turn.closest is not runner:
        turn = replace(turn, text=f"against {turn.closest.candidate.label()} (closer than the runner-up): "
                                  f"{turn.text}")
    return replace(turn, text=turn.text + aside)


def tied_with_best(feasible: list[Ranked], column: str, higher: bool) -> list[Ranked]:
    """The configurations (after the best) the measurements cannot separate from the best: the verdict of best
    against each is not resolved (intervals overlap and P(best better) < LEVEL_PROB, or no interval to tell)."""
    if not feasible:
        return []
    return [r for r in feasible[1:] if not _pair_verdict(feasible[0], r, column, higher).resolved]
