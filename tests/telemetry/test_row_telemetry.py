"""Row fields from several samplers' timelines: which sampler wins, throttling, idle baseline."""

from __future__ import annotations

import pytest

from edgebench.config.profile import load_profile
from edgebench.pipeline.idle import idle_baseline
from edgebench.telemetry.base import Channel, Timeline
from edgebench.telemetry.row_fields import telemetry_fields

S = 1_000_000_000


def gpu_timeline(throttle_mask: int) -> Timeline:
    tl = Timeline("nvml", interval_s=0.5)
    for ch in (Channel("power_total_mw", "mW"), Channel("energy_total_mj", "mJ", "counter"),
               Channel("gpu_util_pct", "%"), Channel("temperature_c", "C"), Channel("sm_clock_mhz", "MHz"),
               Channel("throttle_reasons", "bitmask")):
        tl.add_channel(ch)
    for i in range(5):  # 0..2 s, a steady 100 W: the counter grows 50 J every 0.5 s
        tl.append(i * S // 2, {"power_total_mw": 100_000.0, "energy_total_mj": 50_000.0 * i,
                               "gpu_util_pct": 80.0 + i, "temperature_c": 50.0 + i, "sm_clock_mhz": 1980.0,
                               "throttle_reasons": float(throttle_mask if i == 2 else 0)})
    return tl


def host_timeline() -> Timeline:
    tl = Timeline("host", interval_s=0.5, notes=["RAPL not readable: test"])
    tl.add_channel(Channel("cpu_util_pct", "%"))
    for i in range(5):
        tl.append(i * S // 2, {"cpu_util_pct": 10.0})
    return tl


def test_first_sampler_with_power_fills_the_row_and_others_add_their_fields():
    fields = telemetry_fields([gpu_timeline(0), host_timeline()], 0, 2 * S)
    assert fields["energy_j"] == pytest.approx(200.0)
    assert fields["power_w_mean"] == pytest.approx(100.0)
    assert fields["energy_source"] == "counter:nvml"
    assert fields["cpu_util_pct_mean"] == pytest.approx(10.0)
    assert fields["gpu_util_pct_mean"] == pytest.approx(82.0)
    assert fields["gpu_temp_c_max"] == 54.0
    assert fields["throttled"] is False and fields["throttle_reasons"] is None
    assert fields["telemetry_source"] == "nvml+host"


def test_throttling_inside_the_window_is_flagged_with_its_reason():
    import pynvml

    fields = telemetry_fields([gpu_timeline(pynvml.nvmlClocksThrottleReasonSwPowerCap)], 0, 2 * S)
    assert fields["throttled"] is True and "sw_power_cap" in fields["throttle_reasons"]
    # the same sample outside the window does not count
    late = telemetry_fields([gpu_timeline(pynvml.nvmlClocksThrottleReasonSwPowerCap)], int(1.5 * S), 2 * S)
    assert late["throttled"] is False


def test_host_only_has_no_power_and_says_why():
    fields = telemetry_fields([host_timeline()], 0, 2 * S)
    assert fields["power_w_mean"] is None and fields["energy_j"] is None
    assert fields["energy_source"].startswith("none:") and "RAPL not readable" in fields["energy_source"]


def test_idle_baseline_off_or_unmeasurable_is_stated():
    prof = load_profile("smoke")
    watts, why = idle_baseline(prof)
    assert watts is None and "idle_baseline_s = 0" in why
    prof = prof.with_overrides("telemetry", idle_baseline_s=0.3)
    watts, why = idle_baseline(prof)
    import os

    if not os.access("/sys/class/powercap/intel-rapl:0/energy_uj", os.R_OK):
        assert watts is None and "no power measurable" in why
    else:  # pragma: no cover - machines with readable RAPL
        assert watts is not None and watts > 0


def test_jetson_sampler_channel_names_fill_the_gpu_columns():
    tl = Timeline("tegrastats", interval_s=0.5)
    for ch in (Channel("power_total_mw", "mW"), Channel("gpu_load_pct", "%"), Channel("temp_gpu_c", "C"),
               Channel("gpu_freq_mhz", "MHz")):
        tl.add_channel(ch)
    for i in range(5):
        tl.append(i * S // 2, {"power_total_mw": 20_000.0, "gpu_load_pct": 90.0 + 2 * i, "temp_gpu_c": 40.0 + i,
                               "gpu_freq_mhz": 1300.0})
    fields = telemetry_fields([tl], 0, 2 * S)
    assert fields["gpu_util_pct_mean"] == pytest.approx(94.0)
    assert fields["gpu_temp_c_max"] == pytest.approx(44.0)
    assert fields["gpu_sm_clock_mhz_mean"] == pytest.approx(1300.0)
    assert fields["energy_source"] == "integrated" and fields["energy_j"] == pytest.approx(40.0)
