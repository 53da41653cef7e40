"""Which weights a model runs with, their identity (name + sha256) and the preprocessing they imply.

A model spec's `weights` (or `--weights`, which overrides it for every model of a sweep) is one of:
- `torchvision:IMAGENET1K_V2` (or `torchvision:ResNet50_Weights.IMAGENET1K_V2`, `torchvision:DEFAULT`): a
  torchvision weight enum of the spec's `arch`. The file is fetched by torchvision's own loader into torch's
  hub cache (`$TORCH_HOME/hub/checkpoints/<file name of the enum's URL>`) when the machine is online, and
  used from that cache offline. Offline without the file: one line says what to download and where.
  EDGEBENCH_OFFLINE=1 never tries the download.
- a local state_dict / checkpoint file (a dict, or {"state_dict": dict});
- absent: seeded random init (a missing local file stays random-init and the export sidecar says so).

The row's `weights` column is `<name> sha256:<first 16 hex>`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import ConfigError, ModelError, exc_text
from edgebench.models.artifacts import file_sha256
from edgebench.models.preprocess import Preprocess

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.models.preprocess import Preprocess
    from edgebench.models.spec import ModelSpec

TORCHVISION_PREFIX = "torchvision:"
OFFLINE_ENV = "EDGEBENCH_OFFLINE"
DOWNLOAD_TIMEOUT_S = 60.0
_HASH_PREFIX = re.compile(r"-([a-f0-9]+)\.")  # torch.hub's rule: resnet50-11ad3fa6.pth -> 11ad3fa6


@dataclass(frozen=True)
class ResolvedWeights:
    kind: str  # "torchvision", "file", "random-init", "missing-file", "from-onnx"
    name: str  # "torchvision:ResNet50_Weights.IMAGENET1K_V2", a file name, "random-init"
    path: Path | None = None
    sha256: str | None = None
    note: str = ""  # e.g. the file's hash differs from the one torchvision's file name carries
    enum: Any = None  # the torchvision WeightsEnum member (kind "torchvision")

    @property
    def label(self) -> str:
        """The row's `weights` cell: name and hash."""
        text = f"{self.name} sha256:{self.sha256[:16]}" if self.sha256 else self.name
        return f"{text} ({self.note})" if self.note else text


def is_torchvision(weights: str | None) -> bool:
    return bool(weights) and str(weights).startswith(TORCHVISION_PREFIX)


def torchvision_enum(spec: ModelSpec) -> Any:
    """The WeightsEnum member that `spec.weights` names (no download)."""
    where = spec.spec_file or spec.name
    text = str(spec.weights)[len(TORCHVISION_PREFIX):].strip()
    if spec.source != "torchvision":
        raise ConfigError(where, "weights", f"{spec.weights!r}: torchvision weights need source: torchvision "
                                            f"(this model is source: {spec.source})")
    try:
        import torchvision.models
    except ImportError:
        raise ModelError(f"{where}: weights {spec.weights!r} need torchvision (pip install torchvision)") from None
    try:
        enum_cls = torchvision.models.get_model_weights(spec.arch)
    except (ValueError, KeyError) as exc:
        raise ConfigError(where, "weights", f"torchvision has no weights for arch {spec.arch!r} ({exc})") from None
    cls_name, _, member = text.rpartition(".")
    if cls_name and cls_name != enum_cls.__name__:
        raise ConfigError(where, "weights", f"{spec.weights!r}: {cls_name} is not the weights class of "
                                            f"{spec.arch} ({enum_cls.__name__})")
    try:
        return enum_cls[member]
    except KeyError:
        known = ", ".join(enum_cls.__members__)
        raise ConfigError(where, "weights", f"{spec.weights!r}: {enum_cls.__name__} has no {member!r} "
                                            f"(known: {known})") from None


def checkpoint_path(enum: Any) -> Path:
    """Where torchvision's loader (torch.hub.load_state_dict_from_url) keeps this enum's file."""
    from urllib.parse import urlparse

    import torch.hub

    return Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(urlparse(enum.url).path)


def fetch_torchvision(enum: Any, full_name: str) -> Path:
    """The cached checkpoint of `enum`, downloaded by torchvision's loader first when it is absent."""
    import socket

    path = checkpoint_path(enum)
    if path.is_file():
        return path
    how = (f"download {enum.url} and put it at {path} (torch's hub cache; TORCH_HOME moves it), "
           f"or on a machine with internet run: python -c \"import torchvision; torchvision.models."
           f"get_weight('{full_name}').get_state_dict()\" and copy the file")
    if os.environ.get(OFFLINE_ENV, "") not in ("", "0"):
        raise ModelError(f"weights torchvision:{full_name} are not cached and {OFFLINE_ENV} is set: {how}")
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(DOWNLOAD_TIMEOUT_S)
    try:
        enum.get_state_dict(progress=True, check_hash=True)  # torchvision's loader -> torch hub cache
    except Exception as exc:  # URLError, OSError, hash mismatch RuntimeError, ...
        raise ModelError(f"weights torchvision:{full_name} are not cached and the download failed "
                         f"({exc_text(exc, first_line=True)}): {how}") from None
    finally:
        socket.setdefaulttimeout(old)
    if not path.is_file():
        raise ModelError(f"weights torchvision:{full_name}: torchvision's loader did not leave {path}: {how}")
    return path


def resolve_weights(spec: ModelSpec) -> ResolvedWeights:
    """What `spec.weights` means here, fetching torchvision weights into torch's cache when needed."""
    if spec.source == "onnx":
        return ResolvedWeights("from-onnx", "from-onnx")
    if not spec.weights:
        return ResolvedWeights("random-init", "random-init")
    if is_torchvision(spec.weights):
        enum = torchvision_enum(spec)
        full_name = f"{type(enum).__name__}.{enum.name}"
        path = fetch_torchvision(enum, full_name)
        sha = file_sha256(path)
        m = _HASH_PREFIX.search(path.name)
        note = ""
        if m and not sha.startswith(m.group(1)):
            note = f"hash differs from torchvision's {m.group(1)}: not the published file"
        return ResolvedWeights("torchvision", TORCHVISION_PREFIX + full_name, path, sha, note, enum)
    path = Path(spec.weights)
    if path.is_file():
        return ResolvedWeights("file", path.name, path, file_sha256(path))
    return ResolvedWeights("missing-file", "random-init", note=f"weights file {spec.weights} not found")


def preprocess_for(spec: ModelSpec) -> Preprocess:
    """Image preprocessing for labelled data: the torchvision weights' own transforms (resize, crop, mean, std,
    interpolation), else the spec's `preprocess:` mapping, else a plain resize to the input size with ImageNet
    mean/std."""

    shape = spec.first_input.shape
    where = spec.spec_file or spec.name
    if is_torchvision(spec.weights) and spec.source == "torchvision":
        enum = torchvision_enum(spec)
        t = enum.transforms()
        return Preprocess.checked(
            where, shape, resize=int(t.resize_size[0]), crop=int(t.crop_size[0]), mean=tuple(t.mean),
            std=tuple(t.std), interpolation=str(getattr(t.interpolation, "value", t.interpolation)),
            source=f"transforms of torchvision:{type(enum).__name__}.{enum.name}")
    given = dict(getattr(spec, "preprocess", None) or {})
    if given:
        known = {"resize", "crop", "mean", "std", "interpolation"}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ConfigError(where, f"preprocess.{unknown[0]}", f"unknown key (known: {', '.join(sorted(known))})")
        return Preprocess.checked(where, shape, source=f"{where} preprocess", **given)
    return Preprocess.checked(where, shape, source="default: resize to the input size, ImageNet mean/std")
