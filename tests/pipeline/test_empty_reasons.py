"""Columns that are empty for a reason say why (issue 21), and --repeats rows carry their `repeat` number."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_runs import cli, cli_env, null_profile, read_rows

from edgebench.config.profile import load_profile
from edgebench.config.run_config import RunConfig
from edgebench.pipeline.empty_reasons import empty_reasons


def cfg(**kw) -> RunConfig:
    return RunConfig(**{"model": "m", "backend": "null", "precision": "fp32", "batch": 1, "placements": ("cpu",), **kw})


def test_each_empty_column_gets_its_reason():
    host = load_profile("host")
    row = {"power_w_mean": 12.5}
    text = empty_reasons(row, cfg(), host, idle_power_w=None, sources=["host"])
    assert text is not None
    parts = text.split("; ")
    assert parts[0] == ("throttled, throttle_reasons: not checked (this row's samplers host do not read throttling, "
                        "nvml and jetson_throttle do)")
    assert parts[1] == "power_mode: not switched by this sweep (power.modes not set), system.json records the mode"
    assert parts[2] == "gpu_sharing: no CUDA placement in this row"
    idle_s = host.telemetry["idle_baseline_s"]
    assert parts[3] == "power_w_idle, energy_per_inference_dynamic_mj: " + (
        "idle baseline off (telemetry.idle_baseline_s = 0)" if idle_s <= 0
        else "no power measurable for an idle baseline before the sweep")


def test_filled_or_checked_columns_need_no_reason():
    """throttled = false is an answer (checked, not throttled): no reason; a filled row has none at all."""
    row = {"throttled": False, "power_mode": "MAXN", "gpu_sharing": "time-slicing", "power_w_mean": 30.0,
           "power_w_idle": 9.0}
    assert empty_reasons(row, cfg(placements=("cuda:0",)), load_profile("dgpu"), 9.0, ["nvml"]) is None
    no_power = empty_reasons({"throttled": True, "power_mode": "x", "gpu_sharing": "mps"}, cfg(),
                             load_profile("host"), 5.0, ["host"])
    assert no_power == ("power_w_idle, energy_per_inference_dynamic_mj: no power measured in this row "
                        "(energy_source says why)")
    other_gpu = empty_reasons({"throttled": False, "power_mode": "x", "gpu_sharing": "mps", "power_w_mean": 50.0},
                              cfg(), load_profile("dgpu"), 5.0, ["nvml"])
    assert other_gpu == ("power_w_idle, energy_per_inference_dynamic_mj: the idle baseline was measured on one GPU "
                         "only (CUDA's GPU 0: the first index CUDA_VISIBLE_DEVICES names, else NVML GPU 0); this "
                         "row's power covers other or more GPUs")


def test_a_repeated_sweep_numbers_its_rows_and_states_empty_columns(tmp_path: Path):
    pytest.importorskip("torch", reason="the sweep exports tiny_cnn with torch")
    profile = null_profile(tmp_path, "rep", sweep={"batches": [1, 2]},
                           run={"warmup_s": 0.05, "duration_s": 0.2, "max_duration_s": 2.0, "repeats": 2},
                           telemetry={"samplers": ["host"], "idle_baseline_s": 0})
    env = cli_env(Path(os.environ.get("EDGEBENCH_CACHE") or tmp_path / "cache"))
    proc = cli(env, "bench", "--device", str(profile), "--out", str(tmp_path / "runs"), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = (tmp_path / "runs").iterdir()
    rows = read_rows(run / "results.csv")
    assert sorted((r["batch"], r["repeat"]) for r in rows) == [("1", "0"), ("1", "1"), ("2", "0"), ("2", "1")]
    assert len({r["config_hash"] for r in rows}) == 4  # repeats are distinct configurations for --resume
    for r in rows:
        assert r["status"] in ("ok", "invalid"), r["reason"]
        assert r["throttled"] == "" and r["power_mode"] == "" and r["gpu_sharing"] == "" and r["power_w_idle"] == ""
        notes = r["empty_reasons"].split("; ")
        assert notes[0] == ("throttled, throttle_reasons: not checked (this row's samplers host do not read "
                            "throttling, nvml and jetson_throttle do)")
        assert "gpu_sharing: no CUDA placement in this row" in notes
        assert notes[-1] in ("power_w_idle, energy_per_inference_dynamic_mj: idle baseline off "
                             "(telemetry.idle_baseline_s = 0)",
                             "power_w_idle, energy_per_inference_dynamic_mj: no power measured in this row "
                             "(energy_source says why)")
