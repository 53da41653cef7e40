"""Power calibration against a wall meter: the fit applied to separate columns (raw kept), its source in the
row, per-board files, scope checks, one-line errors for bad input, and a sweep row that records it."""

from __future__ import annotations

import os

import pytest

from edgebench.errors import ConfigError
from edgebench.telemetry.power_calibration import (
    calibrated_fields,
    for_board,
    parse_calibration,
    read_calibration_file,
)

ORIN_FIT = {"scale": 1.05, "offset_w": 6.5, "source": "Yokogawa WT310E at the DC jack, 2026-11-20", "power_scope": "soc-total"}


def test_fit_goes_to_separate_columns_and_the_raw_reading_stays():
    cal = parse_calibration(ORIN_FIT, "orin.yaml", "power.calibration", "profile orin")
    row = {"power_w_mean": 20.0, "power_scope": "soc-total", "window_s": 5.0, "samples": 1000,
           "energy_per_inference_mj": 100.0}
    fields = calibrated_fields(row, cal)
    assert fields["power_w_mean_calibrated"] == pytest.approx(20.0 * 1.05 + 6.5)  # 27.5 W at the wall
    assert fields["energy_per_inference_calibrated_mj"] == pytest.approx(27.5 * 5.0 * 1000.0 / 1000)
    assert "power_w_mean" not in fields and "energy_per_inference_mj" not in fields
    assert fields["power_calibration"] == ("scale 1.05, offset +6.5 W, for power_scope soc-total; source: Yokogawa "
                                           "WT310E at the DC jack, 2026-11-20 (profile orin)")


def test_a_fit_for_another_sensor_scope_is_not_applied():
    cal = parse_calibration(ORIN_FIT, "orin.yaml", "power.calibration")
    fields = calibrated_fields({"power_w_mean": 300.0, "power_scope": "gpu-board", "window_s": 1, "samples": 1}, cal)
    assert "power_w_mean_calibrated" not in fields
    assert fields["power_calibration"].startswith("not applied: fitted for power_scope soc-total, the row's is gpu-board")


def test_no_power_reading_no_calibrated_value():
    cal = parse_calibration({"source": "meter"}, "p.yaml", "power.calibration")
    assert (cal.scale, cal.offset_w) == (1.0, 0.0)
    assert calibrated_fields({"power_w_mean": None}, cal)["power_calibration"].startswith(
        "not applied: the row has no power reading")


@pytest.mark.parametrize("entry, field, words", [
    ({"scale": 1.1, "offset_w": 5}, "power.calibration.source", "cannot be cited"),
    ({"scale": 0, "source": "m"}, "power.calibration.scale", "must be > 0"),
    ({"scale": "1.1", "source": "m"}, "power.calibration.scale", "finite number"),
    ({"offset_w": float("nan"), "source": "m"}, "power.calibration.offset_w", "finite number"),
    ({"slope": 1.1, "source": "m"}, "power.calibration", "unknown key(s) slope"),
])
def test_bad_calibration_is_one_line_naming_the_field(entry, field, words):
    with pytest.raises(ConfigError) as err:
        parse_calibration(entry, "orin.yaml", "power.calibration")
    assert field in str(err.value) and words in str(err.value) and "orin.yaml" in str(err.value)
    assert "\n" not in str(err.value)


def test_per_board_file_picks_the_board(tmp_path):
    path = tmp_path / "wall.yaml"
    path.write_text("boards:\n"
                    "  Jetson AGX Orin: {scale: 1.0, offset_w: 6.0, source: meter A}\n"
                    "  NVIDIA Jetson AGX Orin Developer Kit: {scale: 1.02, offset_w: 6.8, source: meter B}\n"
                    "  Jetson Orin Nano: {scale: 1.0, offset_w: 2.1, source: meter C}\n")
    boards = read_calibration_file(path)
    assert for_board(boards, "NVIDIA Jetson AGX Orin Developer Kit").offset_w == 6.8  # exact
    assert for_board(boards, "Jetson AGX Orin 64GB (custom carrier)").offset_w == 6.0  # contained
    assert for_board(boards, "Raspberry Pi 5") is None
    (tmp_path / "bad.yaml").write_text("boards:\n  X: {scale: -1, source: m}\n")
    with pytest.raises(ConfigError, match=r"bad.yaml.*boards.X.scale.*must be > 0"):
        read_calibration_file(tmp_path / "bad.yaml")


def test_profile_with_a_bad_calibration_is_refused_at_load(tmp_path):
    from edgebench.config.profile import load_profile

    p = tmp_path / "p.yaml"
    p.write_text("name: p\nextends: smoke\npower:\n  calibration: {scale: 1.1}\n")
    with pytest.raises(ConfigError, match="power.calibration.source"):
        load_profile(str(p))


def test_execute_resolves_the_profile_or_file_calibration(tmp_path):
    from edgebench.config.profile import load_profile
    from edgebench.pipeline.execute import power_calibration

    base = load_profile("smoke")
    assert power_calibration(base) == (None, "")
    prof = base.with_overrides("power", calibration={"scale": 1.1, "offset_w": 2.0, "source": "meter"})
    cal, why = power_calibration(prof)
    assert cal is not None and cal.apply_w(10.0) == pytest.approx(13.0) and why == ""
    f = tmp_path / "wall.yaml"
    f.write_text("boards:\n  Board A: {scale: 1.0, offset_w: 3.0, source: meter}\n")
    prof = base.with_overrides("power", calibration_file=str(f))
    assert power_calibration(prof, board="Board A")[0].offset_w == 3.0
    none, why = power_calibration(prof, board="Board B")
    assert none is None and why == f"none: {f} has no entry for board 'Board B'"


def test_sweep_row_records_the_calibration_it_could_not_apply(tmp_path):
    """The host sampler here has no power reading (RAPL not readable in this container): the row says the
    calibration was not applied and why; power_w_mean stays empty, never a calibrated 0 + offset."""
    from edgebench.config.profile import load_profile
    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.pipeline.plan import PlannedRun
    from edgebench.pipeline.sweep import run_sweep
    from edgebench.results.store import ResultsStore

    prof = load_profile("smoke").with_overrides("power", calibration={"scale": 1.1, "offset_w": 2.0,
                                                                      "source": "bench meter"})
    cfg = RunConfig(model="tiny_cnn", backend="null", precision="fp32", batch=1, placements=("cpu",), duration_s=0.3,
                    max_duration_s=2.0, min_inferences=10, warmup_s=0.05, accuracy_samples=0)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    models = ModelCache(Artifacts(os.environ.get("EDGEBENCH_CACHE") or tmp_path / "cache"), {})
    row = run_sweep([PlannedRun(cfg, None)], prof, run_dir, ResultsStore(run_dir), models)[0]
    if row.get("power_w_mean") is not None:  # RAPL readable on this machine: the fit is applied
        assert row["power_w_mean_calibrated"] == pytest.approx(row["power_w_mean"] * 1.1 + 2.0)
        assert row["power_calibration"].startswith("scale 1.1, offset +2 W; source: bench meter")
    else:
        assert row.get("power_w_mean_calibrated") is None
        assert row["power_calibration"].startswith("not applied: the row has no power reading (scale 1.1")
