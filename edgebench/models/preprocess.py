"""Image preprocessing for labelled data: resize, centre crop, mean/std, as torchvision's transforms do it.

Below both labelled.py (which loads images with it) and weights.py (which picks it for a model's weights),
so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import ConfigError, ModelError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
INTERPOLATIONS = ("nearest", "bilinear", "bicubic")


@dataclass(frozen=True)
class Preprocess:
    """torchvision's ImageClassification semantics on PIL images: resize the shorter side to `resize` (None: resize
    straight to the input HxW), center-crop to `crop` (None: the input HxW), scale to [0, 1], normalise, CHW."""

    channels: int
    height: int
    width: int
    resize: int | None = None
    crop: int | None = None
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    interpolation: str = "bilinear"
    source: str = ""

    @classmethod
    def checked(cls, where: str, input_shape: tuple[int, ...], source: str = "", **values: Any) -> Preprocess:
        if len(input_shape) != 3 or input_shape[0] not in (1, 3):
            raise ConfigError(where, "input_shape", f"images need a model input of [1 or 3, H, W], "
                                                    f"the model takes {list(input_shape)}")
        c, h, w = (int(d) for d in input_shape)
        for key in ("resize", "crop"):
            v = values.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise ConfigError(where, f"preprocess.{key}", f"{v!r} is not a positive integer or null")
        if values.get("crop") is not None and (values["crop"], values["crop"]) != (h, w):
            raise ConfigError(where, "preprocess.crop", f"{values['crop']} does not give the input's {h}x{w}")
        for key in ("mean", "std"):
            if key in values:
                v = values[key]
                if not isinstance(v, (list, tuple)) or len(v) not in (1, c) or not all(
                        isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
                    raise ConfigError(where, f"preprocess.{key}", f"{v!r} is not a list of 1 or {c} numbers")
                values[key] = tuple(float(x) for x in v)
        if any(s == 0 for s in values.get("std", IMAGENET_STD)):
            raise ConfigError(where, "preprocess.std", "must not contain 0")
        interp = str(values.get("interpolation", "bilinear")).lower()
        if interp not in INTERPOLATIONS:
            raise ConfigError(where, "preprocess.interpolation", f"{interp!r} is not one of {', '.join(INTERPOLATIONS)}")
        values["interpolation"] = interp
        return cls(channels=c, height=h, width=w, source=source, **values)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["mean"], d["std"] = list(self.mean), list(self.std)
        return d

    def load(self, path: Path) -> np.ndarray:
        """One image as float32 [C, H, W]."""
        import numpy as np

        try:
            from PIL import Image
        except ImportError:
            raise ModelError(f"{path}: reading images needs Pillow (pip install pillow)") from None
        resample = {"nearest": Image.Resampling.NEAREST, "bilinear": Image.Resampling.BILINEAR,
                    "bicubic": Image.Resampling.BICUBIC}[self.interpolation]
        try:
            with Image.open(path) as src:
                img = src.convert("RGB" if self.channels == 3 else "L")
                if self.resize is None:
                    img = img.resize((self.width, self.height), resample)
                else:
                    w, h = img.size  # torchvision Resize(int): the shorter side becomes `resize`
                    short, long = (w, h) if w <= h else (h, w)
                    new_long = int(self.resize * long / short)
                    size = (self.resize, new_long) if w <= h else (new_long, self.resize)
                    img = _center_crop(img.resize(size, resample), self.height, self.width)
                arr = np.asarray(img, dtype=np.float32) / 255.0
        except OSError as exc:
            raise ModelError(f"{path}: not a readable image ({exc})") from None
        arr = arr[:, :, None] if arr.ndim == 2 else arr
        mean = np.asarray(self.mean, dtype=np.float32)
        std = np.asarray(self.std, dtype=np.float32)
        return np.ascontiguousarray(((arr - mean) / std).transpose(2, 0, 1), dtype=np.float32)


def _center_crop(img: Any, height: int, width: int) -> Any:
    """torchvision.transforms.functional.center_crop's arithmetic (pads with 0 when the image is smaller)."""
    w, h = img.size
    if w < width or h < height:
        from PIL import Image

        padded = Image.new(img.mode, (max(w, width), max(h, height)))
        padded.paste(img, ((max(w, width) - w) // 2, (max(h, height) - h) // 2))
        img, (w, h) = padded, padded.size
    top = int(round((h - height) / 2.0))
    left = int(round((w - width) / 2.0))
    return img.crop((left, top, left + width, top + height))
