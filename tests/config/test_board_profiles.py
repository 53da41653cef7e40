"""Jetson board profiles: each loads, is a TensorRT + jtop profile, and plans (dry run) with DLA rows present
where the board has DLA and absent or skipped with the reason where it has none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from edgebench.backends import trt_logic
from edgebench.backends.base import Env
from edgebench.config.profile import load_profile
from edgebench.pipeline.plan import describe, expand

BOARDS = ("orin-agx", "orin", "orin-nx", "orin-nano", "xavier-agx", "xavier-nx")
REFERENCE_PLACEMENTS = [["gpu"], ["gpu", "gpu"], ["gpu", "dla0"], ["dla0", "dla1"], ["gpu", "dla0", "dla1"]]
ORIN_ENV = trt_logic.TrtEnv(trt_version="10.3.0.30", has_fp16_flag=True, has_int8_flag=True,
                            has_strongly_typed=True, has_entropy_calibrator=True,
                            jetson_model="NVIDIA Jetson AGX Orin Developer Kit", dla_cores=2)
NANO_ENV = replace(ORIN_ENV, jetson_model="NVIDIA Jetson Orin Nano Developer Kit", dla_cores=0)
HOST = Env(cpu_count=8, machine="aarch64")


def with_board(monkeypatch: pytest.MonkeyPatch, env: trt_logic.TrtEnv) -> None:
    """Plan as if on a board: TrtBackend() (made by the planner through the registry) detects `env`."""
    monkeypatch.setattr(trt_logic, "detect_env", lambda root="/": env)


@pytest.mark.parametrize("name", BOARDS)
def test_board_profile_is_tensorrt_with_jtop(name: str) -> None:
    p = load_profile(name)
    assert p.device == "jetson"
    assert p.sweep["backends"] == ["trt"]
    assert p.telemetry["samplers"] == ["jtop", "jetson_throttle", "host"] and p.telemetry["interval_s"] == 0.5
    assert p.sweep["models"] == ["resnet50", "mobilenet_v2"]
    assert p.sweep["precisions"] == ["fp32", "fp16", "int8"]
    assert "extends" in p.source


def test_orin_is_an_alias_of_the_reference_experiment() -> None:
    agx, alias = load_profile("orin-agx"), load_profile("orin")
    assert alias.sweep == agx.sweep and alias.run == agx.run and alias.telemetry == agx.telemetry
    assert agx.sweep["batches"] == [1, 2, 4, 8, 16, 32, 64]
    assert agx.sweep["placements"] == REFERENCE_PLACEMENTS
    assert agx.sweep["option_sets"] == [{"gpu_fallback": True}]


def test_orin_plan_on_a_board(monkeypatch: pytest.MonkeyPatch) -> None:
    with_board(monkeypatch, ORIN_ENV)
    planned = expand(load_profile("orin-agx"), HOST)
    assert len(planned) == 2 * 3 * 7 * 5
    skipped = [p for p in planned if p.skip_reason is not None]
    # fp32 on any placement set with a DLA instance: 2 models x 7 batches x 3 sets
    assert len(skipped) == 2 * 7 * 3
    assert all(p.cfg.precision == "fp32" and "dla" in p.cfg.placement for p in skipped)
    assert all(p.skip_reason.startswith("DLA is FP16/INT8 only") for p in skipped)
    runnable = {(p.cfg.precision, p.cfg.placement) for p in planned if p.skip_reason is None}
    assert ("int8", "gpu+dla0+dla1") in runnable and ("fp32", "gpu+gpu") in runnable
    assert all(dict(p.cfg.options) == {"gpu_fallback": True} for p in planned)
    text = describe(planned)
    assert text.startswith(f"{len(planned)} configurations: {len(planned) - len(skipped)} to run")


def test_orin_nano_has_no_dla_rows_and_forced_ones_skip_with_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    with_board(monkeypatch, NANO_ENV)
    nano = load_profile("orin-nano")
    planned = expand(nano, HOST)
    assert len(planned) == 2 * 3 * 7 * 2
    assert not any("dla" in p.cfg.placement for p in planned)
    assert all(p.skip_reason is None for p in planned)
    forced = expand(nano.with_overrides("sweep", placements=[["dla0"]]), HOST)
    assert {p.skip_reason for p in forced if p.cfg.precision != "fp32"} == {
        "placement dla0: this device (NVIDIA Jetson Orin Nano Developer Kit) has no DLA"}


def test_orin_nx_8gb_skips_dla1_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    with_board(monkeypatch, replace(ORIN_ENV, jetson_model="NVIDIA Jetson Orin NX (8GB ram)", dla_cores=1))
    planned = expand(load_profile("orin-nx"), HOST)
    dla1 = [p for p in planned if "dla1" in p.cfg.placement and p.cfg.precision != "fp32"]
    assert dla1 and all("has 1 DLA core(s)" in (p.skip_reason or "") for p in dla1)
    assert all(p.skip_reason is None for p in planned if p.cfg.placement == "gpu+dla0" and p.cfg.precision == "fp16")


def test_boards_plan_here_without_tensorrt_with_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    with_board(monkeypatch, trt_logic.TrtEnv(trt_version=None, missing_reason=trt_logic.INSTALL_HINT))
    for name in BOARDS:
        planned = expand(load_profile(name), Env(cpu_count=2, machine="x86_64"))
        assert planned and all(p.skip_reason for p in planned)
        assert {p.skip_reason for p in planned if "dla" not in p.cfg.placement} == {trt_logic.INSTALL_HINT}
