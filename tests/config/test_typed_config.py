"""The typed config: sections as models with one home for their defaults, config-hash omissions declared on the
fields, "did you mean" for near-miss names, and errors about a flag's value naming the flag."""

from __future__ import annotations

import dataclasses

import pytest

from edgebench.backends.null import check_options as null_options
from edgebench.backends.torch_backend import check_options as torch_options
from edgebench.backends.trt_logic import check_options as trt_options
from edgebench.commands.options import apply_overrides, parse_bench_args
from edgebench.config.problems import did_you_mean, kind_text
from edgebench.config.profile import load_profile
from edgebench.config.run_config import HASH_OMIT, RunConfig
from edgebench.config.sections import (
    SECTION_MODELS,
    SECTIONS,
    ProfileFile,
    RunSection,
    Section,
    SweepSection,
    per_row_fields,
)
from edgebench.errors import BackendError, ConfigError
from edgebench.pipeline.plan import expand


def test_sections_are_the_profile_models_in_order():
    sections = [n for n, f in ProfileFile.model_fields.items() if isinstance(f.annotation, type)
                and issubclass(f.annotation, Section)]
    assert tuple(sections) == SECTIONS
    assert all(ProfileFile.model_fields[n].annotation is SECTION_MODELS[n] for n in SECTIONS)


def test_run_defaults_have_one_home():
    run_config_fields = {f.name: f for f in dataclasses.fields(RunConfig)}
    defaults = RunSection()
    assert len(per_row_fields()) == 16  # the 14 of the typed config, arrival (issue 27), slo_horizon_s (issue 35)
    for name in per_row_fields():  # every per-row run field is a RunConfig field with the section's default
        assert run_config_fields[name].default == getattr(defaults, name), name


def test_config_hash_omissions_are_declared_on_the_fields_and_keep_old_hashes():
    omitted = {f.name: f.metadata[HASH_OMIT] for f in dataclasses.fields(RunConfig) if HASH_OMIT in f.metadata}
    assert omitted == {"power_mode": None, "rate_hz": None, "gpu_sharing": "time-slicing", "slo_ms": None,
                       "input_values": {}, "workload": {}}
    cfg = RunConfig(model="tiny_cnn", backend="ort", precision="fp32", batch=1, placements=("cpu",))
    assert cfg.config_hash() == "f3e1e731aa868ed0"  # the hash of this row before the typed config
    # a workload (issue 54: shapes, data, ...) is part of the hash; an empty one (a spec as is) keeps the old hash
    assert dataclasses.replace(cfg, workload=(("shapes", "input:1x3x64x64"),)).config_hash() != cfg.config_hash()
    open_even = dataclasses.replace(cfg, rate_hz=30.0, arrival="even")  # arrival is left out where rows had none
    assert dataclasses.replace(cfg, arrival="poisson").config_hash() == cfg.config_hash()  # closed loop
    assert dataclasses.replace(open_even, arrival="random").config_hash() != open_even.config_hash()
    assert dataclasses.replace(cfg, gpu_sharing="mps").config_hash() != cfg.config_hash()


def test_sections_read_by_attribute_and_by_key():
    prof = load_profile("host")
    assert prof.run.workers == "warm" and prof.run["workers"] == "warm" and prof.run.get("nope", 3) == 3
    assert prof.sweep.models == ["mobilenet_v2", "resnet18"]
    with pytest.raises(KeyError):
        prof.run["nope"]


@pytest.mark.parametrize("annotation, text", [
    (SweepSection.model_fields["batches"].annotation, "list[int]"),
    (SweepSection.model_fields["placements"].annotation, "list[list[str]]"),
    (RunSection.model_fields["threads_per_instance"].annotation, "int|auto"),
    (RunSection.model_fields["rate_hz"].annotation, "float|none"),
    (RunSection.model_fields["gpu_sharing"].annotation, "str|list[str]"),
])
def test_kind_text_names_types_as_the_messages_always_did(annotation, text):
    assert kind_text(annotation) == text


