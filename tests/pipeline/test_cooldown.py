"""Thermal steady state between rows: the sysfs probe on a copy of a captured AGX Orin tree, the NVML probe
on an autospec of pynvml, the wait (settled / timeout) on a fake clock, and a real sweep (null backend) that
waits between its rows while the tree is hot. The GPU test reads a real GPU through NVML."""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path
from unittest.mock import create_autospec

import pytest
from repo_paths import FIXTURES

from edgebench.pipeline.cooldown import Baseline, Thermal, wait_cooldown
from edgebench.telemetry.thermal_probe import NvmlProbe, SysfsProbe

ORIN = FIXTURES / "sysfs" / "agx_orin_throttle"


@pytest.fixture
def orin(tmp_path: Path) -> Path:
    root = tmp_path / "orin"
    shutil.copytree(ORIN, root, symlinks=True)
    return root


def zone(root: Path, kind: str) -> Path:
    for z in (root / "sys/class/thermal").glob("thermal_zone*"):
        if (z / "type").read_text().strip() == kind:
            return z / "temp"
    raise AssertionError(kind)


def set_temp(root: Path, celsius: float) -> None:
    """Every accelerator zone (gpu, soc, cv, tj) at this temperature; cpu and board zones untouched."""
    for kind in ("gpu-thermal", "soc0-thermal", "cv0-thermal", "tj-thermal"):
        zone(root, kind).write_text(f"{int(celsius * 1000)}\n")


def test_sysfs_probe_reads_the_hottest_accelerator_zone_and_the_gpu_clock(orin):
    probe = SysfsProbe(orin)
    temp, clock = probe.read()
    # captured values: gpu 45.906, soc0 45.5, cv0 44.75, tj 47.312 (cpu 47.312 and Tboard 36.0 are not read)
    assert temp == pytest.approx(47.312)
    assert clock == pytest.approx(1300.5)  # cur_freq 1300500000 Hz
    zone(orin, "tj-thermal").write_text("30000\n")
    zone(orin, "cpu-thermal").write_text("99000\n")  # the CPU zone does not count
    assert probe.read()[0] == pytest.approx(45.906)
    assert probe.note == ""


def test_sysfs_probe_without_zones_says_so(tmp_path):
    probe = SysfsProbe(tmp_path)
    assert probe.read() == (None, None)
    assert "no GPU/SoC thermal zone" in probe.note and "no GPU devfreq" in probe.note


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.t += s


def test_wait_settles_when_the_temperature_is_back_near_idle(orin):
    set_temp(orin, 55.0)
    clock = FakeClock()
    probe = SysfsProbe(orin)

    def cooling_sleep(s: float) -> None:  # the board cools 2 C per second of waiting
        clock.sleep(s)
        set_temp(orin, max(40.0, 55.0 - 2.0 * (clock.t - 100.0)))

    res = wait_cooldown(probe, Baseline(40.0, 1300.5), temp_margin_c=3.0, clock_margin_pct=10.0, timeout_s=60.0,
                        poll_s=1.0, now=clock.now, sleep=cooling_sleep)
    # 55 -> 43 C (within 3 C of 40) after 6 s of 1 s polls
    assert res.settled and res.waited_s == pytest.approx(6.0) and res.temp_c == pytest.approx(43.0)
    assert res.note.startswith("settled after 6.0 s") and "idle 40.0 C" in res.note


def test_wait_gives_up_at_the_timeout_and_says_how_far_off_it_is(orin):
    set_temp(orin, 70.0)
    clock = FakeClock()
    res = wait_cooldown(SysfsProbe(orin), Baseline(40.0, 1300.5), 3.0, 10.0, timeout_s=5.0, poll_s=2.0,
                        now=clock.now, sleep=clock.sleep)
    assert not res.settled and res.waited_s == pytest.approx(5.0)
    assert clock.sleeps == [2.0, 2.0, 1.0]  # the last poll is cut to the timeout
    assert res.note.startswith("timeout after 5.0 s: still 70.0 C (idle 40.0 C)")


