"""Throttle detection on a Jetson from sysfs (clocks vs their caps, thermal trips, over-current counters),
on a fixture tree of an AGX Orin (tests/fixtures/sysfs/agx_orin_throttle) copied to tmp and changed by the
test between the sampler's start and stop samples (each taken synchronously, so no timing is involved)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from repo_paths import FIXTURES

from edgebench.telemetry.base import Channel, Timeline
from edgebench.telemetry.jetson_throttle import (
    JetsonThrottleSampler,
    discover,
    jetson_throttle_missing,
    throttle_summary,
)
from edgebench.telemetry.row_fields import telemetry_fields

FIXTURE = FIXTURES / "sysfs" / "agx_orin_throttle"
NEVER_S = 3600.0  # no background tick during a test: only the start() and stop() samples


@pytest.fixture
def board(tmp_path: Path) -> Path:
    root = tmp_path / "orin"
    shutil.copytree(FIXTURE, root)
    return root


def put(root: Path, rel: str, value: object) -> None:
    (root / "sys" / rel).write_text(f"{value}\n")


def measure(root: Path, change=None) -> tuple[Timeline, bool, list[str]]:
    """start (sample) -> change the board -> stop (sample); the window spans both samples."""
    s = JetsonThrottleSampler(NEVER_S, sysfs_root=root)
    s.start()
    if change:
        change(root)
    tl = s.stop()
    throttled, causes = throttle_summary(tl, tl.t_ns[0], tl.t_ns[-1])
    return tl, throttled, causes


def test_discovers_every_source_of_the_orin_tree(board):
    src = discover(board)
    assert [c.name for c in src.clocks] == ["gpu", "emc", *[f"cpu{n}" for n in range(12)]]
    assert [z.slug for z in src.zones] == ["cpu_thermal", "gpu_thermal", "cv0_thermal", "soc0_thermal",
                                           "tj_thermal", "tboard_tegra"]
    tj = src.zones[4]
    assert [t for t, _p in tj.trips] == ["passive", "critical"]  # the fan's "active" trips are not throttling
    assert src.zones[5].trips == []
    assert src.oc_dir is not None and src.oc_dir.name == "hwmon5" and src.oc_names == ["oc1", "oc2", "oc3"]
    assert src.notes == []
    assert jetson_throttle_missing(board) is None


def test_a_cool_unthrottled_window_is_not_flagged_and_values_are_in_their_units(board):
    tl, throttled, causes = measure(board)
    assert (throttled, causes) == (False, [])
    assert tl.values["clk_gpu_cur_mhz"][0] == pytest.approx(1300.5)
    assert tl.values["clk_emc_max_mhz"][0] == pytest.approx(3199.0)
    assert tl.values["clk_cpu3_max_mhz"][0] == pytest.approx(2201.6)
    assert tl.values["thermal_cpu_thermal_c"][0] == pytest.approx(47.312)
    assert tl.values["thermal_tj_thermal_trip_c"][0] == pytest.approx(99.0)
    assert tl.channels["oc3_event_cnt"].kind == "counter"
    assert tl.values["oc3_event_cnt"] == [12.0, 12.0]  # counted before the run: not this window's


def test_a_zone_at_its_passive_trip_point_is_thermal_throttling(board):
    _tl, throttled, causes = measure(board, lambda r: put(r, "class/thermal/thermal_zone1/temp", 99250))
    assert throttled
    assert causes == ["thermal: zone gpu_thermal reached 99.2 C >= its trip point 99.0 C"]


def test_an_over_current_event_in_the_window_is_flagged_with_its_counter(board):
    _tl, throttled, causes = measure(board, lambda r: put(r, "class/hwmon/hwmon5/oc3_event_cnt", 15))
    assert throttled and len(causes) == 1
    assert causes[0].startswith("over-current: soctherm_oc oc3_event_cnt +3 in the window")


def test_a_lowered_clock_cap_is_throttling(board):
    """A thermal cooling device lowers scaling_max_freq / devfreq max_freq below the power mode's max."""
    def cap(r: Path) -> None:
        put(r, "devices/system/cpu/cpu4/cpufreq/scaling_max_freq", 1497600)
        put(r, "devices/system/cpu/cpu4/cpufreq/scaling_cur_freq", 1497600)

    _tl, throttled, causes = measure(board, cap)
    assert throttled
    assert causes == ["clock cap lowered: CPU4 max 1498 MHz < 2202 MHz at the start of the row"]


