"""The disk-full line states only what was measured (issue 37): a row's size from the row folders written so far
(this run's, else earlier runs' in the same --out folder) or from what the unfinished row had written; kept rows only
when there are some. The real full disk is tests/e2e/test_disk_full.py."""

from __future__ import annotations

import errno
import json
from collections import namedtuple

import pytest

from edgebench.pipeline import disk_full
from edgebench.pipeline.disk_full import disk_full_error, size_text

MIB = 1 << 20
Usage = namedtuple("Usage", "total used free")


@pytest.fixture
def free(monkeypatch):
    """Set the free space disk_full_error reads."""
    def set_free(n: int) -> None:
        monkeypatch.setattr(disk_full.shutil, "disk_usage", lambda _p: Usage(8 * MIB, 8 * MIB - n, n))
    return set_free


def _row(run, name: str, size: int, stamps: dict | None = None) -> None:
    folder = run / "rows" / name
    folder.mkdir(parents=True)
    (folder / "latencies.npz").write_bytes(b"\0" * size)
    if stamps is not None:  # row.json's record of its timestamp chunk files (results/row_files.stamps_record)
        (folder / "row.json").write_text(json.dumps({"stamps": stamps}))


def _error(run, **kw) -> str:
    exc = OSError(errno.ENOSPC, "No space left on device", str(run / "rows" / "0009-x" / "latencies.npz"))
    return str(disk_full_error(exc, run, run / "results.csv", **kw))


def test_rows_of_this_run_give_the_size_and_are_said_to_be_kept(tmp_path, free):
    run = tmp_path / "run"
    _row(run, "0000-a", 6 * MIB)
    _row(run, "0001-b", 18 * MIB)
    (run / "results.csv").write_bytes(b"h" * 3000)  # 2 rows: 1500 bytes a line, its header shared out
    free(2 * MIB)
    text = _error(run, rows_kept=2)
    need = 18 * MIB + 1500
    assert (f"(2.0 MiB free now; a row takes about {size_text(need)} (the largest of this run's 2 row folder(s), and "
            "its results.csv line)); the 2 row(s) in ") in text
    assert f"free at least {size_text(need - 2 * MIB)} more ({size_text(need)} in all), then resume" in text
    assert "1.0 MiB" not in text


def test_before_the_first_row_the_need_is_unknown_and_nothing_is_kept(tmp_path, free):
    run = tmp_path / "run"
    run.mkdir()
    free(2 * MIB)
    text = _error(run, rows_kept=0)
    assert "how much a row takes is not known yet" in text and "MiB needed" not in text
    assert f"no row was written yet ({run}/results.csv does not exist yet)" in text and "kept" not in text
    assert text.endswith(f"free more space, then resume with: edgebench bench --resume {run}")


def test_earlier_runs_or_the_unfinished_row_give_the_size_when_this_run_has_none(tmp_path, free):
    run = tmp_path / "out" / "20260102-run"
    run.mkdir(parents=True)
    _row(tmp_path / "out" / "20260101-run", "0000-a", 7 * MIB)
    free(2 * MIB)
    text = _error(run, rows_kept=0)
    assert f"of 1 row folder(s) of earlier runs in {tmp_path / 'out'}" in text and "a row takes about 7.0 MiB" in text
    text = _error(run, rows_kept=0, unfinished_bytes=9 * MIB)  # the unfinished row wrote more than any earlier one
    assert "a row takes more than 9.0 MiB (the unfinished row had written that much when it stopped; the largest" in text
    assert "free at least 7.0 MiB more (9.0 MiB in all)" in text


def test_a_need_below_the_free_space_is_not_told_as_enough(tmp_path, free):
    run = tmp_path / "run"
    _row(run, "0000-a", 1 * MIB)
    (run / "results.csv").write_bytes(b"h" * 100)
    free(4 * MIB)
    text = _error(run, rows_kept=1)
    assert "free more than 1.0 MiB: 4.0 MiB is free now, yet the unfinished row did not fit" in text


def test_timestamp_files_a_row_held_on_the_results_disk_count_toward_its_need(tmp_path, free):
    """A row's timestamp chunks are removed once its files are written, but while it ran they took room on the
    results disk (the run folder's work root when the temp folder is RAM): the need counts them; chunks that were
    on another disk (the temp folder) do not."""
    run = tmp_path / "run"
    _row(run, "0000-a", 6 * MIB, stamps={"bytes": 20 * MIB, "on_results_disk": True})
    _row(run, "0001-b", 18 * MIB, stamps={"bytes": 40 * MIB, "on_results_disk": False})
    (run / "results.csv").write_bytes(b"h" * 3000)
    free(2 * MIB)
    text = _error(run, rows_kept=2)
    row_json = len(json.dumps({"stamps": {"bytes": 20 * MIB, "on_results_disk": True}}))
    need = 6 * MIB + row_json + 20 * MIB + 1500  # row 0000: 26 MiB with its chunks, over row 0001's 18
    assert (f"a row takes about {size_text(need)} (the largest of this run's 2 row folder(s), "
            f"{size_text(6 * MIB + row_json)} kept and 20.0 MiB of timestamp files while it ran, and its results.csv "
            "line)") in text, text
    assert f"free at least {size_text(need - 2 * MIB)} more" in text



def test_a_rows_stamps_record_says_whether_its_timestamp_files_shared_the_results_disk(tmp_path):
    from types import SimpleNamespace

    from edgebench.file_sizes import device_of
    from edgebench.results.row_files import stamps_record

    here = device_of(tmp_path)
    assert here is not None
    assert stamps_record(tmp_path, SimpleNamespace(stamps_bytes=123, stamps_dev=here)) == \
        {"bytes": 123, "on_results_disk": True}
    assert stamps_record(tmp_path, SimpleNamespace(stamps_bytes=123, stamps_dev=here + 1)) == \
        {"bytes": 123, "on_results_disk": False}  # another file system (a temp folder elsewhere)
    assert stamps_record(tmp_path, SimpleNamespace(stamps_bytes=0, stamps_dev=None)) == \
        {"bytes": 0, "on_results_disk": False}  # no work folder measured
    # a row folder not made yet (an instance failed first): the disk of the folder it would be in
    assert stamps_record(tmp_path / "rows" / "0000-x", SimpleNamespace(stamps_bytes=5, stamps_dev=here)) == \
        {"bytes": 5, "on_results_disk": True}
