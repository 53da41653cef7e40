"""Sweep expansion: every combination, in order, impossible ones skipped WITH a reason."""

from __future__ import annotations

from edgebench.backends.base import Env
from edgebench.config.profile import load_profile
from edgebench.pipeline.plan import describe, expand, placement_sets

CPU_ENV = Env(cpu_count=4, machine="x86_64", ort_version="1.31", ort_providers=("CPUExecutionProvider",))


def test_host_profile_expands_with_fp16_skipped_with_reason():
    prof = load_profile("host")
    planned = expand(prof, CPU_ENV)
    n = len(prof.sweep["models"]) * len(prof.sweep["precisions"]) * len(prof.sweep["batches"]) * len(prof.sweep["instances"])
    assert len(planned) == n
    fp16 = [p for p in planned if p.cfg.precision == "fp16"]
    assert fp16 and all(p.skip_reason and "float16" in p.skip_reason for p in fp16)
    runnable = [p for p in planned if p.skip_reason is None]
    assert {p.cfg.precision for p in runnable} == {"fp32", "int8"}
    # threads auto: the cores split between instances, every core for one (issue 27; issue 19 kept one: (1, 3), (2, 1))
    assert {(p.cfg.instances, p.cfg.threads_per_instance) for p in runnable} == {(1, 4), (2, 2)}
    text = describe(planned)
    assert f"{len(planned)} configurations: {len(runnable)} to run, {len(fp16)} skipped" in text
    assert text.count("SKIP:") == len(fp16)


def test_dry_run_names_placements_as_the_console_does():
    """issue 28's one naming: `2x cpu` (not the csv cell `cpu+cpu`), mixes joined as the console joins them."""
    prof = load_profile("host").with_overrides(
        "sweep", models=["resnet18"], precisions=["fp32"], batches=[1],
        placements=[["cpu"], ["cpu", "cpu"], ["cuda:0", "cuda:0", "dla0"]])
    lines = describe(expand(prof, CPU_ENV)).splitlines()[1:]
    assert [line.split()[5] for line in lines] == ["cpu", "2x", "2x"]
    assert " 2x cpu " in lines[1] and " 2x cuda:0+dla0 " in lines[2]
    assert "cpu+cpu" not in "\n".join(lines)


def test_impossible_placements_and_missing_runtime_are_skipped_not_crashed():
    prof = load_profile("host")
    prof = prof.with_overrides("sweep", placements=[["cpu"], ["dla0"], ["cuda:0", "cuda:0"]], precisions=["fp32"])
    assert placement_sets(prof) == [("cpu",), ("dla0",), ("cuda:0", "cuda:0")]
    planned = {p.cfg.placement: p for p in expand(prof, CPU_ENV) if p.cfg.model == "resnet18"}
    assert planned["cpu"].skip_reason is None
    assert "DLA needs the trt backend" in planned["dla0"].skip_reason
    assert "CUDAExecutionProvider is not available" in planned["cuda:0+cuda:0"].skip_reason
    no_ort = Env(cpu_count=2, machine="x86_64", ort_missing_reason="onnxruntime is not installed")
    assert all(p.skip_reason == "onnxruntime is not installed" for p in expand(prof, no_ort))


def test_runtime_precisions_are_not_ort_cpu_precisions():
    prof = load_profile("host").with_overrides("sweep", precisions=["tf32", "amp"])
    reasons = {p.cfg.precision: p.skip_reason for p in expand(prof, CPU_ENV)}
    assert "amp is a runtime mode of the torch/TensorRT backends" in reasons["amp"]
    assert "tf32 is a CUDA math mode" in reasons["tf32"]


def test_unknown_model_or_backend_in_profile_names_the_field():
    import pytest

    from edgebench.errors import ConfigError

    prof = load_profile("host").with_overrides("sweep", models=["resnet18", "vgg99"])
    with pytest.raises(ConfigError, match=r"'sweep.models': unknown model 'vgg99'"):
        expand(prof, CPU_ENV)
    prof = load_profile("host").with_overrides("sweep", backends=["tensorflow"])
    with pytest.raises(ConfigError, match=r"'sweep.backends'.*tensorflow"):
        expand(prof, CPU_ENV)


def test_option_sets_and_repeats_multiply_rows_with_distinct_hashes():
    prof = load_profile("host").with_overrides("sweep", models=["resnet18"], precisions=["fp32"],
                                               instances=[1], option_sets=[{}, {"cuda_graph": True}])
    prof = prof.with_overrides("run", repeats=3)
    planned = expand(prof, CPU_ENV)
    assert len(planned) == 2 * 3
    assert len({p.cfg.config_hash() for p in planned}) == 6
    assert sorted({p.cfg.repeat for p in planned}) == [0, 1, 2]
    with_opts = [p for p in planned if p.cfg.options]
    assert len(with_opts) == 3 and all(dict(p.cfg.options) == {"cuda_graph": True} for p in with_opts)
    # ort takes only ort_provider: those rows are skipped with the reason, the plain ones run
    assert all("takes only the option ort_provider (got cuda_graph)" in p.skip_reason for p in with_opts)
    assert all(p.skip_reason is None for p in planned if not p.cfg.options)
    assert "/cuda_graph=True/r2" in with_opts[-1].cfg.label()


def test_a_list_of_gpu_sharing_modes_is_a_sweep_dimension_and_mps_skips_without_cuda(monkeypatch):
    import argparse

    import pytest

    from edgebench.commands.options import sharing_list
    from edgebench.errors import ConfigError
    from edgebench.runner import mps

    monkeypatch.setattr(mps.shutil, "which", lambda name: None)  # no nvidia-cuda-mps-control here
    prof = load_profile("host").with_overrides(
        "sweep", models=["tiny_cnn"], precisions=["fp32"], batches=[1], instances=[1],
        placements=[["cpu"], ["cuda:0"]], backends=["null"], option_sets=[{}, {"sleep_s": 0.001}])
    prof = prof.with_overrides("run", gpu_sharing=sharing_list("time-slicing,mps"))
    planned = expand(prof, CPU_ENV)
    got = [(p.cfg.placement, p.cfg.gpu_sharing, p.cfg.options) for p in planned]
    # sharing is outside the option sets: every option set once under each mode
    assert got == [(pl, g, o) for pl in ("cpu", "cuda:0") for g in ("time-slicing", "mps")
                   for o in ((), (("sleep_s", 0.001),))]
    reasons = {(p.cfg.placement, p.cfg.gpu_sharing): p.skip_reason for p in planned}
    assert "applies to CUDA placements" in reasons[("cpu", "mps")]
    assert "nvidia-cuda-mps-control" in reasons[("cuda:0", "mps")]
    assert sharing_list("mps") == "mps"  # one mode stays a plain value
    with pytest.raises(argparse.ArgumentTypeError, match="time-slicing, mps or both"):
        sharing_list("time-slicing,mpss")
    with pytest.raises(ConfigError, match="gpu_sharing.*'mpss' is not one of"):
        load_profile("host").with_overrides("run", gpu_sharing=["mps", "mpss"])
    with pytest.raises(ConfigError, match="must not be empty"):
        load_profile("host").with_overrides("run", gpu_sharing=[])
