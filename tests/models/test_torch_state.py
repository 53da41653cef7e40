"""The built torch model saved once and loaded by each worker (models/torch_state.py): the same tensors and outputs as
a build, built in a process of its own once per cache, and a module whose state the file cannot hold built as before.
Real torch, real builtin and torchvision models on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.models import in_child, torch_state
from edgebench.models.artifacts import Artifacts
from edgebench.models.export import build_torch_model
from edgebench.models.spec import load_model_spec

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'edgebench[export]')")


def _same_tensors(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("name", ["tiny_cnn", "resnet18"])
def test_a_model_from_the_saved_build_has_the_built_tensors_and_outputs(tmp_path, monkeypatch, name):
    if name == "resnet18":
        pytest.importorskip("torchvision", reason="torchvision is not installed (pip install 'edgebench[export]')")
    # in this process: a build's BatchNorm statistics differ in their last bits with the thread count it ran with
    monkeypatch.setattr(in_child, "IN_CHILD", False)
    spec = load_model_spec(name)
    saved = torch_state.built_state(spec, Artifacts(tmp_path), seed=2)
    built = build_torch_model(spec, 2)
    loaded = torch_state.model_from_state(spec, saved.path)
    assert loaded is not None and not loaded.training
    assert _same_tensors(built, loaded)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((2, *spec.inputs[0].shape), dtype=np.float32))
    with torch.no_grad():
        assert torch.equal(built(x), loaded(x))
        other = build_torch_model(spec, 3)(x)
    assert not torch.equal(other, loaded(x))  # the seed is in the file: another seed's build differs


def test_the_build_runs_once_in_a_process_of_its_own_and_is_reused(tmp_path, monkeypatch):
    calls = []
    real = in_child.run_in_child
    monkeypatch.setattr(torch_state, "run_in_child", lambda *a: calls.append(a[1]) or real(*a))
    spec = load_model_spec("tiny_cnn")
    first = torch_state.built_state(spec, Artifacts(tmp_path), seed=0)
    assert calls == ["torch build"] and not first.reused and first.sidecar["tensors"] > 0
    again = torch_state.built_state(spec, Artifacts(tmp_path), seed=0)
    assert calls == ["torch build"] and again.reused and again.path == first.path
    other = torch_state.built_state(spec, Artifacts(tmp_path), seed=1)
    assert calls == ["torch build", "torch build"] and other.path != first.path


def test_a_module_with_state_the_file_does_not_hold_is_not_loaded_from_it(tmp_path, monkeypatch):
    monkeypatch.setattr(in_child, "IN_CHILD", False)
    spec = load_model_spec("tiny_cnn")
    saved = torch_state.built_state(spec, Artifacts(tmp_path), seed=0)
    assert torch_state.model_from_state(spec, saved.path) is not None
    real = torch_state.construct_torch_model

    def with_buffer(s):
        model = real(s)
        model.register_buffer("table", torch.arange(4.0), persistent=False)  # never in a state_dict
        return model

    monkeypatch.setattr(torch_state, "construct_torch_model", with_buffer)
    assert torch_state.model_from_state(spec, saved.path) is None
    # another model's file does not fit this one
    monkeypatch.setattr(torch_state, "construct_torch_model", real)
    assert torch_state.model_from_state(load_model_spec("small_cnn"), saved.path) is None


def test_an_unreadable_file_is_not_loaded(tmp_path):
    bad = tmp_path / "tiny_cnn.pt"
    bad.write_bytes(b"not a torch file")
    assert torch_state.model_from_state(load_model_spec("tiny_cnn"), bad) is None


def test_a_file_replaced_after_its_check_is_checked_again(tmp_path, monkeypatch):
    monkeypatch.setattr(in_child, "IN_CHILD", False)
    spec = load_model_spec("tiny_cnn")
    cache = Artifacts(tmp_path)
    seed0 = torch_state.built_state(spec, cache, seed=0)
    seed5 = torch_state.built_state(spec, cache, seed=5)
    assert torch_state.built_state(spec, cache, seed=0).path == seed0.path  # the memo
    seed0.path.write_bytes(seed5.path.read_bytes())  # other tensors that fit the module, under seed 0's key
    again = torch_state.built_state(spec, cache, seed=0)  # hashed again: its sha256 is not the one recorded
    assert not again.reused
    expected = build_torch_model(spec, 0).state_dict()
    loaded = torch_state.model_from_state(spec, again.path).state_dict()
    assert all(torch.equal(expected[k], loaded[k]) for k in expected)


def test_a_build_that_does_not_load_back_whole_is_refused_where_it_is_saved(tmp_path, monkeypatch):
    from edgebench.errors import ModelError
    from edgebench.models import export

    monkeypatch.setattr(in_child, "IN_CHILD", False)
    real = export.construct_torch_model

    def with_buffer(s):
        model = real(s)
        model.register_buffer("table", torch.arange(4.0), persistent=False)
        return model

    monkeypatch.setattr(export, "construct_torch_model", with_buffer)
    monkeypatch.setattr(torch_state, "construct_torch_model", with_buffer)
    with pytest.raises(ModelError, match="tiny_cnn: its saved build does not load back into the module whole"):
        torch_state.built_state(load_model_spec("tiny_cnn"), Artifacts(tmp_path), seed=0)


def test_a_pretrained_torchvision_model_is_not_saved():
    import dataclasses

    spec = load_model_spec("resnet18")
    assert torch_state.not_saved_why(spec) is None  # random init: saved
    pretrained = dataclasses.replace(spec, weights="torchvision:IMAGENET1K_V1")  # read from the spec, not resolved
    assert "pretrained builder" in torch_state.not_saved_why(pretrained)
