"""Per-sweep memo of a model's artifacts: the resolved spec, the exported FP32 ONNX, precision variants, the labelled
evaluation subset and FP32 reference outputs, each made once and reused by every row that needs it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from edgebench.evaluation.accuracy import reference_outputs_all
from edgebench.models.artifacts import Artifacts
from edgebench.models.export import export_onnx
from edgebench.models.inputs import sample_count
from edgebench.models.labelled import evaluation_set
from edgebench.models.precision import precision_artifact, resolved_spec
from edgebench.models.quantized_file import quantized_ops
from edgebench.models.spec import ModelSpec, load_model_spec

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.models.model_artifact import ModelArtifact


REFERENCE_CHUNK = 256  # samples per FP32-reference batch


@dataclass
class ModelCache:
    """Per-sweep memo of exported models, precision artifacts and FP32 reference outputs."""

    artifacts: Artifacts
    calibration: dict[str, Any]
    onnx_specs: dict[str, ModelSpec] = field(default_factory=dict)  # external ONNX by label
    accuracy: dict[str, Any] = field(default_factory=dict)  # profile section accuracy: dataset, labels, weights
    _labelled: dict[tuple[str, int], Any] = field(default_factory=dict)
    shapes: dict[str, str] = field(default_factory=dict)  # profile sweep.shapes: model -> trtexec shape text
    values: dict[str, Any] = field(default_factory=dict)  # profile sweep.values: input name -> fixed value
    _fp32: dict[str, Any] = field(default_factory=dict)
    _variants: dict[tuple[str, str], ModelArtifact] = field(default_factory=dict)
    _refs: dict[tuple[str, int, int], Any] = field(default_factory=dict)
    _quantized: dict[str, dict[str, int]] = field(default_factory=dict)
    _specs: dict[str, ModelSpec] = field(default_factory=dict)
    probes: dict[tuple, Any] = field(default_factory=dict)  # probe results by probe_key (pipeline/probe_step.py)

    def spec(self, model: str) -> ModelSpec:
        """The model's spec with its input set resolved (shapes from the profile's sweep.shapes or the spec; fixed
        values from the spec's values: and the sweep's, for the inputs it has)."""
        if model not in self._specs:
            base = self.onnx_specs[model] if model in self.onnx_specs else load_model_spec(model)
            shapes = self.shapes.get(model) if model not in self.onnx_specs else None
            self._specs[model] = resolved_spec(base, shapes, f"sweep.shapes.{model}", self.values)
        spec = self._specs[model]
        if self.accuracy.get("weights") and spec.source != "onnx":  # --weights / accuracy.weights
            spec = dataclasses.replace(spec, weights=self.accuracy["weights"])
        return spec

    def labelled(self, spec: ModelSpec, samples: int) -> Any:
        """The evaluation subset of accuracy.dataset for this model (None without a data set)."""
        if not self.accuracy.get("dataset") or samples <= 0:
            return None
        key = (spec.name, samples)
        if key not in self._labelled:
            self._labelled[key] = evaluation_set(spec, self.accuracy, self.calibration, samples)
        return self._labelled[key]

    def fp32(self, spec: ModelSpec) -> Any:
        if spec.name not in self._fp32:
            self._fp32[spec.name] = export_onnx(spec, self.artifacts)
        return self._fp32[spec.name]

    def quantized_ops(self, spec: ModelSpec) -> dict[str, int]:
        """The quantized ops of the model's fp32 file ({} for a float graph): a file given already quantized."""
        if spec.name not in self._quantized:
            self._quantized[spec.name] = quantized_ops(self.fp32(spec).path) if spec.source == "onnx" else {}
        return self._quantized[spec.name]

    def variant(self, spec: ModelSpec, precision: str) -> ModelArtifact:
        key = (spec.name, precision)
        if key not in self._variants:
            calibration = {**self.calibration, "dataset": self.accuracy.get("dataset"),
                           "labels": self.accuracy.get("labels")}
            art = precision_artifact(spec, self.fp32(spec), precision, self.artifacts, calibration)
            # the weights this sweep uses (a --weights override included), for backends that rebuild the model
            self._variants[key] = dataclasses.replace(art, sidecar={**art.sidecar, "weights_spec": spec.weights})
        return self._variants[key]

    def reference(self, spec: ModelSpec, inputs: np.ndarray, seed: int) -> np.ndarray:
        """The first output of the FP32 model on one input's array (the one-input form)."""
        return next(iter(self.references(spec, {spec.first_input.name: inputs}, seed).values()))

    def references(self, spec: ModelSpec, feeds: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
        """Every output of the FP32 model on `feeds`, ORT CPU, in chunks of at most REFERENCE_CHUNK samples (a
        labelled set of thousands of 224x224 images in one batch needs tens of GB) or of the graph's fixed batch."""
        plan = spec.inputs if set(feeds) == {d.name for d in spec.inputs} else None
        key = (spec.name, sample_count(feeds, plan), seed)
        if key not in self._refs:
            self._refs[key] = reference_outputs_all(str(self.fp32(spec).path), feeds, max_batch=REFERENCE_CHUNK,
                                                    plan=plan, fixed_batch=spec.fixed_batch)
        return self._refs[key]
