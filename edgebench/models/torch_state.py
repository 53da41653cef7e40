"""The spec's built torch model, saved once per cache as its state_dict, so each worker loads it instead of building.

Building a random-init model is seconds of CPU per process: torchvision's init of every parameter, then the
BatchNorm re-estimation on seeded synthetic batches (models/export.py): 4 ResNet-50 workers on a 2-core CPU loaded in
4.9 s building, 0.17 s mapping (docs/results/torch-saved-build.md); on an H200 a repeat of 32 workers set up in
19.7-20.2 s instead of 25.1-27.9 s, the rest being 32 fresh CUDA contexts starting on one GPU
(docs/results/h200-setup-issue37.md).
The tensors it makes depend only on the spec, the seed, the weights file and
the torch/torchvision versions, so they are built once, in a process of its own (models/in_child.py: the harness
never holds torch), saved to the artifact cache, and every worker then constructs the module on the meta device (no
init: no time) and assigns the saved tensors to it, memory-mapped copy-on-write (fp32 instances on the CPU share the
file's pages; other precisions and GPU placements copy from them).
The same tensors as a build made with the thread count of the saving process (a build's BatchNorm statistics differ
in their last bits with the threads it ran on; before, each worker's build used its own): every instance of a row
now has exactly the same tensors. tests/models/test_torch_state.py compares tensors and outputs. A module with state the file does
not hold (a buffer registered as not persistent) is left on the meta device by that: `model_from_state` says None
and the caller builds it as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import ModelError
from edgebench.models.artifacts import Artifact, Artifacts
from edgebench.models.export import build_torch_model, construct_torch_model, installed_version, spec_key
from edgebench.models.in_child import run_in_child
from edgebench.models.weights import is_torchvision, resolve_weights

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from edgebench.models.spec import ModelSpec

STATE_RECIPE = 1  # bump when build_torch_model changes the tensors it makes


def not_saved_why(spec: ModelSpec) -> str | None:
    """Why the spec's build is not saved (each worker builds it), or None: torchvision's pretrained builders set
    constructor options of their own (inception_v3's transform_input), so a module constructed without them would
    take the saved tensors and compute something else."""
    if spec.source == "torchvision" and is_torchvision(spec.weights):  # read from the spec: nothing resolved here
        return "torchvision's pretrained builder sets constructor options of its own"
    return None


def state_inputs(spec: ModelSpec, seed: int) -> dict[str, Any]:
    """What the built tensors depend on (the cache key): the spec's model fields, the seed, the weights file and
    the framework versions (read without importing them; torchvision for every source: a builtin may use it)."""
    return {
        "recipe": STATE_RECIPE,
        "spec": spec_key(spec),
        "torch": installed_version("torch"),
        "torchvision": installed_version("torchvision"),
        "seed": seed,
        "weights_sha256": resolve_weights(spec).sha256,  # memoised per file (models/artifacts.file_sha256)
    }


def built_state(spec: ModelSpec, cache: Artifacts, seed: int = 0) -> Artifact:
    """The spec's built model as a state_dict file in the cache: built (in a process of its own) on first use, and
    checked there to load back into the module whole. Prepared for every row: the cache's check of the file's
    sha256 is memoised while its size, modification time and inode stay as they were."""

    def build(tmp: Path) -> dict[str, Any]:
        return run_in_child(spec.name, "torch build", _save_built, spec, seed, tmp)

    return cache.get_or_build(kind="torch-state", inputs=state_inputs(spec, seed), filename=f"{spec.name}.pt",
                              build=build)


def _save_built(spec: ModelSpec, seed: int, tmp: Path) -> dict[str, Any]:
    import torch

    model = build_torch_model(spec, seed)
    state = model.state_dict()
    torch.save(state, tmp)
    if model_from_state(spec, tmp) is None:  # a worker could not load it: say so now, not in every worker
        raise ModelError(f"{spec.name}: its saved build does not load back into the module whole (a buffer that is "
                         "not persistent, or a constructor that differs from the build's)")
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
