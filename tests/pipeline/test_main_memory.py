"""pipeline/main_memory.py: the harness process's peak resident memory per row (main_rss_mib_max, issue 37)."""

from __future__ import annotations

from edgebench.pipeline.main_memory import RowPeak, peak_rss_mib

ROW_PEAK_SCRIPT = """
import numpy as np
from edgebench.pipeline.main_memory import RowPeak
first = RowPeak()
block = np.ones(200 * 2**20 // 8)  # 200 MiB, every page touched
with_block = first.mib()
del block
second = RowPeak()
print(second.since_row, with_block, second.mib())
"""


def test_the_row_peak_sees_an_allocation_and_a_reset_forgets_an_earlier_one():
    """In a fresh interpreter: a suite's long-lived process (1.7 GB here in CI) may keep freed pages resident."""
    import subprocess
    import sys

    from repo_paths import REPO

    done = subprocess.run([sys.executable, "-c", ROW_PEAK_SCRIPT], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    since_row, with_block, second = done.stdout.split()
    if since_row != "True":  # a kernel that refuses the reset: the peak counts from the process's start
        assert float(second) >= float(with_block)
        return
    assert float(with_block) >= 200.0
    assert float(second) < float(with_block) - 150.0  # the earlier row's 200 MiB is not this row's


def test_without_proc_the_peak_comes_from_getrusage(tmp_path):
    peak = peak_rss_mib(tmp_path)  # no status file here: getrusage's lifetime peak
    assert 10.0 < peak < 64 * 1024
    assert RowPeak(tmp_path).since_row is False  # no clear_refs to write


def test_the_column_is_read_after_the_row_steps_and_left_empty_without_a_per_row_peak(tmp_path):
    """harness_columns reads the peak when it runs (after load and slo, which pass over the timestamps), and gives
    no value where the kernel refused the reset (a peak since the process started is not the row's)."""
    from edgebench.pipeline.row_steps import ROW_STEPS, RowFacts, harness_columns

    names = [s.name for s in ROW_STEPS]
    assert names.index("harness") > max(names.index("load"), names.index("slo"))
    refused = RowFacts(row_dir=tmp_path)
    refused.main_peak = RowPeak(tmp_path)  # no clear_refs here: since_row is False
    assert harness_columns(refused, None) == {}  # type: ignore[arg-type]
    real = RowFacts(row_dir=tmp_path)
    real.main_peak = RowPeak()
    if real.main_peak.since_row:
        assert harness_columns(real, None)["main_rss_mib_max"] > 0  # type: ignore[arg-type]
