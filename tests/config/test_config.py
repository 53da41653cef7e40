"""Profiles and model specs: loading, inheritance, and errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench.config.profile import list_profiles, load_profile
from edgebench.config.run_config import RunConfig
from edgebench.errors import ConfigError
from edgebench.models.spec import list_models, load_model_spec, model_spec_from_dict


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_shipped_profile_loads_and_host_extends_base():
    names = dict(list_profiles())
    assert "host" in names and "base" in names
    assert not any(desc.startswith("BROKEN") for desc in names.values()), names
    host = load_profile("host")
    base = load_profile("base")
    # host overrides the sweep but inherits run settings it does not set
    assert host.sweep["models"] == ["mobilenet_v2", "resnet18"]
    assert host.run["min_inferences"] == base.run["min_inferences"] == 662
    assert "extends" in host.source and "base.yaml" in host.source


def test_child_overrides_parent_key_by_key(tmp_path):
    path = write(tmp_path, "child.yaml", "extends: base\nrun:\n  duration_s: 2.5\nsweep:\n  batches: [2, 4]\n")
    prof = load_profile(str(path))
    assert prof.run["duration_s"] == 2.5
    assert prof.run["warmup_s"] == load_profile("base").run["warmup_s"]  # merged, not replaced
    assert prof.sweep["batches"] == [2, 4]
    assert prof.name == "child"


@pytest.mark.parametrize(
    "text, field, words",
    [
        ("sweep:\n  batchez: [1]\n", "sweep.batchez", "unknown key"),
        ("runn:\n  duration_s: 1\n", "runn", "unknown key"),
        ("sweep:\n  batches: 8\n", "sweep.batches", "expected list[int]"),
        ("sweep:\n  batches: [1, '8']\n", "sweep.batches", "expected list[int]"),
        ("sweep:\n  batches: [0]\n", "sweep.batches", "below the minimum"),
        ("sweep:\n  batches: []\n", "sweep.batches", "must not be empty"),
        ("sweep:\n  precisions: [fp8]\n", "sweep.precisions", "'fp8' is not one of"),
        ("sweep:\n  modes: [threads]\n", "sweep.modes", "'threads' is not one of"),
        ("run:\n  duration_s: fast\n", "run.duration_s", "expected float"),
        ("run:\n  duration_s: 10\n  max_duration_s: 5\n", "run.max_duration_s", "shorter than run.duration_s"),
        ("run:\n  threads_per_instance: 0\n", "run.threads_per_instance", "must be >= 1"),
        ("sweep: [1, 2]\n", "sweep", "expected a mapping"),
        ("extends: nosuchprofile\n", "extends", "unknown profile"),
    ],
)
def test_bad_profile_error_names_file_and_field(tmp_path, text, field, words):
    path = write(tmp_path, "bad.yaml", "extends: base\n" + text if not text.startswith("extends") else text)
    with pytest.raises(ConfigError) as info:
        load_profile(str(path))
    msg = str(info.value)
    assert str(path) in msg
    assert f"'{field}'" in msg
    assert words in msg


def test_invalid_yaml_and_circular_extends(tmp_path):
    broken = write(tmp_path, "broken.yaml", "sweep: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML") as info:
        load_profile(str(broken))
    assert str(broken) in str(info.value)
    a = write(tmp_path, "a.yaml", f"extends: {tmp_path / 'b.yaml'}\n")
    write(tmp_path, "b.yaml", f"extends: {a}\n")
    with pytest.raises(ConfigError, match="circular extends"):
        load_profile(str(a))


def test_unknown_profile_lists_known_ones():
    with pytest.raises(ConfigError) as info:
        load_profile("no-such-board")
    assert "unknown profile" in str(info.value) and "host" in str(info.value)


def test_empty_profile_is_refused_naming_the_file(tmp_path):
    for name, text in (("empty.yaml", ""), ("comment.yaml", "# nothing but a comment\n")):
        path = write(tmp_path, name, text)
        with pytest.raises(ConfigError) as info:
            load_profile(str(path))
        assert str(info.value) == f"{path}: the file is empty (no keys); a profile or model spec needs at least " \
                                  "a name or `extends:`"


def test_duplicated_key_is_refused_naming_the_file_and_the_key(tmp_path):
    path = write(tmp_path, "dup.yaml", "extends: host\nrun:\n  duration_s: 1\n  warmup_s: 1\n  duration_s: 20\n")
    with pytest.raises(ConfigError) as info:
        load_profile(str(path))
    assert str(info.value) == (f"{path}: field 'run.duration_s': given twice (lines 3 and 5); YAML would keep only "
                               "the last one silently: remove one")
    top = write(tmp_path, "top.yaml", "name: a\nsweep: {batches: [1]}\nname: b\n")
    with pytest.raises(ConfigError, match="field 'name': given twice \\(lines 1 and 3\\)"):
        load_profile(str(top))


def test_a_profile_path_that_does_not_exist_says_so(tmp_path):
    for given in (str(tmp_path / "missing.yaml"), str(tmp_path / "sub" / "board"), "profiles/nosuch.yml"):
        with pytest.raises(ConfigError) as info:
            load_profile(given)
        assert str(info.value) == f"{given}: file does not exist"
    with pytest.raises(ConfigError, match="is a folder, not a profile file"):
        load_profile(str(tmp_path) + "/")


def test_command_line_overrides_are_validated():
    prof = load_profile("host")
    changed = prof.with_overrides("sweep", batches=[2], models=None)
    assert changed.sweep["batches"] == [2] and changed.sweep["models"] == prof.sweep["models"]
    with pytest.raises(ConfigError, match="'sweep.batches'"):
        prof.with_overrides("sweep", batches=["x"])
    with pytest.raises(ConfigError, match="'sweep.precisions'"):
        prof.with_overrides("sweep", precisions=["int4"])


def test_model_specs_and_their_errors(tmp_path):
    assert {"resnet18", "resnet50", "mobilenet_v2", "tiny_cnn"} <= set(list_models())
    spec = load_model_spec("resnet50")
    assert spec.inputs[0].shape == (3, 224, 224) and spec.source == "torchvision"
    assert spec.weights_label == "random-init"
    with pytest.raises(ConfigError, match="unknown model 'resnet5000'"):
        load_model_spec("resnet5000")
    good = {"name": "m", "source": "torchvision", "arch": "resnet18", "input_shape": [3, 8, 8]}
    with pytest.raises(ConfigError, match="'input_shape': is required"):
        model_spec_from_dict({k: v for k, v in good.items() if k != "input_shape"}, "m.yaml")
    with pytest.raises(ConfigError, match="'source': 'keras' is not one of"):
        model_spec_from_dict({**good, "source": "keras"}, "m.yaml")
    with pytest.raises(ConfigError, match="'arch': is required for source torchvision"):
        model_spec_from_dict({**good, "arch": ""}, "m.yaml")
    with pytest.raises(ConfigError, match="'colour': unknown key"):
        model_spec_from_dict({**good, "colour": "red"}, "m.yaml")
    weights = tmp_path / "w.pth"
    weights.write_bytes(b"x")
    assert model_spec_from_dict({**good, "weights": str(weights)}, "m.yaml").weights_label == "w.pth"


def test_run_config_identity_and_impossible_values():
    a = RunConfig(model="m", backend="ort", precision="fp32", batch=8, placements=("cpu", "cpu"))
    b = RunConfig(model="m", backend="ort", precision="fp32", batch=8, placements=("cpu", "cpu"))
    c = RunConfig(model="m", backend="ort", precision="int8", batch=8, placements=("cpu", "cpu"))
    assert a.config_hash() == b.config_hash() != c.config_hash()
    assert a.instances == 2 and a.placement == "cpu+cpu"
    with pytest.raises(ConfigError, match="'batch'"):
        RunConfig(model="m", backend="ort", precision="fp32", batch=0, placements=("cpu",))
    with pytest.raises(ConfigError, match="'instances'"):
        RunConfig(model="m", backend="ort", precision="fp32", batch=1, placements=())
    with pytest.raises(ConfigError, match="'precision'"):
        RunConfig(model="m", backend="ort", precision="fp64", batch=1, placements=("cpu",))
