"""A row's busy verdict read back by the answer layer (answer/busy_rows.py): its host_busy column, or for rows written
before it the same rule from the window's CPU means, held to the busy_host step's own reading (telemetry/host_share)."""

from __future__ import annotations

import pytest

from edgebench.answer import busy_rows
from edgebench.telemetry import host_share
from edgebench.telemetry.base import Channel, Timeline

S = 1_000_000_000


def test_row_busy_reads_the_column_or_for_older_rows_the_cpu_means():
    assert busy_rows.row_busy({"host_busy": True, "cpu_taken_by_others_pct": 45.4}, 2) == (
        True, "others took 45% of the CPU its instances could use")
    assert busy_rows.row_busy({"host_busy": True, "others_gpu_pct_mean": 30.0}, None) == (
        True, "30% of its GPU's SM time")
    assert busy_rows.row_busy({"host_busy": False, "cpu_taken_by_others_pct": 2.0}, None)[0] is False
    old = {"placement": "cpu", "threads_per_instance": 2, "cpu_util_pct_mean": 100.0, "proc_cpu_pct_mean": 91.0}
    busy, words = busy_rows.row_busy(old, 2)  # the fp32 row: 91% of one core on a fully busy 2-core host
    assert busy is True and words.startswith("others took 54% of the CPU its instances could use")
    assert busy_rows.row_busy({**old, "proc_cpu_pct_mean": 195.0}, 2)[0] is False
    assert busy_rows.row_busy(old, None)[0] is None  # cores unknown: not read
    assert busy_rows.row_busy({"placement": "cpu"}, 2)[0] is None


@pytest.mark.parametrize("cores, placements, threads, util, proc", [
    (2, ["cpu"], 2, 100.0, 58.0), (2, ["cpu", "cpu"], 1, 99.0, 196.0), (16, ["cpu"], 4, 100.0, 200.0),
    (16, ["cpu"], 4, 100.0, 400.0), (8, ["cuda:0", "cuda:0"], 4, 90.0, 150.0), (8, ["cpu"], 5, 62.5, 150.0),
])
def test_the_row_reading_from_constant_means_is_the_steps_reading(cores, placements, threads, util, proc):
    """With constant samples the mean-based reading (from a row's means) equals the per-sample one (from the timeline)."""
    tl = Timeline("host", interval_s=1.0)
    for name in ("cpu_util_pct", *[f"cpu{i}_util_pct" for i in range(cores)], "proc_cpu_pct"):
        tl.add_channel(Channel(name, "%"))
    for k in range(4):
        tl.append(k * S, {"cpu_util_pct": util, "proc_cpu_pct": proc})
    step = host_share.busy_reading([tl], 0, 3 * S, placements, threads)
    row = {"placement": "+".join(placements), "threads_per_instance": threads, "cpu_util_pct_mean": util,
           "proc_cpu_pct_mean": proc}
    assert step.cpu is not None
    assert busy_rows.row_taken_pct(row, cores) == pytest.approx(step.cpu.taken_pct)
    assert busy_rows.row_busy(row, cores)[0] is step.busy
