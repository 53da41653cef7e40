"""Accuracy of a row against the FP32 reference on the same fixed inputs.

The reference is the FP32 ONNX run by ONNX Runtime on the CPU (the most portable exact runtime),
on `accuracy_samples` seeded inputs. Every row's instance 0 runs the same inputs outside the
measured window; this module compares the two. Metrics per sample over the class axis:
top-1 agreement (%), max absolute error, minimum cosine similarity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

ACCURACY_SEED_OFFSET = 1_000_003  # accuracy inputs never equal the timing inputs


@dataclass(frozen=True)
class Agreement:
    top1_agreement_pct: float
    max_abs_err: float
    cosine_min: float
    samples: int


def accuracy_inputs(sample_shape: tuple[int, ...], samples: int, seed: int, dtype: str = "float32") -> np.ndarray:
    from edgebench.backends.base import make_input

    return make_input((samples, *sample_shape), dtype, seed + ACCURACY_SEED_OFFSET)


def reference_outputs(fp32_onnx: str, input_name: str, inputs: np.ndarray) -> np.ndarray:
    """First output of the FP32 model on `inputs`, ONNX Runtime CPU, one sample at a time is not needed:
    the exported models have a dynamic batch axis, so the whole set runs as one batch."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(fp32_onnx, sess_options=so, providers=["CPUExecutionProvider"])
    return sess.run(None, {input_name: inputs})[0]


def compare(outputs: np.ndarray, reference: np.ndarray) -> Agreement:
    import numpy as np

    if outputs.shape != reference.shape:
        raise ValueError(f"output shape {outputs.shape} differs from the FP32 reference {reference.shape}")
    out = outputs.reshape(outputs.shape[0], -1).astype(np.float64)
    ref = reference.reshape(reference.shape[0], -1).astype(np.float64)
    top1 = float(np.mean(out.argmax(axis=1) == ref.argmax(axis=1)) * 100.0)
    max_abs = float(np.max(np.abs(out - ref))) if out.size else 0.0
    norms = np.linalg.norm(out, axis=1) * np.linalg.norm(ref, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(norms > 0, np.sum(out * ref, axis=1) / norms, np.where(np.all(out == ref, axis=1), 1.0, 0.0))
    return Agreement(top1, max_abs, float(np.min(cos)), int(out.shape[0]))
