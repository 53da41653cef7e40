"""Issue 35 as a user meets it: `edgebench bench --rate` on the null backend's serial device (tests/serial_slo.py:
5 streams share one simulated device of 10 ms per inference, ~98/s on this 2-core machine, 100/s nominal).

Offered 101.5% of the nominal capacity (so at least 101.5% of what the device serves), a 20 s window used to be ok:
served within 15% of offered, while latency grew for the whole window. Its latency trend now makes it invalid, the
reason naming the slope, its interval and served vs offered. Offered 90%, the row stays ok and carries its trend.

The window here is 30 s: at 20 s the row came out ok in 2 of 5 runs on this idle 2-core machine (and twice in CI),
by the rule as written: growth is proven material when its 95% lower bound times the window reaches the median
latency, and a backlog growing from empty has a median of about half its growth, so the lower bound must reach
about half the slope (one run: 19.5 ms/s [9.7, 29.3] over 19.96 s, 194 ms proven against a median of 217 ms). A
longer window narrows the interval; 9 of 9 runs at 30 s were invalid, 3 of them with both cores busy.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runs import cli, read_rows, shared_cache_env
from serial_slo import serial_options, serial_slo_profile

STREAMS = 5
SLEEP_S = 0.01  # the device's service time: capacity 1 / SLEEP_S = 100 inferences/s nominal, less with overheads
WINDOW_S = 30.0


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return shared_cache_env(tmp_path_factory)


def fixed_rate_row(env: dict, tmp_path: Path, load: float) -> dict[str, str]:
    """One fixed-rate row of STREAMS streams offering `load` x the nominal capacity in all, through the CLI."""
    profile = serial_slo_profile(tmp_path, "backlog", serial_options(tmp_path, SLEEP_S), instances=STREAMS,
                                 warmup_s=0.2, duration_s=WINDOW_S, max_duration_s=WINDOW_S, min_inferences=10)
    rate_hz = load / (SLEEP_S * STREAMS)
    out = cli(env, "bench", "--device", str(profile), "--out", str(tmp_path / "runs"), "--rate", f"{rate_hz:.4f}")
    assert out.returncode == 0, out.stdout + out.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    (row,) = read_rows(run_dir / "results.csv")
    return row


@pytest.mark.slow
def test_a_fixed_rate_row_just_over_capacity_is_invalid_with_its_latency_trend(env, tmp_path):
    row = fixed_rate_row(env, tmp_path, 1.015)
    offered, served = float(row["offered_rate_hz"]), float(row["achieved_rate_hz"])
    assert offered == pytest.approx(101.5)
    assert 1.01 <= offered / served < 1.15  # over capacity, yet within the 15% throughput tolerance
    said = "; ".join(f"{k}={v}" for k, v in row.items()
                     if k in ("reason", "window_s", "latency_ms_p50") or k.startswith("latency_trend"))
    # a str message is printed whole (a dict's repr was cut off before its bounds when this failed at 20 s)
    assert row["status"] == "invalid", said
    assert "offered rate not sustained" not in row["reason"]  # the tolerance alone passed it (issue 35)
    slope, lo, hi = (float(row[c]) for c in ("latency_trend_ms_per_s", "latency_trend_lo_ms_per_s",
                                             "latency_trend_hi_ms_per_s"))
    assert 0 < lo <= slope <= hi
    assert slope > 5.0  # ms of latency per s: ~15 at 1.5% over, more as the host's overheads slow the device
    assert lo * float(row["window_s"]) > float(row["latency_ms_p50"])  # the growth it proves is material
    assert row["reason"].startswith(f"latency grows {slope:.3g} ms/s [{lo:.3g}, {hi:.3g}] (95%) over ")
    assert f": {served:.4g}/s served of {offered:.4g}/s offered" in row["reason"]


@pytest.mark.slow
def test_a_fixed_rate_row_at_ninety_percent_is_ok_and_carries_its_trend(env, tmp_path):
    row = fixed_rate_row(env, tmp_path, 0.90)
    assert row["status"] == "ok", row["reason"]
    assert float(row["achieved_rate_hz"]) == pytest.approx(float(row["offered_rate_hz"]), rel=0.02)
    slope, lo, hi = (float(row[c]) for c in ("latency_trend_ms_per_s", "latency_trend_lo_ms_per_s",
                                             "latency_trend_hi_ms_per_s"))
    assert lo <= slope <= hi
    assert abs(slope) < 2.0  # a stable queue wanders; it does not climb (~15 ms/s at 1.5% over)
    assert max(lo, 0.0) * float(row["window_s"]) < float(row["latency_ms_p50"])
    assert "latency_trend" not in (row["empty_reasons"] or "")
