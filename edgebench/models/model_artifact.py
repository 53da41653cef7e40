"""ModelArtifact: the model a backend prepares from (an ONNX file for one precision, plus its identity)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgebench.models.inputs import InputDesc, legacy_input


@dataclass(frozen=True)
class ModelArtifact:
    """The model a backend prepares from: an ONNX file for one precision, plus its identity."""

    model: str
    precision: str
    onnx_path: str
    sha256: str
    input_name: str
    input_shape: tuple[int, ...]  # per-sample, without batch
    input_dtype: str = "float32"
    weights: str = "random-init"
    sidecar: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[InputDesc, ...] = ()  # every input (edgebench.models.inputs); empty = the one input above
    output_names: tuple[str, ...] = ()

    @property
    def input_set(self) -> tuple[InputDesc, ...]:
        return self.inputs or (legacy_input(self.input_name, self.input_dtype, self.input_shape),)