def test_a_clock_still_far_from_idle_keeps_waiting(orin):
    set_temp(orin, 40.0)
    clock = FakeClock()
    res = wait_cooldown(SysfsProbe(orin), Baseline(40.0, 306.0), 3.0, 10.0, timeout_s=3.0, poll_s=1.0,
                        now=clock.now, sleep=clock.sleep)
    assert not res.settled and "1300 MHz (idle 306 MHz)" in res.note


def fake_nvml(temps: list[int], sm_mhz: int = 1755):
    pynvml = pytest.importorskip("pynvml", reason="the NVML probe is written against pynvml (nvidia-ml-py)")
    m = create_autospec(pynvml)
    for attr in dir(pynvml):
        value = getattr(pynvml, attr)
        if isinstance(value, (int, str)) or (isinstance(value, type) and issubclass(value, BaseException)):
            setattr(m, attr, value)
    m.nvmlDeviceGetHandleByIndex.return_value = "handle-0"
    m.nvmlDeviceGetTemperature.side_effect = temps
    m.nvmlDeviceGetClockInfo.side_effect = lambda h, kind: {pynvml.NVML_CLOCK_SM: sm_mhz}[kind]
    return m


def test_nvml_probe_reads_gpu_temperature_and_sm_clock_and_the_wait_follows_it():
    m = fake_nvml([47, 66, 58, 49], sm_mhz=1755)
    probe = NvmlProbe(0, m)
    assert probe.read() == (47.0, 1755.0)
    m.nvmlDeviceGetTemperature.assert_called_with("handle-0", m.NVML_TEMPERATURE_GPU)
    clock = FakeClock()
    res = wait_cooldown(probe, Baseline(47.0, 1755.0), 3.0, 10.0, timeout_s=30.0, poll_s=0.5,
                        now=clock.now, sleep=clock.sleep)
    assert res.settled and res.temp_c == 49.0 and res.waited_s == pytest.approx(1.0)  # 66, 58 (waits), 49


def test_sweep_with_cooldown_waits_between_rows_and_records_temperatures(orin, tmp_path):
    from edgebench.config.profile import load_profile
    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.pipeline.plan import PlannedRun
    from edgebench.pipeline.sweep import run_sweep
    from edgebench.results.store import ResultsStore

    set_temp(orin, 41.0)  # the idle baseline, read when the sweep starts
    profile = load_profile("smoke").with_overrides("cooldown", enabled=True, source="sysfs", sysfs_root=str(orin),
                                                   timeout_s=0.6, poll_s=0.1, temp_margin_c=3.0)
    common = dict(model="tiny_cnn", backend="null", precision="fp32", batch=1, placements=("cpu",), duration_s=0.3,
                  max_duration_s=2.0, min_inferences=10, warmup_s=0.05, accuracy_samples=0)
    planned = [PlannedRun(RunConfig(repeat=r, **common), None) for r in range(3)]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    heat = {0: 60.0, 1: 42.0}  # row 0 starts hot (60 C); row 1 starts back near idle (42 C, margin 3 C)

    def on_start(i, n, cfg):
        if i in heat:
            set_temp(orin, heat[i])

    models = ModelCache(Artifacts(os.environ.get("EDGEBENCH_CACHE") or tmp_path / "cache"), {})
    rows = run_sweep(planned, profile, run_dir, ResultsStore(run_dir), models, on_start=on_start)
    assert [r["status"] for r in rows] != ["failed"] * 3, rows[0].get("reason")
    first, hot, cool = rows
    assert first["cooldown_note"].startswith("first row") and first["cooldown_s"] == 0.0
    assert first["temp_c_start"] == pytest.approx(60.0)
    # row 1 starts with the tree at 42 C (on_start), i.e. within 3 C of 41: settled at once
    assert hot["cooldown_note"].startswith("settled after 0.0 s") and hot["temp_c_start"] == pytest.approx(42.0)
    assert cool["repeat"] == 2
    with open(run_dir / "results.csv", newline="") as fh:
        written = list(csv.DictReader(fh))
    assert [w["repeat"] for w in written] == ["0", "1", "2"]
    assert float(written[0]["temp_c_end"]) == pytest.approx(60.0)


