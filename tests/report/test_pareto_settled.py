"""Which configurations a grid's own repeats settle on or off its Pareto front (report.pareto.membership_settled):
the search's evaluation counts a front as the grid's within noise when it holds every configuration settled on and
none settled off."""

from __future__ import annotations

from edgebench.answer.intervals import Interval
from edgebench.answer.pareto import THROUGHPUT, ParetoPoint, mark_front, membership_settled

LATENCY = "latency_ms_p90"
OBJECTIVES = [(THROUGHPUT, True), (LATENCY, False)]


def point(tput: tuple[float, float, float], lat: tuple[float, float, float] | float) -> ParetoPoint:
    """A point from (lo, median, hi) per objective; a bare latency float is one repeat (no interval)."""
    lat_iv = Interval(lat, None, None, 1) if isinstance(lat, float) else Interval(lat[1], lat[0], lat[2], 3)
    return ParetoPoint(candidate=None, throughput=Interval(tput[1], tput[0], tput[2], 3),  # type: ignore[arg-type]
                       energy=None, latency=lat_iv)


def test_clear_members_are_settled_on_clear_losers_off_and_overlaps_open():
    fast = point((990, 1000, 1010), (9.9, 10.0, 10.1))  # the fastest, tight: on, whatever the others do
    quick = point((495, 500, 505), (1.98, 2.0, 2.02))  # the lowest latency, tight: on
    loser = point((290, 300, 310), (11.0, 12.0, 13.0))  # slower and later than fast at every end: off
    near = point((900, 980, 985), (10.05, 10.2, 10.5))  # dominated by fast at the medians; its better end escapes
    # fast's worse end (lower latency), fast's better end does not reach past it: open, and fast still settled on
    points = [fast, quick, loser, near]
    mark_front(points, OBJECTIVES)
    assert [p.on_front for p in points] == [True, True, False, False]
    assert membership_settled(points, OBJECTIVES) == [True, True, False, None]


def test_a_member_whose_interval_a_rival_reaches_is_open_not_settled():
    a = point((950, 1000, 1050), (9.0, 10.0, 11.0))
    b = point((980, 990, 1060), (9.5, 10.5, 10.8))  # a dominates b at the medians; b's better end beats a's worse
    assert membership_settled([a, b], OBJECTIVES) == [None, None]


def test_fewer_than_two_objectives_settle_nothing_on():
    a = point((950, 1000, 1050), 10.0)
    assert membership_settled([a], [(THROUGHPUT, True)]) == [False]
