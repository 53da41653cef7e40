"""pipeline/main_memory.py: the harness process's peak resident memory per row (main_rss_mib_max, issue 37)."""

from __future__ import annotations

import numpy as np

from edgebench.pipeline.main_memory import RowPeak, peak_rss_mib


def test_the_row_peak_sees_an_allocation_and_a_reset_forgets_an_earlier_one():
    first = RowPeak()
    block = np.ones(200 * 2**20 // 8)  # 200 MiB, every page touched
    with_block = first.mib()
    del block
    second = RowPeak()
    if not second.since_row:  # a kernel that refuses the reset: the peak counts from the process's start
        assert second.mib() >= with_block
        return
    assert with_block >= 200.0
    assert second.mib() < with_block - 150.0  # the earlier row's 200 MiB is not this row's


def test_without_proc_the_peak_comes_from_getrusage(tmp_path):
    peak = peak_rss_mib(tmp_path)  # no status file here: getrusage's lifetime peak
    assert 10.0 < peak < 64 * 1024
    assert RowPeak(tmp_path).since_row is False  # no clear_refs to write
