"""Small models that ship with edgebench, for fast tests and harness-overhead runs.

torch is imported lazily, so importing this module costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgebench.errors import ModelError

if TYPE_CHECKING:  # pragma: no cover
    import torch

BUILTIN_ARCHS = ("tiny_cnn",)


def _tiny_cnn(num_classes: int) -> torch.nn.Module:
    """conv-bn-relu x2, global average pool, linear. ~5k parameters for 3x32x32 input."""
    from torch import nn

    model = nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=3, stride=1, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(inplace=True),
        nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(1),
        nn.Linear(32, num_classes),
    )
    return model


def build_builtin(arch: str, num_classes: int) -> torch.nn.Module:
    """Build a builtin model by name. Weights come from torch's RNG: call torch.manual_seed first."""
    if arch == "tiny_cnn":
        return _tiny_cnn(num_classes)
    raise ModelError(f"unknown builtin model {arch!r} (known: {', '.join(BUILTIN_ARCHS)})")
