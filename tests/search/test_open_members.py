"""The end of a Pareto search names the configurations whose place on the front its intervals leave open: the
search counts a configuration inside a member's intervals as a tie, so the printed front is settled only up to
those."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from edgebench.answer.intervals import Interval
from edgebench.answer.pareto import THROUGHPUT, ParetoFront, ParetoPoint

pytest.importorskip("sklearn", reason="edgebench.search imports its surrogates' module (scikit-learn)")

from edgebench.search.driver import open_members  # noqa: E402

LATENCY = "latency_ms_p90"


@dataclass
class Named:
    name: str

    def label(self) -> str:
        return self.name


def point(name: str, tput: tuple[float, float, float], lat: tuple[float, float, float]) -> ParetoPoint:
    return ParetoPoint(candidate=Named(name), throughput=Interval(tput[1], tput[0], tput[2], 3),  # type: ignore[arg-type]
                       energy=None, latency=Interval(lat[1], lat[0], lat[2], 3))


def front_of(*points: ParetoPoint) -> ParetoFront:
    front = ParetoFront("net", "setup", LATENCY, list(points), objectives=[(THROUGHPUT, True), (LATENCY, False)])
    front.mark()
    return front


def test_configurations_inside_a_members_intervals_are_named_with_their_side():
    fast = point("fp16 b64", (990, 1000, 1010), (9.9, 10.0, 10.1))
    quick = point("fp16 b1", (495, 500, 505), (1.98, 2.0, 2.02))
    near = point("amp b64", (900, 980, 985), (10.05, 10.2, 10.5))  # behind fp16 b64 at the medians only
    loser = point("fp32 b64", (290, 300, 310), (11.0, 12.0, 13.0))
    (line,) = open_members([front_of(fast, quick, near, loser)])
    assert line.startswith("net: within the intervals, not settled on or off the front")
    assert line.endswith(": amp b64 (off)")


def test_a_front_its_intervals_settle_adds_no_line():
    fast = point("fp16 b64", (990, 1000, 1010), (9.9, 10.0, 10.1))
    quick = point("fp16 b1", (495, 500, 505), (1.98, 2.0, 2.02))
    assert open_members([front_of(fast, quick)]) == []
