"""Issue 35 as a user meets it: `edgebench bench --rate` on the null backend's serial device (tests/serial_slo.py:
its streams share one simulated device of 10 ms per inference, ~98/s on this 2-core machine, 100/s nominal).

A row offered more than the device serves, yet within the 15% throughput tolerance, used to be ok: its latency
grew for the whole window. Its backlog (issue 54: scheduled arrivals minus completions, runner.backlog_growth) now
makes it invalid, the reason naming the growth, its interval, served vs offered and the latency trend. Offered 90%,
the row stays ok and carries its trend. (The history below is of issue 35's trend rule, which issue 54 replaced.)

The overloaded row is 2 streams offering 105% of the nominal capacity: over it by more than the host's noise can
hide in one 30 s window. 101.5% is marginal: runner.backlog's simulated queues flag a 1-2% overload in 83-100% of
30 s windows of lognormal 1 ms services, 13-78% with Poisson arrivals, 2-75% of 10 s windows of 20 ms services
(docs/methodology.md's table). 5 streams at 101.5% came out ok in CI at 30 s
with 14.1 ms/s [-0.48, 28.6], after 2 of 5 idle runs here at 20 s (19.5 ms/s [9.7, 29.3]: 194 ms proven against a
median of 217). The rule needs the lower bound at about half the slope (a backlog growing from empty has a median
of about half its growth). Five streams on the flock'ed device are served unevenly (which waiter gets the lock is
a race), so the pooled bins' medians jump between streams that are behind by different amounts; a higher load does
not cure it: with both cores busy, 5 streams at 105% were ok in 1 of 2 runs (47 ms/s [15.9, 79]) and at 108% in 1
of 4 (62 ms/s [25, 99]), while 1 and 2 streams at 105% gave intervals of +-0.4 to +-1.6 ms/s around 59-62 ms/s in
4 of 4 (docs/results/backlog-test-streams.md). How often a marginal overload is flagged is
tests/runner/queue_sim.py's to measure, not this test's. The stable row keeps 5 streams: noise there mostly widens
its interval.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runs import cli, read_rows, shared_cache_env
from serial_slo import serial_options, serial_slo_profile

STREAMS = 5  # the stable row's
OVER_STREAMS = 2  # the overloaded row's: the docstring says why not 5
SLEEP_S = 0.01  # the device's service time: capacity 1 / SLEEP_S = 100 inferences/s nominal, less with overheads
WINDOW_S = 30.0
OVERLOAD = 1.05  # x the nominal capacity: the docstring says why not 1.015


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return shared_cache_env(tmp_path_factory)


def fixed_rate_row(env: dict, tmp_path: Path, load: float, streams: int = STREAMS) -> dict[str, str]:
    """One fixed-rate row of `streams` streams offering `load` x the nominal capacity in all, through the CLI."""
    profile = serial_slo_profile(tmp_path, "backlog", serial_options(tmp_path, SLEEP_S), instances=streams,
                                 warmup_s=0.2, duration_s=WINDOW_S, max_duration_s=WINDOW_S, min_inferences=10)
    rate_hz = load / (SLEEP_S * streams)
    out = cli(env, "bench", "--device", str(profile), "--out", str(tmp_path / "runs"), "--rate", f"{rate_hz:.4f}")
    assert out.returncode == 0, out.stdout + out.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    (row,) = read_rows(run_dir / "results.csv")
    return row


@pytest.mark.slow
def test_a_fixed_rate_row_just_over_capacity_is_invalid_with_its_latency_trend(env, tmp_path):
    row = fixed_rate_row(env, tmp_path, OVERLOAD, OVER_STREAMS)
    offered, served = float(row["offered_rate_hz"]), float(row["achieved_rate_hz"])
    assert offered == pytest.approx(100 * OVERLOAD)
    assert offered / served >= 1.04 and served >= 0.85 * offered  # over capacity, within the 15% tolerance
    said = "; ".join(f"{k}={v}" for k, v in row.items()
                     if k in ("reason", "window_s", "latency_ms_p50") or k.startswith("latency_trend"))
    # a str message is printed whole (a dict's repr was cut off before its bounds when this failed at 20 s)
    assert row["status"] == "invalid", said
    assert "offered rate not sustained" not in row["reason"]  # the tolerance alone passed it (issue 35)
    slope, lo, hi = (float(row[c]) for c in ("latency_trend_ms_per_s", "latency_trend_lo_ms_per_s",
                                             "latency_trend_hi_ms_per_s"))
    assert 0 < lo <= slope <= hi
    assert slope > 25.0  # ms of latency per s: (offered / served - 1) x 1000, ~50 at 5% over, more as the host slows it
    # the verdict is the backlog's (issue 54): scheduled arrivals minus completions, shown to grow at 99%
    growth, g_lo, g_hi = (float(row[c]) for c in ("backlog_growth_per_s", "backlog_growth_lo_per_s",
                                                  "backlog_growth_hi_per_s"))
    assert 0 < g_lo <= growth <= g_hi and growth == pytest.approx(offered - served, rel=0.3)
    assert row["reason"].startswith(f"backlog grows {growth:.3g}/s [{g_lo:.3g}, {g_hi:.3g}] (98%, sign-flip p = ")
    assert f"; {served:.4g}/s served of {offered:.4g}/s offered; latency +{slope:.3g} ms/s" in row["reason"]


@pytest.mark.slow
def test_a_fixed_rate_row_at_ninety_percent_is_ok_and_carries_its_trend(env, tmp_path):
    row = fixed_rate_row(env, tmp_path, 0.90)
    assert row["status"] == "ok", row["reason"]
    assert float(row["achieved_rate_hz"]) == pytest.approx(float(row["offered_rate_hz"]), rel=0.02)
    slope, lo, hi = (float(row[c]) for c in ("latency_trend_ms_per_s", "latency_trend_lo_ms_per_s",
                                             "latency_trend_hi_ms_per_s"))
    assert lo <= slope <= hi
    assert abs(slope) < 2.0  # a stable queue wanders; it does not climb (~50 ms/s at 5% over)
    assert float(row["backlog_growth_lo_per_s"]) <= 0.0 <= float(row["backlog_growth_hi_per_s"])
    assert "latency_trend" not in (row["empty_reasons"] or "")
