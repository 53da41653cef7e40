"""The order a sweep measures repeats in (issue 54): by default a model's configurations once per round, each round
reversed, so host drift falls alike on every configuration; `run.repeat_order: grouped` keeps a configuration's
repeats back to back."""

from __future__ import annotations

import pytest

from edgebench.backends.base import Env
from edgebench.config.profile import load_profile
from edgebench.pipeline.plan import expand

CPU_ENV = Env(cpu_count=4, machine="x86_64", ort_version="1.31", ort_providers=("CPUExecutionProvider",))


def _order(repeat_order: str | None, models: list[str]) -> list[tuple[str, int, int]]:
    prof = load_profile("host").with_overrides("sweep", models=models, precisions=["fp32"], batches=[1, 4],
                                               instances=[1])
    run = {"repeats": 3} if repeat_order is None else {"repeats": 3, "repeat_order": repeat_order}
    planned = expand(prof.with_overrides("run", **run), CPU_ENV)
    return [(p.cfg.model, p.cfg.batch, p.cfg.repeat) for p in planned]


def test_repeats_are_interleaved_in_rounds_each_reversed_by_default():
    assert _order(None, ["resnet18"]) == [("resnet18", 1, 0), ("resnet18", 4, 0),
                                          ("resnet18", 4, 1), ("resnet18", 1, 1),
                                          ("resnet18", 1, 2), ("resnet18", 4, 2)]


def test_every_configuration_sits_at_the_same_mean_position_so_a_linear_drift_cancels_over_pairs_of_rounds():
    order = _order(None, ["resnet18"])
    positions: dict[int, list[int]] = {}
    for i, (_m, batch, repeat) in enumerate(order):
        if repeat < 2:  # rounds 0 and 1: one forward, one reversed
            positions.setdefault(batch, []).append(i)
    assert len({sum(p) for p in positions.values()}) == 1


def test_rounds_stay_inside_a_model_so_models_are_not_mixed():
    order = _order(None, ["resnet18", "mobilenet_v2"])
    models = [m for m, _b, _r in order]
    assert models == ["resnet18"] * 6 + ["mobilenet_v2"] * 6


def test_grouped_keeps_a_configurations_repeats_back_to_back():
    assert _order("grouped", ["resnet18"]) == [("resnet18", 1, 0), ("resnet18", 1, 1), ("resnet18", 1, 2),
                                               ("resnet18", 4, 0), ("resnet18", 4, 1), ("resnet18", 4, 2)]


def test_an_unknown_order_is_refused_naming_the_field():
    from edgebench.errors import EdgebenchError
    with pytest.raises(EdgebenchError, match="repeat_order"):
        load_profile("host").with_overrides("run", repeat_order="random")
