"""Accuracy of a row against the FP32 reference on the same fixed inputs.

The reference is the FP32 ONNX run by ONNX Runtime on the CPU (the most portable exact runtime),
on `accuracy_samples` seeded inputs (or the model's real data). Every row's probe process runs the same
inputs (runner/probe.py, never a measured process); this module compares the two, output by output (by name).
Metrics per output: minimum cosine similarity of a sample's values and max absolute error for every
output; top-1 agreement (%) only where the output is a class-score vector ([N, C], float, C >= 2). Samples whose
FP32 reference is ~0 (every |value| < NEAR_ZERO_REF: a detector on noise) are left out of the cosine; an output
that is ~0 for every sample is flagged ("FP32 reference is ~0"), not scored. An output with one value per sample
(a probability [N, 1]) gets no cosine either (a cosine of one number is only its sign: 1.0 for 0.3 vs 0.9, 0.0 for
any value vs 0); its max abs error and relative error (max abs error / max |FP32|) are reported. Nor does an output
whose reference is dominated by near-zero values that the row cannot represent (a probability map on noise, int8:
evaluation/near_zero.py states the rule); its max abs error and rel_err are reported, so a real loss still shows.
`compare` (one output, top-1 always) is the one-output form kept for its callers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgebench.evaluation.near_zero import NEAR_ZERO_REF, near_zero_dominated
from edgebench.models.inputs import (
    batches_of,
    concat_outputs,
    head,
    load_data,
    make_input,
    output_batch_axes,
    sample_count,
    synthetic,
)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.models.inputs import InputDesc

ACCURACY_SEED_OFFSET = 1_000_003  # accuracy inputs never equal the timing inputs


@dataclass(frozen=True)
class Agreement:
    top1_agreement_pct: float
    max_abs_err: float
    cosine_min: float
    samples: int


def accuracy_inputs(sample_shape: tuple[int, ...], samples: int, seed: int, dtype: str = "float32") -> np.ndarray:
    return make_input((samples, *sample_shape), dtype, seed + ACCURACY_SEED_OFFSET)


def reference_outputs(fp32_onnx: str, input_name: str, inputs: np.ndarray) -> np.ndarray:
    """First output of the FP32 model on `inputs` (one input), ONNX Runtime CPU, run in chunks of the graph's
    fixed batch when it has one (see reference_outputs_all)."""
    outputs = reference_outputs_all(fp32_onnx, {input_name: inputs})
    return next(iter(outputs.values()))


def reference_outputs_all(fp32_onnx: str, inputs: Mapping[str, np.ndarray], max_batch: int | None = None,
                          plan: tuple[InputDesc, ...] | None = None,
                          fixed_batch: int | None = None) -> dict[str, np.ndarray]:
    """Every output of the FP32 model on `inputs` (N samples on each input's batch axis: `plan`, else axis 0),
    ONNX Runtime CPU.

    A graph with a dynamic batch axis runs the set in chunks of `max_batch` (None: all at once); a graph whose
    batch is fixed (`fixed_batch`, else a fixed axis 0 without a plan) runs it in chunks of that batch. A last
    short chunk is padded with copies of its final sample and the padding trimmed from the outputs."""
    import numpy as np
    import onnxruntime as ort


    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(fp32_onnx, sess_options=so, providers=["CPUExecutionProvider"])
    total = sample_count(inputs, plan)
    if plan is None:
        fixed = {i.shape[0] for i in sess.get_inputs() if i.shape and isinstance(i.shape[0], int) and i.shape[0] > 0}
        fixed_batch = min(fixed) if fixed else None
    batch = fixed_batch or min(total, max_batch or total)
    names = [o.name for o in sess.get_outputs()]
    parts: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for chunk in batches_of(dict(inputs), batch, inputs=plan):
        for name, value in zip(names, sess.run(names, chunk), strict=True):
            parts[name].append(np.asarray(value))
    return concat_outputs(parts, batch, total, output_batch_axes(fp32_onnx, plan) if plan else None)


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


@dataclass(frozen=True)
class OutputAgreement:
    """One named output vs the FP32 reference. top1 is None where the output is no class-score vector;
    `note` says why an output was not compared (then the metrics are None)."""

    name: str
    cosine_min: float | None
    max_abs_err: float | None
    top1_agreement_pct: float | None
    samples: int
    note: str = ""
    no_cosine: str = ""  # compared, but why it has no cosine (one value per sample); rel_err then says how close
    rel_err: float | None = None  # max abs error / max |FP32 value| of the output

    def text(self) -> str:
        if self.note:
            return f"{self.name}: {self.note}"
        if self.no_cosine:
            rel = f" rel_err={self.rel_err:.3g}" if self.rel_err is not None else ""
            return f"{self.name}: max_abs={self.max_abs_err:.3g}{rel} (no cosine: {self.no_cosine})"
        top1 = f" top1={self.top1_agreement_pct:.4g}%" if self.top1_agreement_pct is not None else ""
        return f"{self.name}: cos_min={self.cosine_min:.6f} max_abs={self.max_abs_err:.3g}{top1}"


def is_class_scores(reference: np.ndarray, num_classes: int | None = None) -> bool:
    """A per-sample class-score vector: [N, C] floats with C >= 2 (logits or probabilities); with
    `num_classes` (the model spec's), C must equal it, so e.g. a detector's objectness [N, anchors] is not."""
    if reference.ndim != 2 or reference.dtype.kind != "f" or reference.shape[1] < 2:
        return False
    return num_classes is None or reference.shape[1] == num_classes


def accuracy_feeds(inputs: tuple[InputDesc, ...], samples: int, seed: int,
                   data: str | None = None) -> dict[str, np.ndarray]:
    """The fixed inputs of every row's accuracy check: the model's real data (up to `samples` of the .npz
    file/folder) or seeded synthetic data valid per input (never equal to the timing inputs)."""

    if data:
        return head(load_data(data, inputs), samples, inputs)
    return synthetic(inputs, samples, seed + ACCURACY_SEED_OFFSET)


def compare_outputs(outputs: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray],
                    num_classes: int | None = None) -> list[OutputAgreement]:
    """Every output of the reference that the row also returned, by name, in the reference's order.
    Shape differences are noted per output, not raised; an output the row lacks is noted as missing.
    Top-1 agreement only for class-score outputs: is_class_scores with `num_classes` (None: any C >= 2), and not
    an [N, A] output when another output is [N, A, ...] (a per-anchor or per-token value, not a class vector)."""
    import numpy as np

    # a [N, A] output beside a [N, A, ...] one is per anchor/token (e.g. a detector's objectness), not per sample
    per_element = {np.asarray(r).shape[1] for r in reference.values() if np.asarray(r).ndim >= 3}
    out: list[OutputAgreement] = []
    for name, ref in reference.items():
        ref = np.asarray(ref)
        got = outputs.get(name)
        if got is None:
            out.append(OutputAgreement(name, None, None, None, 0, "not returned by the backend"))
            continue
        got = np.asarray(got)
        if got.shape != ref.shape:
            out.append(OutputAgreement(name, None, None, None, 0,
                                       f"shape {list(got.shape)} differs from the FP32 reference {list(ref.shape)}"))
            continue
        if ref.size == 0:
            out.append(OutputAgreement(name, None, None, None, 0, "empty output"))
            continue
        flat = np.abs(ref.reshape(len(ref), -1)) if ref.ndim else np.abs(ref.reshape(1, 1))
        live = flat.max(axis=1) >= NEAR_ZERO_REF
        if not live.any():
            err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
            out.append(OutputAgreement(name, None, None, None, 0,
                                       f"FP32 reference is ~0 (max |x| = {float(flat.max()):.3g} < {NEAR_ZERO_REF:g}): "
                                       f"no cosine; max_abs={err:.3g}"))
            continue
        if flat.shape[1] == 1:  # one value per sample (or a scalar output): its cosine is only its sign
            err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
            out.append(OutputAgreement(name, None, err, None, int(flat.shape[0]),
                                       no_cosine=ONE_VALUE, rel_err=err / float(flat.max())))
            continue
        if (why := near_zero_dominated(got[live], ref[live])) is not None:
            err = float(np.max(np.abs(got[live].astype(np.float64) - ref[live].astype(np.float64))))
            out.append(OutputAgreement(name, None, err, None, int(live.sum()), no_cosine=why,
                                       rel_err=err / float(flat[live].max())))
            continue
        a = compare(got[live], ref[live]) if ref.ndim else compare(got.reshape(1, 1), ref.reshape(1, 1))
        scores = is_class_scores(ref, num_classes) and ref.shape[1] not in per_element
        top1 = a.top1_agreement_pct if scores else None
        out.append(OutputAgreement(name, a.cosine_min, a.max_abs_err, top1, a.samples))
    return out


ONE_VALUE = "one value per sample, whose cosine is only its sign"


def row_fields(agreements: list[OutputAgreement]) -> dict[str, Any]:
    """Row columns: the worst cosine / max abs error over the compared outputs, top-1 over the class-score
    outputs (the lowest), which outputs were compared, and every output's figures. accuracy_cosine_min is over the
    outputs that have a cosine (empty when none has: cosine_empty_reason says why)."""
    done = [a for a in agreements if not a.note]
    cosines = [a.cosine_min for a in done if a.cosine_min is not None]
    top1 = [a.top1_agreement_pct for a in done if a.top1_agreement_pct is not None]
    return {
        "accuracy_cosine_min": min(cosines) if cosines else None,
        "accuracy_max_abs_err": max(a.max_abs_err for a in done) if done else None,  # type: ignore[type-var]
        "accuracy_top1_agreement_pct": min(top1) if top1 else None,
        "accuracy_outputs": ";".join(a.name for a in done) or None,
        "accuracy_per_output": "; ".join(a.text() for a in agreements) or None,
    }


def cosine_empty_reason(row: Mapping[str, Any]) -> str | None:
    """The empty_reasons entry of a row whose outputs were compared with FP32 (max abs error filled) but none has a
    cosine: one value per sample, or a reference that is ~0 (accuracy_per_output says which, per output)."""
    if row.get("accuracy_cosine_min") is not None or row.get("accuracy_max_abs_err") is None:
        return None
    return (f"accuracy_cosine_min: no output compared with FP32 has a cosine ({row.get('accuracy_outputs') or '?'}: "
            f"{ONE_VALUE}, a reference ~0, or one dominated by near-zero values the row cannot represent; accuracy_max_abs_err and accuracy_per_output's rel_err say how close)")
