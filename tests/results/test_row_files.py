"""latencies.csv.gz is written by chunks (issue 27: csv.writer + gzip level 9 took ~7 s of a null row's set-up); its
text must stay exactly what csv.writer wrote, so every reader of it (report/, self_audit) reads the same rows."""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass, field

import numpy as np

from edgebench.results import row_files


@dataclass
class _Inst:
    instance: int
    placement: str
    start_ns: np.ndarray
    end_ns: np.ndarray
    issued_ns: np.ndarray | None = None


@dataclass
class _Outcome:
    instances: list
    timelines: list = field(default_factory=list)


def _csv_writer_text(outcome: _Outcome) -> str:
    """What the writer before issue 27 wrote: one csv.writer row per inference."""
    buf = io.StringIO()
    w = csv.writer(buf)
    open_loop = any(i.issued_ns is not None for i in outcome.instances)
    w.writerow(["instance", "placement", "start_ns", "end_ns", *(["issued_ns"] if open_loop else [])])
    for inst in outcome.instances:
        if open_loop and inst.issued_ns is not None:
            for s, e, i in zip(inst.start_ns.tolist(), inst.end_ns.tolist(), inst.issued_ns.tolist()):
                w.writerow([inst.instance, inst.placement, s, e, i])
            continue
        for s, e in zip(inst.start_ns.tolist(), inst.end_ns.tolist()):
            w.writerow([inst.instance, inst.placement, s, e])
    return buf.getvalue()


def test_chunked_latencies_are_byte_for_byte_what_csv_writer_wrote(tmp_path, monkeypatch):
    monkeypatch.setattr(row_files, "LATENCY_CHUNK", 7)  # several chunks, one partial
    rng = np.random.default_rng(1)
    start = np.cumsum(rng.integers(1000, 9000, 50)).astype(np.int64) + 3_097_878_023_277
    odd = "cuda:0,{x}"  # a comma (csv quotes it) and braces (must not reach str.format as a field)
    outcome = _Outcome([_Inst(0, "cpu", start, start + 1300), _Inst(1, odd, start[:23], start[:23] + 5),
                        _Inst(2, "dla0", start[:0], start[:0])])
    row_files.write_row_data(tmp_path, outcome)
    with gzip.open(tmp_path / "latencies.csv.gz", "rt", newline="") as fh:
        text = fh.read()
    assert text == _csv_writer_text(outcome)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 73 and rows[50]["placement"] == odd and int(rows[-1]["end_ns"]) == int(start[22]) + 5


def test_open_loop_rows_keep_their_issued_column(tmp_path):
    start = np.arange(10, dtype=np.int64) * 1000
    outcome = _Outcome([_Inst(0, "cpu", start, start + 7, start + 3)])
    row_files.write_row_data(tmp_path, outcome)
    with gzip.open(tmp_path / "latencies.csv.gz", "rt", newline="") as fh:
        text = fh.read()
    assert text == _csv_writer_text(outcome)
    assert text.splitlines()[1] == "0,cpu,0,7,3"
