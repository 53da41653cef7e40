"""The backend contract: the one seam between edgebench and a framework.

Borrowed in spirit from Polygraphy (lazy loaders, runner lifecycle) and the MLPerf reference
harness (tiny surface, one file per framework, a null backend). Timing belongs to the runner,
never to a backend: `Session.infer()` only has to return when its batch is done.

Everything a worker process needs travels as a `Prepared` (plain data, picklable), so the
`process` mode (multiprocessing spawn) and the `streams` mode (threads) share one code path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from edgebench.models.inputs import synthetic
from edgebench.models.model_artifact import ModelArtifact

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts
    from edgebench.models.inputs import InputDesc


@dataclass(frozen=True)
class Prepared:
    """What `Backend.open` needs, as plain picklable data (sent to spawned workers)."""

    backend: str
    model_path: str
    inputs: tuple[InputDesc, ...]  # every input, per-sample shapes (edgebench.models.inputs)
    batch: int
    precision: str
    options: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)  # recorded in the row (provider, hashes, ...)

    @property
    def first_input(self) -> InputDesc:
        """The first input: the one a one-input path means (a bare .npy of accuracy inputs)."""
        return self.inputs[0]

    def feeds(self, batch: int, seed: int) -> dict[str, np.ndarray]:
        """Seeded synthetic data for every input at `batch` (edgebench.models.inputs.synthetic)."""

        return synthetic(self.inputs, batch, seed)

    @classmethod
    def for_artifact(cls, backend: str, cfg: RunConfig, model: ModelArtifact, *, precision: str | None = None,
                     options: dict[str, Any] | None = None, info: dict[str, Any] | None = None) -> Prepared:
        """The usual Prepared: the artifact's file and inputs at the config's batch size."""
        return cls(backend=backend, model_path=model.onnx_path, inputs=tuple(model.inputs), batch=cfg.batch,
                   precision=precision or model.precision, options=dict(options or {}), info=dict(info or {}))


@dataclass(frozen=True)
class Placement:
    """Where one instance runs: device label ('cpu', 'cuda:0', 'dla0'), its index, its CPU threads."""

    device: str
    instance: int
    threads: int = 1


class Session(Protocol):
    def feed(self, inputs: dict[str, np.ndarray]) -> None:
        """Stage inputs on the device once; later infer() calls reuse them."""

    def infer(self) -> None:
        """Run one batch; return when it is done."""

    def outputs(self) -> dict[str, np.ndarray]:
        """Copy the last outputs back to host memory (accuracy checks only)."""

    def close(self) -> None: ...


class Backend(Protocol):
    name: str

    def supports(self, cfg: RunConfig, env: Env) -> str | None:
        """None when `cfg` can run here, else the reason it cannot (shown in the skipped row)."""

    def prepare(self, cfg: RunConfig, model: ModelArtifact, cache: Artifacts) -> Prepared:
        """Build whatever is needed once (engines, optimized graphs); cached by the caller's cache."""

    def open(self, prepared: Prepared, placement: Placement) -> Session:
        """One session per instance; called inside the instance's process or thread."""


@dataclass(frozen=True)
class Env:
    """What this machine offers, detected once; backends decide `supports()` from it."""

    cpu_count: int
    machine: str
    ort_version: str | None = None
    ort_providers: tuple[str, ...] = ()
    ort_missing_reason: str | None = None
    cuda_devices: int = 0

    @classmethod
    def detect(cls) -> Env:
        import platform

        cpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        ort_version = None
        providers: tuple[str, ...] = ()
        missing = None
        try:
            import onnxruntime as ort

            ort_version = ort.__version__
            providers = tuple(ort.get_available_providers())
        except ImportError as exc:
            missing = f"onnxruntime is not installed ({exc.msg}); pip install 'edgebench[ort]'"
        return cls(
            cpu_count=cpu,
            machine=platform.machine(),
            ort_version=ort_version,
            ort_providers=providers,
            ort_missing_reason=missing,
            cuda_devices=_count_cuda_devices(),
        )


def _count_cuda_devices() -> int:
    """Count NVIDIA GPUs without importing a framework (driver's /proc entries)."""
    root = "/proc/driver/nvidia/gpus"
    try:
        return len(os.listdir(root))
    except OSError:
        return 0
