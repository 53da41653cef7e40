"""Arrival models of open-loop streams (runner/arrivals.py): each model's schedule, its seed, and what a real
fixed-rate row records (null backend, spawned instances)."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.backends.null import NullBackend
from edgebench.config.run_config import RunConfig
from edgebench.errors import ConfigError
from edgebench.models.inputs import InputDesc
from edgebench.models.model_artifact import ModelArtifact
from edgebench.pipeline.row_steps import RowFacts, load_columns
from edgebench.results.row import Row, why_empty
from edgebench.runner.arrivals import StreamSchedule, arrival_seed_of, first_offsets_ns
from edgebench.runner.load import arrival_fields
from edgebench.runner.metrics import summarize
from edgebench.runner.orchestrator import (
    STREAM_ORIGIN_LEAD_NS,
    InstanceResult,
    late_stream_start,
    run_instances,
)
from edgebench.runner.stamps import ArrayStamps

PERIOD_NS = 10_000_000  # 100 arrivals/s per stream


def offsets(arrival: str, index: int, instances: int, seed: int, count: int, block: int = 1000) -> np.ndarray:
    """The first `count` offsets of one stream, taken in blocks as the worker takes them."""
    s = StreamSchedule(arrival, index, instances, PERIOD_NS, seed)
    parts = [s.take(min(block, count - k)) for k in range(0, count, block)]
    return np.concatenate(parts)


def test_even_spreads_the_streams_over_one_period_then_one_arrival_every_period():
    assert first_offsets_ns("even", 4, PERIOD_NS, 123) == [0, 2_500_000, 5_000_000, 7_500_000]
    x = offsets("even", 3, 4, 123, 5000, block=700)
    assert x[0] == 7_500_000 and set(np.diff(x).tolist()) == {PERIOD_NS}


def test_aligned_starts_every_stream_at_once():
    firsts = first_offsets_ns("aligned", 8, PERIOD_NS, 5)
    assert firsts == [0] * 8
    assert np.array_equal(offsets("aligned", 0, 8, 5, 100), offsets("aligned", 7, 8, 9, 100))
    assert set(np.diff(offsets("aligned", 2, 8, 5, 100)).tolist()) == {PERIOD_NS}


def test_random_phases_are_uniform_in_one_period_deterministic_for_a_seed_and_fresh_per_repeat():
    seeds = [arrival_seed_of(0, r) for r in range(3)]
    assert len(set(seeds)) == 3 and all(0 <= s < 2**32 for s in seeds)
    assert arrival_seed_of(0, 1) == arrival_seed_of(0, 1) and arrival_seed_of(1, 0) != arrival_seed_of(0, 0)
    draws = [first_offsets_ns("random", 16, PERIOD_NS, s) for s in seeds]
    assert draws[0] == first_offsets_ns("random", 16, PERIOD_NS, seeds[0])  # the recorded seed reproduces them
    assert draws[0] != draws[1] != draws[2]
    assert all(0 <= p < PERIOD_NS for d in draws for p in d)
    assert draws[0] != first_offsets_ns("even", 16, PERIOD_NS, seeds[0])
    # uniform over the period: 2000 phases fill each tenth of it about equally
    phases = np.array(first_offsets_ns("random", 2000, PERIOD_NS, 7))
    per_tenth = np.bincount(phases * 10 // PERIOD_NS, minlength=10)
    assert per_tenth.min() > 150 and per_tenth.max() < 250, per_tenth
    # after the phase, one arrival every period
    x = offsets("random", 5, 16, seeds[0], 3000, block=999)
    assert x[0] == draws[0][5] and set(np.diff(x).tolist()) == {PERIOD_NS}


def test_poisson_gaps_are_exponential_with_the_stream_rate_and_deterministic_for_a_seed():
    x = offsets("poisson", 2, 4, 42, 20_000, block=4096)
    gaps = np.diff(np.concatenate([[0], x]))
    assert np.all(gaps >= 0)
    assert gaps.mean() == pytest.approx(PERIOD_NS, rel=0.03)  # mean rate = rate_hz
    assert gaps.std() == pytest.approx(PERIOD_NS, rel=0.05)  # exponential: std = mean (a fixed period has 0)
    assert np.mean(gaps < PERIOD_NS) == pytest.approx(1 - np.exp(-1), abs=0.02)  # P(gap < mean) = 1 - 1/e
    assert np.array_equal(x, offsets("poisson", 2, 4, 42, 20_000, block=333))  # blocks do not change the draws
    assert not np.array_equal(x[:100], offsets("poisson", 3, 4, 42, 100))  # each stream its own process
    assert not np.array_equal(x[:100], offsets("poisson", 2, 4, 43, 100))


def test_an_unknown_arrival_model_is_refused():
    with pytest.raises(ValueError, match="not one of random, even, poisson, aligned"):
        StreamSchedule("bursty", 0, 1, PERIOD_NS, 0)
    with pytest.raises(ConfigError, match="arrival"):
        cfg(1, 100.0, "bursty")


def cfg(instances: int, rate_hz: float | None, arrival: str, **kw) -> RunConfig:
    base = dict(model="null", backend="null", precision="fp32", batch=1, placements=("cpu",) * instances,
                warmup_s=0.05, duration_s=0.6, max_duration_s=0.6, min_inferences=1, load_timeout_s=60.0,
                barrier_timeout_s=30.0, collect_timeout_s=30.0, rate_hz=rate_hz, accuracy_samples=0,
                arrival=arrival, options=(("sleep_s", 0.0005),))
    base.update(kw)
    return RunConfig(**base)


def test_the_row_records_the_arrival_model_and_its_seed():
    assert arrival_fields(cfg(1, None, "random")) == {"arrival": "closed", "arrival_seed": None}
    assert arrival_fields(cfg(1, 30.0, "even")) == {"arrival": "even", "arrival_seed": None}
    assert arrival_fields(cfg(1, 30.0, "aligned")) == {"arrival": "aligned", "arrival_seed": None}
    assert arrival_fields(cfg(1, 30.0, "random", repeat=2)) == {"arrival": "random", "arrival_seed": arrival_seed_of(0, 2)}
    assert arrival_fields(cfg(1, 30.0, "poisson", seed=7)) == {"arrival": "poisson", "arrival_seed": arrival_seed_of(7, 0)}
    # the load step writes them even for a row whose instances never measured
    row = Row()
    row.put("load", load_columns(RowFacts(cfg=cfg(2, 30.0, "random", repeat=1)), row))
    assert row["arrival"] == "random" and row["arrival_seed"] == arrival_seed_of(0, 1)
    # even / aligned rows say why their seed is empty
    assert "arrival_seed: aligned arrivals draw nothing" in (why_empty({"arrival": "aligned"}, [], None) or "")
    assert "arrival_seed" not in (why_empty({"arrival": "closed"}, [], None) or "")


def test_the_arrival_model_is_part_of_what_is_measured_and_even_keeps_its_old_hash():
    hashes = {a: cfg(2, 30.0, a).config_hash() for a in ("random", "even", "poisson", "aligned")}
    assert len(set(hashes.values())) == 4
    assert cfg(2, None, "random").config_hash() == cfg(2, None, "even").config_hash()  # a closed loop has none
    assert "/rate=30/poisson" in cfg(2, 30.0, "poisson").label()


def run_null(c: RunConfig):
    artifact = ModelArtifact(model="null", precision="fp32", onnx_path="unused.onnx", sha256="0" * 64,
                             inputs=(InputDesc("input", shape=(3, 4, 4)),))
    outcome = run_instances(c, NullBackend().prepare(c, artifact, cache=None))  # type: ignore[arg-type]
    assert outcome.status == "ok", outcome.reason
    return outcome


def test_spawned_streams_follow_their_arrival_model():
    """Real instances (null backend, 0.5 ms service, 4 streams of 100/s, one process each): the recorded scheduled
    arrivals keep each model's shape exactly across processes, because every stream counts from the one origin the
    start signal carries (the window's start plus STREAM_ORIGIN_LEAD_NS), not from its own clock on waking."""
    for arrival in ("even", "aligned", "random", "poisson"):
        outcome = run_null(cfg(4, 100.0, arrival))
        starts = [r.start_ns for r in outcome.instances]
        assert all(len(s) >= 20 for s in starts), arrival
        gaps = np.concatenate([np.diff(s) for s in starts])
        if arrival == "poisson":
            assert gaps.std() > 0.3 * PERIOD_NS  # exponential gaps, not a fixed period
        else:
            assert set(gaps.tolist()) == {PERIOD_NS}, arrival
        origin = outcome.stream_origin_ns
        assert origin == outcome.measure_start_ns + STREAM_ORIGIN_LEAD_NS
        assert outcome.measure_end_ns - origin >= 0.6e9  # the window's length counts from the first possible arrival
        firsts = [int(s[0]) - origin for s in starts]
        assert firsts == first_offsets_ns(arrival, 4, PERIOD_NS, arrival_seed_of(0, 0)), arrival
        summary = summarize(outcome.instances, 1, 5)
        assert summary.inferences > 0
    # the shapes themselves: 0, 2.5, 5, 7.5 ms; one instant
    assert first_offsets_ns("even", 4, PERIOD_NS, 0) == [0, 2_500_000, 5_000_000, 7_500_000]
    assert first_offsets_ns("aligned", 4, PERIOD_NS, 0) == [0, 0, 0, 0]


def test_streams_in_one_process_share_the_origin_too():
    """mode streams: the instances are threads of one worker, which passes the start signal's origin on to each."""
    outcome = run_null(cfg(3, 100.0, "even", mode="streams"))
    origin = outcome.stream_origin_ns
    assert origin == outcome.measure_start_ns + STREAM_ORIGIN_LEAD_NS
    assert [int(r.start_ns[0]) - origin for r in outcome.instances] == first_offsets_ns("even", 3, PERIOD_NS, 0)
    assert len({r.pid for r in outcome.instances}) == 1  # one process


def test_a_stream_whose_worker_woke_after_the_origin_is_named_in_a_note():
    def stream(instance: int, late_ns: int) -> InstanceResult:
        due = np.array([1_000_000_000, 1_010_000_000], dtype=np.int64)
        return InstanceResult(instance, "cpu", None, ArrayStamps(due, due + 500_000, due + np.array([late_ns, 0])))

    on_time = [stream(0, 100_000), stream(1, STREAM_ORIGIN_LEAD_NS)]
    assert late_stream_start(on_time, origin_ns=1) == []
    (note,) = late_stream_start([*on_time, stream(2, 7_300_000)], origin_ns=1)
    assert note.startswith("stream start: instance 2 began its first arrival 7.3 ms after it was due")
    assert late_stream_start([stream(0, 7_300_000)], origin_ns=0) == []  # a closed loop has no shared origin
