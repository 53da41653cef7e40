"""ModelArtifact: the model a backend prepares from (an ONNX file for one precision, plus its identity)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgebench.models.inputs import InputDesc


@dataclass(frozen=True)
class ModelArtifact:
    """The model a backend prepares from: an ONNX file for one precision, plus its identity."""

    model: str
    precision: str
    onnx_path: str
    sha256: str
    inputs: tuple[InputDesc, ...]  # every input, per-sample shapes (edgebench.models.inputs)
    weights: str = "random-init"
    sidecar: dict[str, Any] = field(default_factory=dict)
    output_names: tuple[str, ...] = ()

    @property
    def first_input(self) -> InputDesc:
        """The first input: the one a one-input path means (implicit INT8 calibration, a bare array)."""
        return self.inputs[0]
