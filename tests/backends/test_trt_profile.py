"""TensorRT optimisation profiles from the shape plan: pure logic, no TensorRT needed."""

from __future__ import annotations

import pytest

from edgebench.backends import trt_logic as L
from edgebench.backends.trt_profile import ProfileEntry, check_network_inputs, optimisation_profile
from edgebench.config.run_config import RunConfig
from edgebench.errors import BackendError
from edgebench.models.inputs import GraphInput as G
from edgebench.models.inputs import InputDesc, resolve
from edgebench.models.model_artifact import ModelArtifact

BERT = resolve([G("input_ids", "int64", ("batch", "seq")), G("attention_mask", "int64", ("batch", "seq")),
                G("scale", "float32", (1,))], shapes={"input_ids": (8, 128), "attention_mask": (8, 128)},
               vocab={"*": 30522}).inputs
ORIN = L.TrtEnv(trt_version="10.3.0.30", has_fp16_flag=True, has_int8_flag=True, has_strongly_typed=True,
                has_entropy_calibrator=True, jetson_model=None, dla_cores=0)


def test_static_profile_for_every_dynamic_input_none_for_fixed_ones() -> None:
    entries = optimisation_profile(BERT, batch=4)
    assert [e.name for e in entries] == ["input_ids", "attention_mask"]  # 'scale' is fixed [1]: no entry
    assert entries[0] == ProfileEntry("input_ids", (4, 128), (4, 128), (4, 128))


def test_batch_range_profile_spans_the_batch_axis_only() -> None:
    (ids, mask) = optimisation_profile(BERT[:2], batch=8, batch_range=(1, 32))
    assert (ids.min, ids.opt, ids.max) == ((1, 128), (8, 128), (32, 128))
    assert mask.max == (32, 128)
    with pytest.raises(BackendError, match="must hold the batch 8"):
        optimisation_profile(BERT, batch=8, batch_range=(1, 4))
    fixed = (InputDesc("x", "float32", (3, 8, 8), "image", None, (2, 3)),)  # symbolic H, W; batch fixed
    assert optimisation_profile(fixed, 1)[0].opt == (1, 3, 8, 8)
    with pytest.raises(BackendError, match="input 'x' has a fixed batch axis"):
        optimisation_profile(fixed, 1, batch_range=(1, 2))


def test_network_inputs_are_checked_against_the_plan() -> None:
    entries = optimisation_profile(BERT, batch=2)
    net = {"input_ids": (-1, -1), "attention_mask": (-1, 128), "scale": (1,)}
    assert [e.name for e in check_network_inputs(entries, net)] == ["input_ids", "attention_mask"]
    with pytest.raises(BackendError, match="'token_type_ids' .* is dynamic and the shape plan has no shape"):
        check_network_inputs(entries, {**net, "token_type_ids": (-1, -1)})
    with pytest.raises(BackendError, match="'attention_mask' has dims \\[-1, 64\\]"):
        check_network_inputs(entries, {**net, "attention_mask": (-1, 64)})


def test_build_plan_carries_the_profile_and_keys_engines_by_every_input() -> None:
    side = {"source_fp32": {"path": "/c/fp32/bert.onnx", "sha256": "f" * 64}}

    def art(inputs: tuple[InputDesc, ...]) -> ModelArtifact:
        return ModelArtifact(model="bert", precision="fp16", onnx_path="/c/fp16/bert.onnx", sha256="a" * 64,
                             inputs=inputs, sidecar=side)

    cfg = RunConfig(model="bert", backend="trt", precision="fp16", batch=4, placements=("gpu",))
    plan = L.build_plan(cfg, art(BERT), L.Target("gpu"), ORIN, L.check_options({}))
    assert plan.profile == (("input_ids", (4, 128), (4, 128), (4, 128)),
                            ("attention_mask", (4, 128), (4, 128), (4, 128)))
    shorter = resolve([G("input_ids", "int64", ("batch", "seq")), G("attention_mask", "int64", ("batch", "seq"))],
                      shapes={"input_ids": (1, 128), "attention_mask": (1, 64)}, vocab={"*": 9}).inputs
    other = L.build_plan(cfg, art(shorter), L.Target("gpu"), ORIN, L.check_options({}))
    k1, k2 = (L.engine_key(p, "10.3", "Orin", "8.7") for p in (plan, other))
    assert k1 != k2  # the mask's sequence length is part of the engine's identity
    with pytest.raises(BackendError, match="int8_calibration=entropy.*this model has 3"):
        L.build_plan(RunConfig(model="bert", backend="trt", precision="int8", batch=4, placements=("gpu",)),
                     art(BERT), L.Target("gpu"), ORIN, L.check_options({"int8_calibration": "entropy"}),
                     calibration={"sha256": "c" * 64, "count": 8})
