"""Others' share of the host over a window (telemetry/host_share.py): known host-sampler samples in, the shares and
the busy verdict out; the threshold's edge."""

from __future__ import annotations

import math

import pytest

from edgebench.telemetry.base import Channel, Timeline
from edgebench.telemetry.host_share import (
    BUSY_SHARE_PCT,
    busy_reading,
    cpu_share,
    demand_cores,
    not_checked_reason,
)

S = 1_000_000_000


def host(cores: int, samples: list[tuple[float, float]], t0_s: int = 1) -> Timeline:
    """A host timeline of `cores` cores: one (cpu_util_pct, proc_cpu_pct) sample per second from t0_s."""
    tl = Timeline("host", interval_s=1.0)
    tl.add_channel(Channel("cpu_util_pct", "%"))
    for i in range(cores):
        tl.add_channel(Channel(f"cpu{i}_util_pct", "%"))
    tl.add_channel(Channel("proc_cpu_pct", "%"))
    for k, (util, proc) in enumerate(samples):
        tl.append((t0_s + k) * S, {"cpu_util_pct": util, "proc_cpu_pct": proc})
    return tl


def test_a_hog_on_a_two_core_host_takes_half_of_what_a_two_thread_instance_could_use():
    # the instance got one core (100% of one), the host was all busy: the other core went to others
    share = cpu_share(host(2, [(100.0, 100.0)] * 5), 0, 10 * S, ["cpu"], 2)
    assert share is not None
    assert (share.cores, share.demand, share.samples) == (2, 2.0, 5)
    assert share.others_pct == pytest.approx(50.0) and share.taken_pct == pytest.approx(50.0)
    assert share.instances_cores == pytest.approx(1.0) and share.material
    assert share.note() == ("busy host: other processes took 50% of the CPU this row's instances could use (1 of 2 "
                            "cores on average, 50% of the host, where the instances could use 2 and got 1): its "
                            "throughput may be cut")


def test_others_on_the_cores_an_instance_leaves_free_take_nothing_from_it():
    # 16 cores, one instance of 4 threads: 12 cores of others fit beside it, 14 take 2 of its 4
    fits = cpu_share(host(16, [(100.0, 400.0)] * 3), 0, 10 * S, ["cpu"], 4)
    assert fits is not None and fits.others_pct == pytest.approx(75.0) and fits.taken_pct == pytest.approx(0.0)
    assert not fits.material
    crowds = cpu_share(host(16, [(100.0, 200.0)] * 3), 0, 10 * S, ["cpu"], 4)
    assert crowds is not None and crowds.taken_pct == pytest.approx(50.0) and crowds.material


def test_a_quiet_host_is_not_busy_and_the_threshold_is_inclusive():
    quiet = cpu_share(host(2, [(99.0, 196.0)] * 4), 0, 10 * S, ["cpu"], 2)
    assert quiet is not None and quiet.taken_pct == pytest.approx(1.0) and not quiet.material
    # taken exactly at the threshold is material, just below is not: 8 cores, an instance of 5 threads got 1.5,
    # others 3.5 cores, of which 0.5 beyond the 3 it leaves free = 10% of its 5
    at = cpu_share(host(8, [(62.5, 150.0)]), 0, 10 * S, ["cpu"], 5)
    below = cpu_share(host(8, [(62.5, 150.5)]), 0, 10 * S, ["cpu"], 5)
    assert at is not None and below is not None
    assert at.taken_pct == pytest.approx(BUSY_SHARE_PCT) and at.material
    assert below.taken_pct < BUSY_SHARE_PCT and not below.material


def test_only_samples_inside_the_window_with_both_channels_count():
    samples = [(100.0, 0.0), (100.0, math.nan), (60.0, 100.0), (60.0, 100.0), (100.0, 0.0)]  # t = 1..5 s
    share = cpu_share(host(2, samples), 2 * S, 4 * S, ["cpu"], 2)  # t = 2 (nan), 3, 4
    assert share is not None and share.samples == 2
    assert share.others_pct == pytest.approx(10.0) and share.taken_pct == pytest.approx(10.0)
    assert cpu_share(host(2, samples), 10 * S, 20 * S, ["cpu"], 2) is None  # no sample in the window


def test_demand_counts_threads_of_cpu_instances_one_per_gpu_instance_at_most_the_cores():
    assert demand_cores(["cpu", "cpu"], 1, 2) == 2.0
    assert demand_cores(["cpu"], 8, 2) == 2.0  # capped at the host's cores
    assert demand_cores(["cuda:0", "cuda:0", "dla0"], 16, 16) == 3.0  # the feeding thread of each
    assert demand_cores(["cpu", "cuda:0"], 4, 16) == 5.0


def gpu_tl(sm_pct: list[float], procs: list[float]) -> Timeline:
    tl = Timeline("nvml", interval_s=1.0)
    tl.add_channel(Channel("others_gpu_procs", "processes"))
    tl.add_channel(Channel("others_gpu_sm_pct", "%"))
    for k, (sm, n) in enumerate(zip(sm_pct, procs, strict=True)):
        tl.append((1 + k) * S, {"others_gpu_sm_pct": sm, "others_gpu_procs": n})
    return tl


def test_the_gpu_share_of_other_processes_makes_a_row_busy_with_its_figure():
    quiet_cpu = host(16, [(10.0, 100.0)] * 3)  # the GPU instance feeds from one core, the host is idle
    busy = busy_reading([gpu_tl([30.0, 40.0, 35.0], [1, 2, 1]), quiet_cpu], 0, 10 * S, ["cuda:0"], 16)
    assert busy.busy is True and busy.gpu_pct == pytest.approx(35.0)
    assert busy.fields()["host_busy"] is True and busy.fields()["cpu_taken_by_others_pct"] == pytest.approx(0.0)
    assert busy.note() == ("busy GPU: other processes took 35% of the SM time of this row's GPU(s) (2 other "
                           "process(es)): its throughput may be cut")
    quiet = busy_reading([gpu_tl([0.0, 5.0, 0.0], [1, 1, 1]), quiet_cpu], 0, 10 * S, ["cuda:0"], 16)
    assert quiet.busy is False and quiet.note() == ""


def test_no_host_timeline_is_not_checked_never_quiet():
    reading = busy_reading([], 0, 10 * S, ["cpu"], 2)
    assert reading.busy is None and reading.fields() == {"others_cpu_pct_mean": None,
                                                         "cpu_taken_by_others_pct": None,
                                                         "others_gpu_pct_mean": None, "host_busy": None}
    assert "no host sampler timeline" in not_checked_reason([gpu_tl([0.0], [0])])