def test_did_you_mean_for_keys_samplers_and_profiles(tmp_path):
    assert did_you_mean("batchez", ["batches", "models"]) == "batches" and did_you_mean("zzz", ["batches"]) is None
    path = tmp_path / "p.yaml"
    path.write_text("extends: base\nsweep:\n  batchez: [1]\ntelemetry:\n  samplers: [hots]\n")
    with pytest.raises(ConfigError) as info:
        load_profile(str(path))
    assert "field 'sweep.batchez': unknown key (did you mean batches?)" in str(info.value)
    assert "field 'telemetry.samplers': unknown sampler 'hots' (did you mean host?)" in str(info.value)
    with pytest.raises(ConfigError, match=r"orin-nz: unknown profile \(did you mean orin-nx\?\)"):
        load_profile("orin-nz")


def test_an_error_about_a_flags_value_names_the_flag():
    host = load_profile("host")
    with pytest.raises(ConfigError) as info:
        apply_overrides(host, parse_bench_args(["--precisions", "fp64"]))
    assert str(info.value) == ("--precisions: field 'sweep.precisions': 'fp64' is not one of fp32, tf32, fp16, "
                               "bf16, amp, int8")
    prof = apply_overrides(host, parse_bench_args(["--models", "resnet81"]))
    with pytest.raises(ConfigError) as info:
        expand(prof, None)  # type: ignore[arg-type] - the model list is checked before the machine is asked
    assert str(info.value) == "--models: field 'sweep.models': unknown model 'resnet81' (did you mean resnet18?)"
    with pytest.raises(ConfigError, match=r"^--slo-ms: field 'run.slo_ms': needs run.rate_hz"):
        apply_overrides(host, parse_bench_args(["--slo-ms", "5"]))


def test_a_value_the_profile_gave_still_names_the_file(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("extends: base\nsweep:\n  models: [resnet81]\n")
    prof = apply_overrides(load_profile(str(path)), parse_bench_args(["--batches", "2"]))
    with pytest.raises(ConfigError) as info:
        expand(prof, None)  # type: ignore[arg-type]
    assert str(info.value).startswith(f"{path} (extends ") and "field 'sweep.models'" in str(info.value)


def test_backend_options_are_models_with_their_texts():
    assert trt_options({}) == {"gpu_fallback": False, "int8_calibration": "auto", "cuda_graph": False,
                               "workspace_mib": 1024, "layer_profile": 0}
    assert null_options({"sleep_s": 1})["sleep_s"] == 1.0
    with pytest.raises(BackendError, match=r"torch backend: unknown option\(s\) chanels_last \(did you mean "
                                           r"channels_last\?\)"):
        torch_options({"chanels_last": True})
    with pytest.raises(BackendError, match=r"trt backend: option workspace_mib=0 must be a positive integer \(MiB\)"):
        trt_options({"workspace_mib": 0})
    with pytest.raises(BackendError, match=r"trt backend: option int8_calibration='x' must be one of auto, explicit"):
        trt_options({"int8_calibration": "x"})
    with pytest.raises(BackendError, match=r"null backend: option sleep_s=True must be a number >= 0"):
        null_options({"sleep_s": True})


def test_an_unquoted_null_backend_is_the_null_backend(tmp_path):
    """YAML reads `backends: [null]` as [None]; in the backends field it can only mean the backend named null
    (issue 37). Elsewhere a null item is still the type error it was."""
    path = tmp_path / "p.yaml"
    path.write_text("extends: base\nsweep:\n  backends: [null, ort]\n")
    assert load_profile(str(path)).sweep.backends == ["null", "ort"]
    path.write_text("extends: base\nsweep:\n  models: [null]\n")
    with pytest.raises(ConfigError, match=r"field 'sweep.models': expected list\[str\], got list \[None\]"):
        load_profile(str(path))
