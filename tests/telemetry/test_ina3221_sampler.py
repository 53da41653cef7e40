"""INA3221 sysfs sampler against fixture trees of real Jetson layouts (tests/fixtures/sysfs/<board>)."""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path

import pytest
import repo_paths

from edgebench.telemetry.ina3221 import Ina3221Sampler, discover_rails, ina3221_status
from edgebench.telemetry.jetson_rails import rail_map
from edgebench.telemetry.registry import power_summary, sampler_availability

FIXTURES = repo_paths.FIXTURES / "sysfs"


def read_int(path: Path) -> int:
    return int(path.read_text().split()[0])


def hwmon_rail_mw(root: Path, device: str, label: str) -> float:
    """mV * mA / 1000 of the channel labelled `label`, read from the fixture files themselves."""
    for lab in (root / "sys/bus/i2c/devices" / device / "hwmon").glob("hwmon*/in*_label"):
        if lab.read_text().strip() == label:
            k = lab.name[2:].split("_")[0]
            return read_int(lab.parent / f"in{k}_input") * read_int(lab.parent / f"curr{k}_input") / 1000.0
    raise AssertionError(f"{label} not in {device}")


def write_atomic(path: Path, value: int) -> None:
    """Replace a sysfs-like file in one step (sysfs reads never see a half-written value; a plain
    write_text truncates first, which a 50 Hz reader can catch)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{value}\n")
    os.replace(tmp, path)


def one_sample(root: Path) -> tuple[dict[str, float], list[str]]:
    s = Ina3221Sampler(interval_s=0.5, sysfs_root=root)
    s.start()
    tl = s.stop()
    return {name: vals[0] for name, vals in tl.values.items()}, tl.notes


def test_agx_orin_two_chips_total_is_the_sum_of_rails_and_says_so():
    root = FIXTURES / "agx_orin"
    rails, notes = discover_rails(root)
    # NC channels and channel 7 ("sum of shunt voltages") are skipped; both chips are read
    assert [r.name for r in rails] == ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"]
    assert {r.device for r in rails} == {"1-0040", "1-0041"} and notes == []
    sample, tl_notes = one_sample(root)
    expect = {name: hwmon_rail_mw(root, dev, name) for name, dev in (
        ("VDD_GPU_SOC", "1-0040"), ("VDD_CPU_CV", "1-0040"), ("VIN_SYS_5V0", "1-0040"), ("VDDQ_VDD2_1V8AO", "1-0041"))}
    for name, mw in expect.items():
        assert sample[f"rail_{name}_mw"] == pytest.approx(mw)
    assert expect["VDD_GPU_SOC"] == pytest.approx(5024 * 1208 / 1000)  # mV * mA / 1000, not truncated
    assert sample["power_total_mw"] == pytest.approx(sum(expect.values()))
    # VDD_GPU_SOC feeds GPU *and* SOC: no channel pretends it is the GPU alone
    assert sample["power_gpu_soc_mw"] == pytest.approx(expect["VDD_GPU_SOC"])
    assert sample["power_cpu_cv_mw"] == pytest.approx(expect["VDD_CPU_CV"])
    assert "power_gpu_mw" not in sample and "rail_NC_mw" not in sample
    note = next(n for n in tl_notes if "power_total_mw" in n)
    assert "SUM OF RAILS" in note and "not the board input" in note and "VDDQ_VDD2_1V8AO" in note


def test_orin_nx_total_is_vdd_in_the_real_input_not_a_sum():
    root = FIXTURES / "orin_nx"
    sample, notes = one_sample(root)
    vdd_in = hwmon_rail_mw(root, "1-0040", "VDD_IN")
    assert sample["power_total_mw"] == pytest.approx(vdd_in)
    rails_sum = vdd_in + sample["rail_VDD_CPU_GPU_CV_mw"] + sample["rail_VDD_SOC_mw"]
    assert sample["power_total_mw"] < rails_sum  # summing VDD_IN with its own sub-rails would double count
    assert sample["power_cpu_gpu_cv_mw"] == pytest.approx(hwmon_rail_mw(root, "1-0040", "VDD_CPU_GPU_CV"))
    assert sample["power_soc_mw"] == pytest.approx(hwmon_rail_mw(root, "1-0040", "VDD_SOC"))
    assert any("power_total_mw = VDD_IN (the measured module/board input)" in n for n in notes)


def test_xavier_agx_has_real_gpu_cpu_soc_rails():
    root = FIXTURES / "xavier_agx"
    sample, _ = one_sample(root)
    assert sample["power_gpu_mw"] == pytest.approx(hwmon_rail_mw(root, "1-0040", "GPU"))
    assert sample["power_cpu_mw"] == pytest.approx(hwmon_rail_mw(root, "1-0040", "CPU"))
    assert sample["power_soc_mw"] == pytest.approx(hwmon_rail_mw(root, "1-0040", "SOC"))
    six = [hwmon_rail_mw(root, d, n) for d, n in (("1-0040", "GPU"), ("1-0040", "CPU"), ("1-0040", "SOC"),
                                                  ("1-0041", "CV"), ("1-0041", "VDDRQ"), ("1-0041", "SYS5V"))]
    assert sample["power_total_mw"] == pytest.approx(sum(six))


def test_jetpack4_iio_layout_uses_the_drivers_power_file():
    root = FIXTURES / "nano_jp4"
    iio = root / "sys/bus/i2c/devices/6-0040/iio:device0"
    sample, _ = one_sample(root)
    assert sample["power_total_mw"] == read_int(iio / "in_power0_input")  # POM_5V_IN, mW from the driver
    assert sample["power_gpu_mw"] == read_int(iio / "in_power1_input")
    assert sample["power_cpu_mw"] == read_int(iio / "in_power2_input")


def test_unknown_rails_fall_back_to_a_stated_total():
    with_input = rail_map(["VDD_IN", "VDD_FOO"])
    assert with_input.board is None and with_input.total == ("VDD_IN",) and with_input.total_is_input
    assert "unknown Jetson rail set" in with_input.note
    no_input = rail_map(["RAIL_A", "RAIL_B"])
    assert no_input.total == ("RAIL_A", "RAIL_B") and not no_input.total_is_input
    assert "SUM OF ALL RAILS" in no_input.note
    derived = no_input.derive({"RAIL_A": 1000.0, "RAIL_B": math.nan})
    assert math.isnan(derived["power_total_mw"])  # a missing rail makes the total missing, never smaller


def test_energy_over_a_window_is_the_integral_when_currents_change(tmp_path):
    root = tmp_path / "orin_nx"
    shutil.copytree(FIXTURES / "orin_nx", root)
    hw = root / "sys/bus/i2c/devices/1-0040/hwmon/hwmon1"
    (hw / "in1_input").write_text("5000\n")
    (hw / "curr1_input").write_text("1000\n")  # VDD_IN 5.000 W
    s = Ina3221Sampler(interval_s=0.02, sysfs_root=root)
    s.start()
    t0 = time.monotonic_ns()
    time.sleep(0.4)
    write_atomic(hw / "curr1_input", 3000)  # VDD_IN 15.000 W from here on
    t_change = time.monotonic_ns()
    time.sleep(0.4)
    t1 = time.monotonic_ns()
    tl = s.stop()
    exact_mj = 5000.0 * (t_change - t0) / 1e9 + 15000.0 * (t1 - t_change) / 1e9
    fields = power_summary(tl, t0, t1)
    assert fields["energy_source"] == "integrated"
    # trapezoids on a step are off by at most (step) x (one interval + the write's own jitter)
    assert fields["energy_j"] * 1e3 == pytest.approx(exact_mj, abs=10000.0 * 0.05)
    assert fields["power_w_max"] == pytest.approx(15.0)
    assert 20 <= fields["telemetry_samples"] <= 45  # ~0.8 s at 50 Hz, missed ticks allowed on a busy box
    assert set(tl.values["power_total_mw"]) == {5000.0, 15000.0}  # every sample read, none NaN
    assert not any("read failed" in n for n in tl.notes)


def test_rail_vanishing_mid_run_leaves_nan_and_a_note(tmp_path):
    root = tmp_path / "agx_orin"
    shutil.copytree(FIXTURES / "agx_orin", root)
    s = Ina3221Sampler(interval_s=0.02, sysfs_root=root)
    s.start()
    time.sleep(0.1)
    (root / "sys/bus/i2c/devices/1-0041/hwmon/hwmon4/curr2_input").unlink()
    time.sleep(0.1)
    tl = s.stop()
    assert math.isnan(tl.values["power_total_mw"][-1]) and tl.values["power_total_mw"][0] > 0
    assert not math.isnan(tl.values["rail_VDD_GPU_SOC_mw"][-1])
    assert any("VDDQ_VDD2_1V8AO read failed mid-run" in n for n in tl.notes)


def test_missing_tree_gives_a_clear_reason(tmp_path):
    reason = ina3221_status(tmp_path)
    assert reason is not None and str(tmp_path / "sys/bus/i2c/devices") in reason and "does not exist" in reason
    (tmp_path / "sys/bus/i2c/devices/0-0050").mkdir(parents=True)
    (tmp_path / "sys/bus/i2c/devices/0-0050/name").write_text("24c02\n")
    assert "no device" in ina3221_status(tmp_path) and "ina3221" in ina3221_status(tmp_path)
    assert ina3221_status(FIXTURES / "agx_orin") is None
    assert sampler_availability(tmp_path)["ina3221"] == ina3221_status(tmp_path)
    s = Ina3221Sampler(interval_s=0.05, sysfs_root=tmp_path)
    s.start()
    tl = s.stop()
    assert "power_total_mw" not in tl.channels and any("INA3221 not available" in n for n in tl.notes)
    assert power_summary(tl, tl.t_ns[0], tl.t_ns[-1])["energy_j"] is None