def test_a_clock_below_max_counts_only_when_clocks_are_pinned(board):
    def drop_gpu(r: Path) -> None:
        put(r, "class/devfreq/17000000.ga10b/cur_freq", 612000000)

    _tl, throttled, causes = measure(board, drop_gpu)  # DVFS (min 306 < max 1300.5): the governor's choice
    assert (throttled, causes) == (False, [])
    put(board, "class/devfreq/17000000.ga10b/min_freq", 1300500000)  # jetson_clocks: min == max
    put(board, "class/devfreq/17000000.ga10b/cur_freq", 1300500000)
    _tl, throttled, causes = measure(board, drop_gpu)
    assert throttled
    assert causes == ["clock below pinned max: GPU 612 MHz < 1300 MHz with clocks pinned (min == max, jetson_clocks)"]


def test_an_emc_cap_from_nvpmodel_is_the_max(board):
    (board / "sys/kernel/nvpmodel_emc_cap").mkdir(parents=True)
    put(board, "kernel/nvpmodel_emc_cap/emc_iso_cap", 2133000000)
    tl, throttled, _ = measure(board)
    assert tl.values["clk_emc_max_mhz"][0] == pytest.approx(2133.0) and not throttled


def test_a_board_without_sources_says_so(tmp_path):
    (tmp_path / "sys").mkdir()
    why = jetson_throttle_missing(tmp_path)
    assert why is not None and "no soctherm_oc hwmon" in why and "no GPU devfreq node" in why
    src = discover(FIXTURE)
    assert src.notes == []


def test_the_window_decides_not_the_whole_timeline():
    """A trip reached only after the window does not make the row throttled; one inside does. Counters are
    compared across the samples bracketing the window (conservative: an event between the window's edge and
    the next sample counts)."""
    tl = Timeline("jetson_throttle", interval_s=0.5)
    for ch in (Channel("thermal_cpu_thermal_c", "C"), Channel("thermal_cpu_thermal_trip_c", "C"),
               Channel("oc2_event_cnt", "events", "counter")):
        tl.add_channel(ch)
    for i, temp in enumerate([60.0, 70.0, 80.0, 90.0, 101.0]):
        tl.append(i * 1000, {"thermal_cpu_thermal_c": temp, "thermal_cpu_thermal_trip_c": 99.0,
                             "oc2_event_cnt": 4.0 if i < 4 else 5.0})
    assert throttle_summary(tl, 0, 2000) == (False, [])
    throttled, causes = throttle_summary(tl, 2500, 4000)
    assert throttled and [c.split(":")[0] for c in causes] == ["over-current", "thermal"]


def test_row_fields_mark_throttling_and_keep_nvml_reasons(board):
    tl, _, _ = measure(board, lambda r: put(r, "class/thermal/thermal_zone0/temp", 104600))
    fields = telemetry_fields([tl], tl.t_ns[0], tl.t_ns[-1])
    assert fields["throttled"] is True
    assert fields["throttle_reasons"] == "thermal: zone cpu_thermal reached 104.6 C >= its trip point 99.0 C"
    assert fields["telemetry_source"] == "jetson_throttle"


def test_a_sweep_row_on_a_hot_board_is_invalid_with_the_cause(board, tmp_path, monkeypatch):
    """A real (null backend) row with samplers [jetson_throttle, host] on the fixture board, hot from the
    start: the row is measured, then `invalid` with 'device throttled: thermal: ...'."""
    import edgebench.telemetry.registry as registry
    from edgebench.backends.base import Env
    from edgebench.config.profile import load_profile
    from edgebench.models.artifacts import Artifacts
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.pipeline.plan import expand
    from edgebench.pipeline.sweep import run_sweep
    from edgebench.results.store import ResultsStore

    put(board, "class/thermal/thermal_zone4/temp", 99500)  # tj-thermal at its passive trip
    real = registry.make_sampler
    monkeypatch.setattr(registry, "make_sampler",
                        lambda name, interval_s, sysfs_root="/", placements=(): real(
                            name, interval_s, board if name == "jetson_throttle" else "/", placements))
    profile = load_profile("smoke").with_overrides("sweep", backends=["null"], precisions=["fp32"], batches=[1],
                                                   instances=[1])
    profile = profile.with_overrides("run", duration_s=0.2, min_inferences=10, accuracy_samples=0)
    profile = profile.with_overrides("telemetry", samplers=["jetson_throttle", "host"], interval_s=0.05)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    store = ResultsStore(run_dir)
    run_sweep(expand(profile, Env.detect()), profile, run_dir, store,
              ModelCache(Artifacts(tmp_path / "cache"), dict(profile.calibration)))
    rows = store.rows()
    assert len(rows) == 1
    row = rows[0]
    assert row["status"] == "invalid", row
    assert "device throttled: thermal: zone tj_thermal reached 99.5 C >= its trip point 99.0 C" in row["reason"]
    assert float(row["throughput_ips"]) > 0  # measured, then judged
    tl_csv = next((run_dir / "rows").iterdir()) / "telemetry_jetson_throttle.csv"
    assert "thermal_tj_thermal_c[C]" in tl_csv.read_text().splitlines()[0]
