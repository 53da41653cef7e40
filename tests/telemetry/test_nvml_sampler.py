"""NvmlSampler against an autospec of the real pynvml module (the one seam), throttle decoding with
pynvml's own constants, and a gpu-marked run against the real NVML."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace
from unittest.mock import create_autospec

import pytest

from edgebench.errors import EdgebenchError
from edgebench.telemetry.base import Channel, Timeline
from edgebench.telemetry.nvml import NvmlSampler, decode_throttle_reasons, nvml_status, throttle_summary
from edgebench.telemetry.registry import power_summary

pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed (pip install nvidia-ml-py)")

PARKED_S = 3600.0  # only start() and stop() sample: fully deterministic
HANDLE = "handle-0"


def fake_nvml(name: str = "NVIDIA H100 80GB HBM3"):
    """create_autospec of pynvml: every function checks its signature like the real one; the real
    exception classes and constants are kept (autospec would turn them into mocks)."""
    m = create_autospec(pynvml)
    for attr in dir(pynvml):
        value = getattr(pynvml, attr)
        if isinstance(value, (int, str)) or (isinstance(value, type) and issubclass(value, BaseException)):
            setattr(m, attr, value)
    m.nvmlDeviceGetHandleByIndex.return_value = HANDLE
    m.nvmlDeviceGetCount.return_value = 1
    m.nvmlDeviceGetName.return_value = name
    m.nvmlDeviceGetUUID.return_value = "GPU-1234"
    m.nvmlDeviceGetPciInfo.return_value = SimpleNamespace(busId="00000000:1B:00.0")
    m.nvmlSystemGetDriverVersion.return_value = "570.86.15"
    m.nvmlDeviceGetEnforcedPowerLimit.return_value = 700_000
    m.nvmlDeviceGetPowerManagementDefaultLimit.return_value = 700_000
    m.nvmlDeviceGetMaxClockInfo.return_value = 1980
    m.nvmlDeviceGetPowerUsage.return_value = 75_000
    m.nvmlDeviceGetTotalEnergyConsumption.return_value = 1_000_000
    m.nvmlDeviceGetUtilizationRates.return_value = SimpleNamespace(gpu=97, memory=41)
    m.nvmlDeviceGetClockInfo.side_effect = lambda h, kind: {pynvml.NVML_CLOCK_SM: 1755, pynvml.NVML_CLOCK_MEM: 2619}[kind]
    m.nvmlDeviceGetTemperature.return_value = 47
    m.nvmlDeviceGetMemoryInfo.return_value = SimpleNamespace(used=3 * 1024**3, total=80 * 1024**3, free=77 * 1024**3)
    m.nvmlDeviceGetCurrentClocksEventReasons.return_value = pynvml.nvmlClocksThrottleReasonGpuIdle
    return m


def run_parked(m) -> Timeline:
    s = NvmlSampler(PARKED_S, nvml=m)
    s.start()
    return s.stop()


def not_supported():
    return pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)


# ---------------------------------------------------------------- channels from known values


def test_known_values_land_in_their_channels_with_units():
    m = fake_nvml()
    m.nvmlDeviceGetPowerUsage.side_effect = [90_000, 100_000, 200_000]  # probe, start sample, stop sample
    tl = run_parked(m)
    assert tl.source == "nvml"
    assert tl.values["power_total_mw"] == [100_000.0, 200_000.0]
    assert tl.channels["power_total_mw"] == Channel("power_total_mw", "mW", "gauge")
    assert tl.values["gpu_util_pct"] == [97.0, 97.0] and tl.values["mem_util_pct"] == [41.0, 41.0]
    assert tl.values["sm_clock_mhz"] == [1755.0, 1755.0] and tl.values["mem_clock_mhz"] == [2619.0, 2619.0]
    assert tl.values["temperature_c"] == [47.0, 47.0]
    assert tl.values["mem_used_mib"] == [3072.0, 3072.0]
    assert tl.values["throttle_reasons"] == [float(pynvml.nvmlClocksThrottleReasonGpuIdle)] * 2
    assert len(tl.t_ns) == 2 and tl.t_ns[0] < tl.t_ns[1]
    # the calls carry the arguments NVML wants (autospec would also reject a wrong signature)
    m.nvmlDeviceGetClockInfo.assert_any_call(HANDLE, pynvml.NVML_CLOCK_SM)
    m.nvmlDeviceGetClockInfo.assert_any_call(HANDLE, pynvml.NVML_CLOCK_MEM)
    m.nvmlDeviceGetTemperature.assert_any_call(HANDLE, pynvml.NVML_TEMPERATURE_GPU)
    m.nvmlShutdown.assert_called_once_with()


def test_energy_counter_is_relative_to_start_and_feeds_the_row_energy():
    m = fake_nvml()
    m.nvmlDeviceGetTotalEnergyConsumption.side_effect = [5_000_000, 5_000_100, 5_002_600]
    tl = run_parked(m)
    assert tl.channels["energy_total_mj"].kind == "counter" and tl.channels["energy_total_mj"].unit == "mJ"
    assert tl.values["energy_total_mj"] == [100.0, 2600.0]
    row = power_summary(tl, tl.t_ns[0], tl.t_ns[1])
    assert row["energy_j"] == pytest.approx(2.5)
    assert row["energy_source"] == "counter:nvml"
    assert row["power_w_mean"] == pytest.approx(2.5 / ((tl.t_ns[1] - tl.t_ns[0]) / 1e9))


def test_device_info_and_notes_record_gpu_driver_and_power_limit():
    s = NvmlSampler(PARKED_S, nvml=fake_nvml())
    s.start()
    tl = s.stop()
    assert s.device_info["name"] == "NVIDIA H100 80GB HBM3"
    assert s.device_info["driver_version"] == "570.86.15"
    assert s.device_info["power_limit_mw"] == 700_000
    assert s.device_info["pci_bus_id"] == "00000000:1B:00.0"
    assert any("NVIDIA H100 80GB HBM3" in n and "570.86.15" in n and "700.0 W" in n for n in tl.notes)


def test_sampler_never_calls_a_setter():
    m = fake_nvml()
    run_parked(m)
    called = {c[0].split(".")[0] for c in m.method_calls}
    assert "nvmlDeviceGetPowerUsage" in called
    assert not [c for c in called if "Set" in c or "Reset" in c or "Clear" in c]


# ---------------------------------------------------------------- absent fields


def test_not_supported_power_and_energy_are_absent_with_a_note_never_zero():
    m = fake_nvml(name="Orin")
    m.nvmlDeviceGetPowerUsage.side_effect = not_supported()
    m.nvmlDeviceGetTotalEnergyConsumption.side_effect = pynvml.NVMLError_NotSupported()
    tl = run_parked(m)
    assert "power_total_mw" not in tl.channels and "energy_total_mj" not in tl.channels
    assert "power: NOT_SUPPORTED on Orin (nvml)" in tl.notes
    assert "energy: NOT_SUPPORTED on Orin (nvml)" in tl.notes
    assert tl.values["gpu_util_pct"] == [97.0, 97.0]  # the other fields still sampled
    row = power_summary(tl, tl.t_ns[0], tl.t_ns[1])
    assert row["energy_j"] is None and row["power_w_mean"] is None
    assert row["energy_source"].startswith("none:") and "power: NOT_SUPPORTED on Orin" in row["energy_source"]


def test_other_nvml_errors_name_the_error():
    m = fake_nvml()
    m.nvmlDeviceGetTemperature.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)
    tl = run_parked(m)
    assert "temperature_c" not in tl.channels
    assert "temperature: NVMLError_NoPermission: Insufficient Permissions on NVIDIA H100 80GB HBM3 (nvml)" in tl.notes


def test_a_field_failing_mid_run_leaves_nan_and_one_note():
    m = fake_nvml()
    m.nvmlDeviceGetTemperature.side_effect = [47, 48, pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)]
    tl = run_parked(m)
    assert tl.values["temperature_c"][0] == 48.0 and math.isnan(tl.values["temperature_c"][1])
    assert [n for n in tl.notes if "temperature read failed mid-run" in n] == [
        "nvml temperature read failed mid-run (samples left empty): NVMLError_GpuIsLost: GPU is lost"
    ]


def test_throttle_reasons_fall_back_to_the_old_function():
    m = fake_nvml()
    del m.nvmlDeviceGetCurrentClocksEventReasons  # pynvml older than the "clocks event" rename
    m.nvmlDeviceGetCurrentClocksThrottleReasons.return_value = pynvml.nvmlClocksThrottleReasonSwPowerCap
    assert run_parked(m).values["throttle_reasons"] == [4.0, 4.0]

    m = fake_nvml()  # new bindings, old driver: the new symbol is missing in libnvidia-ml
    m.nvmlDeviceGetCurrentClocksEventReasons.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
    m.nvmlDeviceGetCurrentClocksThrottleReasons.return_value = pynvml.nvmlClocksThrottleReasonHwSlowdown
    assert run_parked(m).values["throttle_reasons"] == [8.0, 8.0]


# ---------------------------------------------------------------- failures at start


def test_nvml_init_failure_is_one_clear_error():
    m = fake_nvml()
    m.nvmlInit.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    with pytest.raises(EdgebenchError, match=r"^NVML unavailable: NVML Shared Library Not Found \(needs the NVIDIA driver"):
        NvmlSampler(nvml=m).start()
    m.nvmlInit.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    assert nvml_status(m) == "NVML unavailable: Driver Not Loaded (needs the NVIDIA driver)"


def test_missing_device_index_names_the_index_and_shuts_nvml_down():
    m = fake_nvml()
    m.nvmlDeviceGetHandleByIndex.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
    with pytest.raises(EdgebenchError, match=r"NVML device 3: Invalid Argument \(1 GPU\(s\) visible to NVML\)"):
        NvmlSampler(device_index=3, nvml=m).start()
    m.nvmlShutdown.assert_called_once_with()


def test_nvml_status_counts_gpus():
    m = fake_nvml()
    assert nvml_status(m) is None
    m.nvmlDeviceGetCount.return_value = 0
    assert nvml_status(m) == "NVML sees no GPU"


def test_sampling_thread_appends_on_the_monotonic_clock():
    m = fake_nvml()
    s = NvmlSampler(0.005, nvml=m)
    t0 = time.monotonic_ns()
    s.start()
    time.sleep(0.05)
    tl = s.stop()
    t1 = time.monotonic_ns()
    assert len(tl.t_ns) >= 2
    assert all(a < b for a, b in zip(tl.t_ns, tl.t_ns[1:]))
    assert t0 <= tl.t_ns[0] and tl.t_ns[-1] <= t1
    assert set(tl.values["power_total_mw"]) == {75_000.0}


def test_energy_counter_is_read_at_start_stop_and_its_own_cadence():
    m = fake_nvml()
    m.nvmlDeviceGetTotalEnergyConsumption.side_effect = [1_000, 1_050, 1_900]  # probe, start, stop only
    s = NvmlSampler(0.005, nvml=m, energy_interval_s=PARKED_S)
    s.start()
    time.sleep(0.05)
    tl = s.stop()
    e = tl.values["energy_total_mj"]
    assert len(e) >= 3 and e[0] == 50.0 and e[-1] == 900.0 and all(math.isnan(v) for v in e[1:-1])
    assert all(v == 75_000.0 for v in tl.values["power_total_mw"])  # the other fields every sample
    assert m.nvmlDeviceGetTotalEnergyConsumption.call_count == 3
    assert tl.counter_delta("energy_total_mj", tl.t_ns[0], tl.t_ns[-1]) == pytest.approx(850.0)
    assert any(n.startswith("nvml sampler cost:") and "slowest reads:" in n for n in tl.notes)


# ---------------------------------------------------------------- throttle reasons


@pytest.mark.parametrize(
    ("constant", "name"),
    [
        ("nvmlClocksThrottleReasonGpuIdle", "gpu_idle"),
        ("nvmlClocksThrottleReasonApplicationsClocksSetting", "applications_clocks_setting"),
        ("nvmlClocksThrottleReasonSwPowerCap", "sw_power_cap"),
        ("nvmlClocksThrottleReasonHwSlowdown", "hw_slowdown"),
        ("nvmlClocksThrottleReasonSyncBoost", "sync_boost"),
        ("nvmlClocksThrottleReasonSwThermalSlowdown", "sw_thermal"),
        ("nvmlClocksThrottleReasonHwThermalSlowdown", "hw_thermal"),
        ("nvmlClocksThrottleReasonHwPowerBrakeSlowdown", "hw_power_brake"),
        ("nvmlClocksThrottleReasonDisplayClockSetting", "display_clock_setting"),
        ("nvmlClocksEventReasonSwPowerCap", "sw_power_cap"),
        ("nvmlClocksEventReasonHwThermalSlowdown", "hw_thermal"),
    ],
)
def test_each_pynvml_reason_bit_decodes_to_its_name(constant, name):
    assert decode_throttle_reasons(getattr(pynvml, constant)) == [name]


def test_decode_combined_and_unknown_bits():
    mask = pynvml.nvmlClocksThrottleReasonSwPowerCap | pynvml.nvmlClocksThrottleReasonHwSlowdown
    assert decode_throttle_reasons(mask) == ["sw_power_cap", "hw_slowdown"]
    assert decode_throttle_reasons(pynvml.nvmlClocksThrottleReasonNone) == []
    assert decode_throttle_reasons(0x800 | 0x1) == ["gpu_idle", "unknown_0x800"]


def _throttle_timeline(masks: list[int]) -> Timeline:
    tl = Timeline("nvml")
    tl.add_channel(Channel("throttle_reasons", "bitmask"))
    for i, mask in enumerate(masks):
        tl.append(1000 * (i + 1), {"throttle_reasons": float(mask)})
    return tl


def test_throttle_summary_flags_power_and_thermal_but_not_idle():
    idle, cap = pynvml.nvmlClocksThrottleReasonGpuIdle, pynvml.nvmlClocksThrottleReasonSwPowerCap
    app = pynvml.nvmlClocksThrottleReasonApplicationsClocksSetting
    tl = _throttle_timeline([idle, 0, cap, app])
    assert throttle_summary(tl, 0, 5000) == (True, ["gpu_idle", "applications_clocks_setting", "sw_power_cap"])
    assert throttle_summary(tl, 0, 2000) == (False, ["gpu_idle"])
    assert throttle_summary(tl, 3500, 5000) == (False, ["applications_clocks_setting"])
    assert throttle_summary(Timeline("host"), 0, 5000) == (False, [])


# ---------------------------------------------------------------- the real NVML


@pytest.mark.gpu
def test_real_nvml_reports_power_energy_and_clocks():
    if nvml_status() is not None:
        pytest.skip(f"needs a CUDA GPU with NVML: {nvml_status()}")
    s = NvmlSampler(0.05)
    s.start()
    time.sleep(0.5)
    tl = s.stop()
    assert s.device_info["name"] and s.device_info["driver_version"]
    for ch in ("power_total_mw", "sm_clock_mhz", "temperature_c", "mem_used_mib", "throttle_reasons"):
        assert ch in tl.channels, f"{ch} missing: {tl.notes}"
    assert all(v > 0 for v in tl.values["power_total_mw"])
    if "energy_total_mj" in tl.channels:
        e = tl.values["energy_total_mj"]
        assert e[-1] >= e[0] >= 0 and e[-1] > 0  # a GPU draws power even when idle
