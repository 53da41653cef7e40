"""SamplerBase's one-shot guards and PollingSampler's thread handling, which every sampler inherits instead of
copying: start twice, stop before start, stop twice, stop after a failed start; the grid thread lives
exactly between start() and stop(), and the timeline is bracketed by start's and stop's samples."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from edgebench.telemetry import catalog
from edgebench.telemetry.base import Channel, PollingSampler, SamplerBase, Timeline
from edgebench.telemetry.host import HostSampler
from edgebench.telemetry.ina3221 import Ina3221Sampler
from edgebench.telemetry.jetson_throttle import JetsonThrottleSampler
from edgebench.telemetry.tegrastats import TegrastatsSampler

PARKED_S = 3600.0  # the grid never ticks inside a test: only start() and stop() sample


class CountingSampler(PollingSampler):
    """Counts its samples; `fail_begin` makes start() fail before any thread exists."""

    name = "counting"

    def __init__(self, interval_s: float = PARKED_S, fail_begin: bool = False) -> None:
        super().__init__(interval_s)
        self.fail_begin = fail_begin
        self.samples = 0

    def _begin(self) -> Timeline:
        if self.fail_begin:
            raise OSError("device gone")
        tl = Timeline(self.name, interval_s=self.interval_s)
        tl.add_channel(Channel("n", "count"))
        return tl

    def _sample(self) -> None:
        assert self._timeline is not None
        self.samples += 1
        self._timeline.append(time.monotonic_ns(), {"n": float(self.samples)})


def grid_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"edgebench-{name}-sampler" and t.is_alive()]


def test_stop_before_start_is_refused_naming_the_class():
    s = CountingSampler()
    with pytest.raises(RuntimeError, match=r"^CountingSampler\.stop\(\) called before start\(\) or twice$"):
        s.stop()
    assert s.samples == 0


def test_start_twice_and_stop_twice_are_refused_and_the_thread_lives_between():
    s = CountingSampler()
    before = time.monotonic_ns()
    s.start()
    after_start = time.monotonic_ns()
    assert len(grid_threads("counting")) == 1
    with pytest.raises(RuntimeError, match=r"^CountingSampler\.start\(\) called twice$"):
        s.start()
    assert len(grid_threads("counting")) == 1 and s.samples == 1  # the refused start touched nothing
    before_stop = time.monotonic_ns()
    tl = s.stop()
    assert grid_threads("counting") == []
    assert tl.source == "counting" and tl.values["n"] == [1.0, 2.0]  # start's sample, stop's sample
    assert s.start_ns is not None and before <= s.start_ns <= tl.t_ns[0] <= after_start
    assert tl.t_ns[1] >= before_stop  # the last sample closes the window
    with pytest.raises(RuntimeError, match=r"^CountingSampler\.stop\(\) called before start\(\) or twice$"):
        s.stop()
    with pytest.raises(RuntimeError, match=r"called twice"):
        s.start()  # one-shot: a stopped sampler does not start again
    assert s.samples == 2


def test_a_failed_start_leaves_no_thread_and_the_sampler_unusable():
    s = CountingSampler(fail_begin=True)
    with pytest.raises(OSError, match="device gone"):
        s.start()
    assert grid_threads("counting") == []
    with pytest.raises(RuntimeError, match=r"stop\(\) called before start\(\) or twice"):
        s.stop()
    with pytest.raises(RuntimeError, match=r"start\(\) called twice"):
        s.start()
    assert s.samples == 0


def test_the_grid_samples_between_start_and_stop():
    s = CountingSampler(interval_s=0.01)
    s.start()
    deadline = time.monotonic() + 10.0
    while s.samples < 4 and time.monotonic() < deadline:  # no timing luck: wait for the ticks, bounded
        time.sleep(0.01)
    tl = s.stop()
    assert s.samples >= 5  # start's, at least three grid ticks, stop's
    assert tl.values["n"] == [float(i) for i in range(1, s.samples + 1)]
    assert tl.t_ns == sorted(tl.t_ns)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_an_interval_that_is_not_positive_is_refused(bad):
    with pytest.raises(ValueError, match=r"interval_s must be > 0"):
        CountingSampler(interval_s=bad)


# ---------------------------------------------------------------- the real samplers inherit it


@pytest.mark.parametrize("cls", catalog.SAMPLER_CLASSES, ids=lambda c: c.name)
def test_every_sampler_keeps_the_guards_of_the_base(cls, tmp_path):
    assert issubclass(cls, SamplerBase)
    assert "start" not in vars(cls) and "stop" not in vars(cls), f"{cls.__name__} copies the guards again"
    s = cls.create(1.0, tmp_path, ())  # no hardware touched before start()
    with pytest.raises(RuntimeError, match=rf"^{cls.__name__}\.stop\(\) called before start\(\) or twice$"):
        s.stop()
    with pytest.raises(ValueError, match=r"interval_s must be > 0"):
        cls.create(0.0, tmp_path, ())


@pytest.mark.parametrize("make", [
    lambda root: HostSampler(PARKED_S, sysfs_root=root),
    lambda root: Ina3221Sampler(PARKED_S, sysfs_root=root),  # no rails under the root: notes, empty samples
    lambda root: JetsonThrottleSampler(PARKED_S, sysfs_root=root),
], ids=["host", "ina3221", "jetson_throttle"])
def test_polling_samplers_run_one_thread_from_start_to_stop(make, tmp_path: Path):
    s = make(tmp_path)
    s.start()
    assert len(grid_threads(s.name)) == 1
    with pytest.raises(RuntimeError, match=rf"^{type(s).__name__}\.start\(\) called twice$"):
        s.start()
    tl = s.stop()
    assert grid_threads(s.name) == []
    assert tl.source == s.name and len(tl.t_ns) == 2  # start's and stop's samples, the grid parked
    with pytest.raises(RuntimeError, match=r"called before start\(\) or twice"):
        s.stop()


def test_tegrastats_that_cannot_start_cannot_be_stopped(tmp_path):
    s = TegrastatsSampler(interval_s=0.1, binary=str(tmp_path / "no-tegrastats"))
    with pytest.raises(RuntimeError, match="is not an executable file"):
        s.start()
    with pytest.raises(RuntimeError, match=r"^TegrastatsSampler\.stop\(\) called before start\(\) or twice$"):
        s.stop()
    with pytest.raises(RuntimeError, match=r"^TegrastatsSampler\.start\(\) called twice$"):
        s.start()
