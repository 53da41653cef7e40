"""Why a torch-on-CUDA test cannot run here: the one skip guard of the GPU end-to-end tests."""

from __future__ import annotations

from edgebench.backends.torch_backend import torch_cuda_build


def torch_cuda_missing() -> str | None:
    """None when torch can run on a CUDA GPU here, else why not (no torch; a CPU build of torch, or no GPU)."""
    try:
        import torch
    except ImportError:
        return "needs torch"
    if torch_cuda_build() == "" or not torch.cuda.is_available():
        return "needs a CUDA build of torch and a CUDA GPU"
    return None
