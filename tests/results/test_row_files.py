"""latencies.npz holds every inference's timestamps (issue 27: as CSV text they cost 1-1.8 s of an 8-instance null
row's set-up); a user reads it with np.load alone, and every reader (report/, self_audit) reads it, and an earlier
edgebench's latencies.csv.gz, through results/latency_file.read_latencies as the same arrays."""

from __future__ import annotations

import csv
import gzip
from dataclasses import dataclass, field

import numpy as np

from edgebench.results import latency_file, row_files


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


def _outcome() -> _Outcome:
    rng = np.random.default_rng(1)
    start = np.cumsum(rng.integers(1000, 9000, 50)).astype(np.int64) + 3_097_878_023_277
    odd = "cuda:0,{x}"  # a comma and braces: kept as they are
    return _Outcome([_Inst(0, "cpu", start, start + 1300), _Inst(1, odd, start[:23], start[:23] + 5),
                     _Inst(2, "dla0", start[:0], start[:0])])


def test_every_inference_is_kept_exactly_and_np_load_alone_reads_it(tmp_path):
    outcome = _outcome()
    row_files.write_row_data(tmp_path, outcome)
    assert not (tmp_path / "latencies.csv.gz").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["latencies.npz"]  # no temp file left
    with np.load(tmp_path / "latencies.npz", allow_pickle=False) as z:
        assert sorted(z.files) == ["end_ns", "instance", "instances", "placements", "start_ns"]
        assert z["start_ns"].dtype == np.int64 and z["instance"].dtype == np.int32
        assert z["instance"].tolist() == [0] * 50 + [1] * 23
        start = outcome.instances[0].start_ns
        assert z["start_ns"].tolist() == start.tolist() + start[:23].tolist()
        assert z["end_ns"].tolist() == (start + 1300).tolist() + (start[:23] + 5).tolist()
        assert z["instances"].tolist() == [0, 1, 2] and z["placements"].tolist() == ["cpu", "cuda:0,{x}", "dla0"]

    lat = latency_file.read_latencies(latency_file.latency_path(tmp_path))
    assert lat.issued_ns is None and lat.placements == {0: "cpu", 1: "cuda:0,{x}", 2: "dla0"}
    assert lat.latency_ms().tolist() == [0.0013] * 50 + [5e-6] * 23
    assert lat.spans_ns() == {0: (int(start[0]), int(start[-1]) + 1300), 1: (int(start[0]), int(start[22]) + 5)}
    s1, e1 = lat.of_instance(1)
    assert s1.tolist() == start[:23].tolist() and (e1 - s1).tolist() == [5] * 23


def test_open_loop_rows_keep_their_issued_column(tmp_path):
    start = np.arange(10, dtype=np.int64) * 1000
    outcome = _Outcome([_Inst(0, "cpu", start, start + 7, start + 3), _Inst(1, "cpu", start[:0], start[:0])])
    row_files.write_row_data(tmp_path, outcome)
    lat = latency_file.read_latencies(tmp_path / "latencies.npz")
    assert lat.issued_ns is not None and lat.issued_ns.tolist() == (start + 3).tolist()
    assert lat.start_ns.tolist() == start.tolist() and lat.end_ns.tolist() == (start + 7).tolist()


def test_an_earlier_edgebenchs_csv_reads_as_the_same_arrays(tmp_path):
    """A run folder from before latencies.npz: its latencies.csv.gz (csv.writer's text) is what latency_path finds
    and read_latencies gives what the npz of the same instances gives."""
    outcome = _outcome()
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    with gzip.open(old / "latencies.csv.gz", "wt", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["instance", "placement", "start_ns", "end_ns"])
        for inst in outcome.instances:
            for s, e in zip(inst.start_ns.tolist(), inst.end_ns.tolist(), strict=True):
                w.writerow([inst.instance, inst.placement, s, e])
    row_files.write_row_data(new, outcome)
    assert latency_file.latency_path(old) == old / "latencies.csv.gz"
    assert latency_file.latency_path(tmp_path / "absent") is None
    a, b = latency_file.read_latencies(old / "latencies.csv.gz"), latency_file.read_latencies(new / "latencies.npz")
    for name in ("instance", "start_ns", "end_ns"):
        assert getattr(a, name).tolist() == getattr(b, name).tolist()
    # the csv names only instances that ran an inference (instance 2 ran none)
    assert a.placements == {0: "cpu", 1: "cuda:0,{x}"} and a.spans_ns() == b.spans_ns()


def test_an_earlier_open_loop_csv_keeps_issued(tmp_path):
    with gzip.open(tmp_path / "latencies.csv.gz", "wt", newline="") as fh:
        fh.write("instance,placement,start_ns,end_ns,issued_ns\r\n0,cpu,0,7,3\r\n0,cpu,1000,1007,1003\r\n")
    lat = latency_file.read_latencies(tmp_path / "latencies.csv.gz")
    assert lat.issued_ns is not None and lat.issued_ns.tolist() == [3, 1003] and lat.end_ns.tolist() == [7, 1007]
