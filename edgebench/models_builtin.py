"""Small models that ship with edgebench, for fast tests and harness-overhead runs.

torch is imported lazily, so importing this module costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgebench.errors import ModelError

if TYPE_CHECKING:  # pragma: no cover
    import torch

BUILTIN_ARCHS = ("tiny_cnn", "small_cnn")


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


def _small_cnn(num_classes: int) -> torch.nn.Module:
    """(conv-bn-relu-maxpool) x2, 4x4 average pool, linear: keeps coarse spatial layout, so it learns small
    images (digits, CIFAR-sized) in seconds; ~10k parameters for 3x32x32 input and 10 classes."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(1),
        nn.Linear(32 * 16, num_classes),
    )


def build_builtin(arch: str, num_classes: int) -> torch.nn.Module:
    """Build a builtin model by name. Weights come from torch's RNG: call torch.manual_seed first."""
    if arch == "tiny_cnn":
        return _tiny_cnn(num_classes)
    if arch == "small_cnn":
        return _small_cnn(num_classes)
    raise ModelError(f"unknown builtin model {arch!r} (known: {', '.join(BUILTIN_ARCHS)})")