def test_sweep_cooldown_timeout_is_recorded_in_the_row(orin, tmp_path):
    from edgebench.config.profile import load_profile
    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.pipeline.plan import PlannedRun
    from edgebench.pipeline.sweep import run_sweep
    from edgebench.results.store import ResultsStore

    set_temp(orin, 41.0)
    profile = load_profile("smoke").with_overrides("cooldown", enabled=True, source="sysfs", sysfs_root=str(orin),
                                                   timeout_s=0.5, poll_s=0.1)
    common = dict(model="tiny_cnn", backend="null", precision="fp32", batch=1, placements=("cpu",), duration_s=0.3,
                  max_duration_s=2.0, min_inferences=10, warmup_s=0.05, accuracy_samples=0)
    planned = [PlannedRun(RunConfig(repeat=r, **common), None) for r in range(2)]
    run_dir = tmp_path / "run"
    run_dir.mkdir()

    def on_start(i, n, cfg):
        if i == 0:
            set_temp(orin, 65.0)  # and it never cools down

    models = ModelCache(Artifacts(tmp_path / "cache"), {})
    rows = run_sweep(planned, profile, run_dir, ResultsStore(run_dir), models, on_start=on_start)
    assert rows[1]["cooldown_note"].startswith("timeout after") and "still 65.0 C (idle 41.0 C)" in rows[1]["cooldown_note"]
    assert 0.5 <= rows[1]["cooldown_s"] < 5.0
    assert rows[1]["temp_c_start"] == pytest.approx(65.0)


def test_cooldown_off_still_records_temperatures_and_no_wait(orin):
    set_temp(orin, 50.0)
    thermal = Thermal({"enabled": False, "source": "sysfs", "sysfs_root": str(orin)}, gpu=False)
    fields = thermal.before_row()
    assert fields == {"temp_c_start": pytest.approx(50.0)}
    assert thermal.after_row() == {"temp_c_end": pytest.approx(50.0)}


def test_nvml_source_without_a_gpu_says_why_and_does_not_wait(monkeypatch):
    import edgebench.telemetry.thermal_probe as tp
    from edgebench.errors import EdgebenchError

    def no_nvml():
        raise EdgebenchError("NVML unavailable: pynvml is not installed (simulated)")

    monkeypatch.setattr(tp, "_import_nvml", no_nvml)
    thermal = Thermal({"enabled": True, "source": "nvml"}, gpu=True)
    thermal.rows_done = 1
    fields = thermal.before_row()
    assert fields["cooldown_s"] == 0.0 and "no thermal probe (NVML unavailable" in fields["cooldown_note"]
    assert fields["temp_c_start"] is None


@pytest.mark.gpu
def test_real_nvml_probe_reads_a_plausible_temperature_and_clock():
    pynvml = pytest.importorskip("pynvml", reason="needs nvidia-ml-py")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        pytest.skip(f"no NVML here: {exc}")
    probe = NvmlProbe(0)
    temp, clock = probe.read()
    assert temp is not None and 10.0 < temp < 100.0, probe.note
    assert clock is not None and 0.0 < clock < 4000.0, probe.note
    thermal = Thermal({"enabled": True, "source": "nvml", "timeout_s": 2.0, "poll_s": 0.2}, gpu=True)
    thermal.rows_done = 1
    fields = thermal.before_row()
    assert fields["cooldown_note"].startswith(("settled", "timeout")) and fields["temp_c_start"] is not None
