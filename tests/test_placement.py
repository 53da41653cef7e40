"""One placement grammar: parsed once (the plan), read by every stage, its text unchanged in rows and hashes."""

from __future__ import annotations

import json
import pickle

import pytest

from edgebench.backends.ort import provider_for, trt_provider_options
from edgebench.backends.torch_backend import parse_device
from edgebench.backends.trt_logic import Target, parse_placement
from edgebench.config.profile import load_profile
from edgebench.config.run_config import RunConfig
from edgebench.pipeline.plan import placement_sets
from edgebench.placement import Placement
from edgebench.telemetry.nvml import gpu_devices


@pytest.mark.parametrize("text, kind, number", [
    ("cpu", "cpu", 0), ("cuda", "gpu", 0), ("gpu", "gpu", 0), ("cuda:3", "gpu", 3), ("gpu:2", "gpu", 2),
    ("dla", "dla", 0), ("dla1", "dla", 1), ("cuda:x", "unknown", 0), ("tpu", "unknown", 0), ("CPU", "unknown", 0),
])
def test_grammar(text, kind, number):
    p = Placement(text)
    assert (p.kind, p.number, str(p)) == (kind, number, text)
    assert p == text and repr(p) == repr(text) and json.dumps([p]) == json.dumps([text])  # the text, unchanged


def test_parsed_once_kept_across_processes_and_immutable():
    p = Placement("dla1")
    assert Placement(p) is p
    back = pickle.loads(pickle.dumps(p))
    assert type(back) is Placement and back.dla_core == 1 and back.cuda_index is None
    with pytest.raises(AttributeError):
        p.number = 0  # type: ignore[misc]


def test_the_plan_parses_and_run_config_carries_placements():
    sets = placement_sets(load_profile("orin-agx"))
    assert all(isinstance(p, Placement) for s in sets for p in s)
    cfg = RunConfig(model="m", backend="trt", precision="fp16", batch=1, placements=("gpu:1", "dla0"))
    assert [type(p) for p in cfg.placements] == [Placement, Placement]
    assert cfg.uses_gpu and cfg.placement == "gpu:1+dla0" and cfg.to_dict()["placements"] == ["gpu:1", "dla0"]
    assert not RunConfig(model="m", backend="trt", precision="fp16", batch=1, placements=("dla0",)).uses_gpu


def test_every_stage_reads_the_same_grammar():
    assert parse_device("gpu:1") == ("cuda", 1) and parse_device("dla0") is None
    assert parse_placement("cuda:0") == Target("gpu") and parse_placement("cuda:1") is None
    assert parse_placement("dla") == Target("dla", 0)
    assert provider_for("gpu:1") == ("CUDAExecutionProvider", {"device_id": 1}) and provider_for("dla0") is None
    assert trt_provider_options("dla1", "fp16", "/c")[1]["trt_dla_core"] == 1  # type: ignore[index]
    assert gpu_devices((Placement("gpu:1"), "cuda:0", "dla0"), {}) == [1, 0]
