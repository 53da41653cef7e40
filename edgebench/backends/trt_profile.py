"""The TensorRT optimisation profile of a model's input set: min/opt/max for every dynamic input (pure logic).

It comes from the same shape plan every backend feeds (edgebench.models.inputs: per-sample shapes resolved from the
graph, `--shapes`, the profile and the model spec), so a TensorRT engine is built for exactly the shapes the
row measures. TensorRT needs a profile entry for each network input that has a dynamic dimension (-1);
inputs whose every dim is fixed get none.

The trt backend builds one engine per measured batch, so its profile is static (min = opt = max = the
batch's shape). `batch_range` gives a range over the batch axis (min batch, max batch, opt = `batch`) for an
engine that serves several batches; the non-batch axes stay at the plan's shape.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from edgebench.errors import BackendError
from edgebench.models.inputs import InputDesc

Shape = tuple[int, ...]


@dataclass(frozen=True)
class ProfileEntry:
    """One dynamic input's profile: the shapes IOptimizationProfile.set_shape takes."""

    name: str
    min: Shape
    opt: Shape
    max: Shape

    def as_tuple(self) -> tuple[str, Shape, Shape, Shape]:
        return (self.name, self.min, self.opt, self.max)


def optimisation_profile(inputs: Iterable[InputDesc], batch: int,
                         batch_range: tuple[int, int] | None = None) -> tuple[ProfileEntry, ...]:
    """min/opt/max for every input with a dynamic axis (InputDesc.dynamic_axes), in input order.

    Static (batch_range None): min = opt = max = (batch, *sample shape). With batch_range (lo, hi): the batch
    axis (InputDesc.batch_axis, not always axis 0: a state [layers, batch, hidden] has it at 1) spans lo..hi with
    opt = batch, which must lie inside; only an input whose batch axis is dynamic can span a range, and an
    input with no batch axis keeps its one shape. Errors name the input."""
    if batch < 1:
        raise BackendError(f"TensorRT profile: batch {batch} must be >= 1")
    if batch_range is not None:
        lo, hi = batch_range
        if not 1 <= lo <= batch <= hi:
            raise BackendError(f"TensorRT profile: batch range {lo}..{hi} must hold the batch {batch} (and start >= 1)")
    entries = []
    for d in inputs:
        if not d.dynamic_axes:
            continue
        if any(s < 1 for s in d.shape):
            raise BackendError(f"TensorRT profile: input '{d.name}' has an unresolved dim in {list(d.shape)}")
        opt = d.full_shape(batch)
        if batch_range is None:
            entries.append(ProfileEntry(d.name, opt, opt, opt))
            continue
        if d.batch_axis is None:  # per-model input (state, a scalar): one shape at every batch
            entries.append(ProfileEntry(d.name, opt, opt, opt))
            continue
        if d.batch_axis not in d.dynamic_axes:
            raise BackendError(f"TensorRT profile: input '{d.name}' has a fixed batch axis; it cannot span "
                               f"batches {batch_range[0]}..{batch_range[1]}")
        entries.append(ProfileEntry(d.name, d.full_shape(batch_range[0]), opt, d.full_shape(batch_range[1])))
    return tuple(entries)


def check_network_inputs(entries: Iterable[ProfileEntry], network_inputs: dict[str, Shape]) -> list[ProfileEntry]:
    """The entries for the inputs of the parsed network that have a dynamic dim (-1), after checking every such
    input has one and that ranks and fixed dims agree. `network_inputs`: name -> dims as TensorRT reports them."""
    by_name = {e.name: e for e in entries}
    out = []
    for name, dims in network_inputs.items():
        entry = by_name.get(name)
        if not any(d < 0 for d in dims):
            continue
        if entry is None:
            raise BackendError(f"TensorRT network input '{name}' {list(dims)} is dynamic and the shape plan has no "
                               f"shape for it (inputs planned: {', '.join(by_name) or 'none'})")
        for shape in (entry.min, entry.opt, entry.max):
            if len(shape) != len(dims) or any(d >= 0 and d != s for d, s in zip(dims, shape, strict=False)):
                raise BackendError(f"TensorRT network input '{name}' has dims {list(dims)}; the plan's shape "
                                   f"{list(shape)} does not fit them")
        out.append(entry)
    return out
