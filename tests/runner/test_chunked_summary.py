"""Issue 37: timestamps written and read in bounded chunks give the same row as whole arrays in memory did.

The oracle is the summary code as it was (tests/runner/exact_summary_reference.py). Chunks, counting bins and the
gathering limit are made tiny here, so every path (several chunks per instance, several counting passes, gathering)
runs on a few thousand inferences."""

from __future__ import annotations

import io
import zipfile
from types import SimpleNamespace

import numpy as np
import pytest

from edgebench.results.latency_file import read_latencies, write_latencies
from edgebench.runner import exact_rank, stamps, window_stamps
from edgebench.runner.backlog import window_trend
from edgebench.runner.exact_rank import GroupBounds, numpy_median, numpy_percentile, order_statistics
from edgebench.runner.load import load_fields
from edgebench.runner.metrics import summarize
from edgebench.runner.orchestrator import InstanceResult
from edgebench.runner.stamps import ArrayStamps, FileStamps, StampSink, whole_column
from tests.runner import exact_summary_reference as reference


@pytest.fixture
def tiny_chunks(monkeypatch):
    """Chunks of 1000 inferences, 16 counting bins, gathering at most 40 values: every pass runs many times."""
    monkeypatch.setattr(stamps, "READ_CHUNK", 1000)
    monkeypatch.setattr(exact_rank, "HIST_BINS", 16)
    monkeypatch.setattr(exact_rank, "GATHER_MAX", 40)
    assert window_stamps.stamps.READ_CHUNK == 1000


