"""The spec's built torch model, saved once per cache as its state_dict, so each worker loads it instead of building.

Building a random-init model is seconds of CPU per process: torchvision's init of every parameter, then the
BatchNorm re-estimation on seeded synthetic batches (models/export.py). 32 GPU workers did it at once on an H200's
16 cores in 17-25 s, most of a repeat's set-up once the framework server took the import away
(docs/results/h200-setup-issue37.md). The tensors it makes depend only on the spec, the seed, the weights file and
the torch/torchvision versions, so they are built once, in a process of its own (models/in_child.py: the harness
never holds torch), saved to the artifact cache, and every worker then constructs the module on the meta device (no
init: no time) and assigns the saved tensors to it, memory-mapped (the instances of a row share the file's pages).
The same tensors as a build made with the thread count of the saving process (a build's BatchNorm statistics differ
in their last bits with the threads it ran on; before, each worker's build used its own): every instance of a row
now has exactly the same tensors. tests/models/test_torch_state.py compares tensors and outputs. A module with state the file does
not hold (a buffer registered as not persistent) is left on the meta device by that: `model_from_state` says None
and the caller builds it as before.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.models.artifacts import Artifact, Artifacts, sha256_file
from edgebench.models.export import build_torch_model, construct_torch_model, installed_version
from edgebench.models.in_child import run_in_child
from edgebench.models.weights import resolve_weights

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from edgebench.models.spec import ModelSpec

STATE_RECIPE = 1  # bump when build_torch_model changes the tensors it makes
_VERIFIED: dict[str, Artifact] = {}  # cache key -> its artifact, checked (sha256) once per process


def state_inputs(spec: ModelSpec, seed: int) -> dict[str, Any]:
    """What the built tensors depend on (the cache key): the spec's model fields, the seed, the weights file and
    the framework versions (read without importing them)."""
    weights = resolve_weights(spec).path
    return {
        "recipe": STATE_RECIPE,
        "spec": {k: v for k, v in spec.to_dict().items() if k not in ("spec_file", "description", "preprocess")},
        "torch": installed_version("torch"),
        "torchvision": installed_version("torchvision") if spec.source == "torchvision" else None,
        "seed": seed,
        "weights_sha256": sha256_file(weights) if weights is not None else None,
    }


def built_state(spec: ModelSpec, cache: Artifacts, seed: int = 0) -> Artifact:
    """The spec's built model as a state_dict file in the cache: built (in a process of its own) on first use."""
    inputs = state_inputs(spec, seed)
    final = str(cache.path_for("torch-state", inputs, f"{spec.name}.pt"))
    if final in _VERIFIED and Path(final).exists():
        return _VERIFIED[final]

    def build(tmp: Path) -> dict[str, Any]:
        return run_in_child(spec.name, "torch build", _save_built, spec, seed, tmp)

    artifact = cache.get_or_build(kind="torch-state", inputs=inputs, filename=f"{spec.name}.pt", build=build)
    _VERIFIED[final] = dataclasses.replace(artifact, reused=True)  # what later rows of this process get
    return artifact


def _save_built(spec: ModelSpec, seed: int, tmp: Path) -> dict[str, Any]:
    import torch

    model = build_torch_model(spec, seed)
    state = model.state_dict()
    torch.save(state, tmp)
    return {"model": spec.name, "seed": seed, "tensors": len(state),
            "elements": int(sum(t.numel() for t in state.values()))}


def model_from_state(spec: ModelSpec, path: Path | str) -> torch.nn.Module | None:
    """The spec's module with the saved tensors (eval mode, on the CPU, memory-mapped), constructed without init;
    None when the file cannot be read or does not hold all of its state, or not in the module's shapes (the caller
    builds it)."""
    import torch

    try:
        state = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
        with torch.device("meta"):
            model = construct_torch_model(spec)
        missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    except Exception:  # noqa: BLE001 - an unreadable file, a tensor of another shape (torch raises many kinds)
        return None
    if missing or unexpected:
        return None
    if any(t.is_meta for t in [*model.parameters(), *model.buffers()]):
        return None  # a buffer not in the state_dict (registered not persistent): only a build makes it
    return model.eval()