def closed_loop(rng, n: int, first_ns: int, service_ns: float, cv: float) -> tuple[np.ndarray, np.ndarray]:
    durations = np.maximum(1, rng.lognormal(np.log(service_ns), cv, n)).astype(np.int64)
    durations[n // 3] += 50 * int(service_ns)  # one stall
    gaps = rng.integers(0, 30, n)
    ends = first_ns + np.cumsum(durations + gaps)
    return ends - durations, ends


def written(tmp_path, name: str, columns: list[np.ndarray], capacity: int) -> FileStamps:
    """The columns through a StampSink of `capacity` entries (flushed when full, as the timed loop does)."""
    sink = StampSink(str(tmp_path / name), len(columns), capacity=capacity)
    j = 0
    for k in range(len(columns[0])):
        if j == capacity:
            sink.flush(j)
            j = 0
        for buf, col in zip(sink.buffers, columns, strict=True):
            buf[j] = col[k]
        j += 1
    sink.flush(j)
    sink.close()
    return FileStamps(sink.prefix, len(columns[0]))


def assert_same_summary(new, old) -> None:
    assert (new.window_start_ns, new.window_end_ns, new.inferences, new.samples) == \
           (old.window_start_ns, old.window_end_ns, old.inferences, old.samples)
    assert new.throughput_ips == old.throughput_ips and new.per_instance_ips == old.per_instance_ips
    for key, value in old.latency_ms.items():  # percentiles, min, max: exact; the mean: an exact sum, rounded once
        if key == "mean" or value is None:
            assert new.latency_ms[key] == pytest.approx(value, rel=1e-12, abs=0)
        else:
            assert new.latency_ms[key] == value, key
    assert new.subwindow_ips == pytest.approx(old.subwindow_ips, rel=1e-9)
    assert new.stability_pct == pytest.approx(old.stability_pct, rel=1e-9, abs=1e-9)
    if old.stability_sigma_pct is None:
        assert new.stability_sigma_pct is None
    else:
        assert new.stability_sigma_pct == pytest.approx(old.stability_sigma_pct, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_loop_summary_from_chunk_files_equals_the_whole_array_summary(tmp_path, tiny_chunks, seed):
    rng = np.random.default_rng(seed)
    arrays = [closed_loop(rng, n, first, service, cv)
              for n, first, service, cv in ((5000, 0, 20_000, 0.5), (3700, 3_000_000, 31_000, 1.0), (4100, 0, 9_000, 0.05))]
    files = [written(tmp_path, f"i{i}", list(cols), capacity=777) for i, cols in enumerate(arrays)]
    old = reference.summarize([SimpleNamespace(start_ns=s, end_ns=e) for s, e in arrays], 2, 5)
    new = summarize(files, 2, 5)
    assert old.inferences > 5000 and not new.open_loop
    assert_same_summary(new, old)
    assert_same_summary(summarize([ArrayStamps(s, e) for s, e in arrays], 2, 5), old)


def test_out_of_order_ends_are_sorted_as_before(tiny_chunks):
    """Ends out of order (never a closed loop's) still give the old jitter: sorted in memory first."""
    rng = np.random.default_rng(7)
    start = np.sort(rng.integers(0, 10**9, 3000))
    end = start + rng.integers(0, 3 * 10**6, 3000)
    old = reference.summarize([SimpleNamespace(start_ns=start, end_ns=end)], 1, 5)
    assert_same_summary(summarize([ArrayStamps(start, end)], 1, 5), old)


def fixed_rate(rng, n: int, period_ns: int, service_ns: int, first_ns: int) -> tuple[np.ndarray, ...]:
    arrivals = first_ns + np.arange(n, dtype=np.int64) * period_ns + rng.integers(0, period_ns // 2, n)
    issued, ends = np.empty(n, np.int64), np.empty(n, np.int64)
    free = 0
    for k in range(n):  # one server: an inference starts at its arrival or when the previous one ends
        issued[k] = max(arrivals[k], free)
        ends[k] = free = issued[k] + int(rng.integers(service_ns // 2, service_ns * 3 // 2))
    return arrivals, ends, issued


def test_fixed_rate_summary_trend_and_load_fields_equal_the_whole_array_ones(tmp_path, tiny_chunks):
    rng = np.random.default_rng(3)
    streams = [fixed_rate(rng, 3000, 1_000_000, 1_020_000, 0), fixed_rate(rng, 2800, 1_000_000, 900_000, 400_000)]
    files = [InstanceResult(i, "cpu", None, written(tmp_path, f"s{i}", list(cols), capacity=500))
             for i, cols in enumerate(streams)]
    arrays = [SimpleNamespace(start_ns=a, end_ns=e, issued_ns=s) for a, e, s in streams]
    old = reference.summarize(arrays, 1, 5)
    new = summarize(files, 1, 5)
    assert new.open_loop and old.open_loop
    assert_same_summary(new, old)

    old_trend, new_trend = reference.window_trend(arrays, old), window_trend(files, new)
    assert old_trend is not None and new_trend is not None and old_trend.slope_ms_per_s > 0  # 2% overload grows
    assert (new_trend.bins, new_trend.inferences, new_trend.span_s, new_trend.p50_ms) == \
           (old_trend.bins, old_trend.inferences, old_trend.span_s, old_trend.p50_ms)
    for name in ("slope_ms_per_s", "lo_ms_per_s", "hi_ms_per_s"):  # bin mean times: an exact sum, rounded once
        assert getattr(new_trend, name) == pytest.approx(getattr(old_trend, name), rel=1e-9)

    cfg = SimpleNamespace(rate_hz=1000.0, instances=2, slo_ms=None)  # what load_fields reads of a RunConfig
    fields = load_fields(cfg, files, new)  # type: ignore[arg-type]
    inside = [(a >= new.window_start_ns) & (e <= new.window_end_ns) for a, e, _ in streams]
    queue = np.concatenate([(s - a)[m] / 1e6 for (a, _, s), m in zip(streams, inside, strict=True)])
    service = np.concatenate([(e - s)[m] / 1e6 for (_, e, s), m in zip(streams, inside, strict=True)])
    assert fields["queue_ms_p99"] == float(np.percentile(queue, 99))
    assert fields["service_ms_p50"] == float(np.percentile(service, 50))


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 5000])
def test_order_statistics_and_percentiles_equal_numpy_exactly(tiny_chunks, n):
    rng = np.random.default_rng(n)
    values = np.concatenate([rng.integers(50, 90, n // 2), rng.integers(10**6, 10**9, n - n // 2)])
    rng.shuffle(values)
    groups = rng.integers(0, 3, n)

    def chunks():
        return ((values[a:a + 333], groups[a:a + 333]) for a in range(0, n, 333))

    bounds = {g: GroupBounds(int((groups == g).sum()), int(values[groups == g].min()), int(values[groups == g].max()))
              for g in range(3) if (groups == g).any()}
    ranks = {g: sorted({0, b.count // 2, b.count - 1}) for g, b in bounds.items()}
    found = order_statistics(chunks, ranks, bounds)
    for g, wanted in ranks.items():
        ordered = np.sort(values[groups == g])
        assert [found[(g, r)] for r in wanted] == ordered[wanted].tolist()
    ordered = np.sort(values)
    everything = order_statistics(lambda: ((v, None) for v, _ in chunks()), {0: range(n)},
                                  {0: GroupBounds(n, int(values.min()), int(values.max()))})
    assert [everything[(0, r)] for r in range(n)] == ordered.tolist()
    for p in (50, 90, 95, 99, 99.9, 0, 100):
        assert numpy_percentile(n, p, lambda r: ordered[r] / 1e6) == float(np.percentile(values / 1e6, p))
    assert numpy_median(n, lambda r: ordered[r] / 1e6) == float(np.median(values / 1e6))


def test_latency_file_from_chunk_files_is_byte_for_byte_the_whole_array_one(tmp_path, monkeypatch):
    """latencies.npz written a chunk at a time from the instances' files holds the bytes the whole arrays gave, and
    reads back to them."""
    from edgebench.results import latency_file

    monkeypatch.setattr(stamps, "READ_CHUNK", 1000)
    monkeypatch.setattr(latency_file, "WRITE_CHUNK", 700)
    rng = np.random.default_rng(5)
    closed = [closed_loop(rng, n, 0, 10_000, 0.3) for n in (2500, 1800)]
    files = [InstanceResult(i, f"cpu{i}", None, written(tmp_path, f"c{i}", list(c), capacity=300))
             for i, c in enumerate(closed)]
    arrays = [SimpleNamespace(instance=i, placement=f"cpu{i}", start_ns=s, end_ns=e, issued_ns=None)
              for i, (s, e) in enumerate(closed)]
    write_latencies(tmp_path / "chunked.npz", files)
    back = read_latencies(tmp_path / "chunked.npz")
    np.testing.assert_array_equal(back.start_ns, np.concatenate([s for s, _ in closed]))
    np.testing.assert_array_equal(back.end_ns, np.concatenate([e for _, e in closed]))
    assert back.instance.tolist() == [0] * 2500 + [1] * 1800 and back.issued_ns is None
    assert back.placements == {0: "cpu0", 1: "cpu1"}
    assert npz_members(tmp_path / "chunked.npz") == npz_members_of_arrays(arrays)

    stream = fixed_rate(rng, 900, 1_000_000, 800_000, 0)
    mixed = [InstanceResult(0, "cpu", None, written(tmp_path, "f0", list(stream), capacity=256)),
             SimpleNamespace(instance=1, placement="cpu", start_ns=stream[0][:5], end_ns=stream[1][:5],
                             issued_ns=None)]
    write_latencies(tmp_path / "mixed.npz", mixed)
    back = read_latencies(tmp_path / "mixed.npz")
    assert back.issued_ns is not None and back.issued_ns[:900].tolist() == stream[2].tolist()
    assert back.issued_ns[900:].tolist() == [-1] * 5  # its instance recorded none


def npz_members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def npz_members_of_arrays(instances) -> dict[str, bytes]:
    """The members np.lib.format.write_array gives the whole columns (the layout before issue 37)."""
    columns = {
        "instance": np.repeat(np.asarray([i.instance for i in instances], np.int32), [len(i.start_ns) for i in instances]),
        "start_ns": np.concatenate([i.start_ns for i in instances]),
        "end_ns": np.concatenate([i.end_ns for i in instances]),
        "instances": np.asarray([i.instance for i in instances], np.int32),
        "placements": np.asarray([i.placement for i in instances], dtype=np.str_),
    }
    out = {}
    for name, array in columns.items():
        fh = io.BytesIO()
        np.lib.format.write_array(fh, array, allow_pickle=False)
        out[f"{name}.npy"] = fh.getvalue()
    return out


def test_file_stamps_refuse_files_shorter_than_the_count(tmp_path):
    files = written(tmp_path, "short", [np.arange(10, dtype=np.int64), np.arange(10, dtype=np.int64) + 5], capacity=4)
    assert whole_column(files, "end_ns").tolist() == list(range(5, 15))
    with pytest.raises(OSError, match="fewer than the 11"):
        list(FileStamps(files.prefix, 11).chunks())
