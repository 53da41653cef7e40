"""Labelled images for real accuracy: the data set, its evaluation / calibration subsets, preprocessing, top-k.

A data set is a folder of images, either
- ImageNet style: one subfolder per class (images anywhere below it). Class index = the folder name when every
  folder name is a non-negative integer ("0".."9"), else the position in sorted name order (ImageNet's wnid
  folders n01440364... sort into the standard 0..999 order torchvision's weights use); or
- flat, with a labels file: one `<image path relative to the folder> <label>` per line (space, tab or comma;
  '#' comments), label an integer class index.

Subsets: the image list (sorted) is shuffled once with the calibration seed; evaluation takes images from the
front of that order and INT8 calibration from the back, so the two never share an image and the evaluated
images do not change with the number of calibration images. Both lists are recorded.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import ConfigError, ModelError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".ppm")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
INTERPOLATIONS = ("nearest", "bilinear", "bicubic")
TOP_K = (1, 5)


# ----------------------------------------------------------------------------------------------- preprocessing

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


# ----------------------------------------------------------------------------------------------- the data set

@dataclass(frozen=True)
class LabelledSet:
    root: Path
    files: tuple[str, ...]  # paths relative to root, sorted
    labels: tuple[int, ...]
    classes: tuple[str, ...]  # class folder names (empty for a labels file)
    labels_file: str | None = None

    def __len__(self) -> int:
        return len(self.files)

    def split(self, evaluate: int, calibrate: int, seed: int) -> tuple[list[int], list[int]]:
        """(evaluation indexes, calibration indexes), disjoint: evaluation from the front of one seeded shuffle,
        calibration from its back. Evaluation gets at most len - calibrate images."""
        import numpy as np

        if calibrate > len(self):
            raise ModelError(f"{self.root}: {len(self)} labelled images, {calibrate} asked for calibration "
                             f"(calibration.samples)")
        order = np.random.default_rng(seed).permutation(len(self)).tolist()
        calib = order[len(order) - calibrate:] if calibrate else []
        room = len(order) - calibrate
        if room < 1 and evaluate > 0:
            raise ModelError(f"{self.root}: {len(self)} labelled images leave none to evaluate after "
                             f"{calibrate} for calibration (lower calibration.samples)")
        return sorted(order[:min(evaluate, room)]), calib

    def load(self, indexes: list[int], pre: Preprocess) -> np.ndarray:
        import numpy as np

        if not indexes:
            return np.zeros((0, pre.channels, pre.height, pre.width), dtype=np.float32)
        return np.stack([pre.load(self.root / self.files[i]) for i in indexes])

    def digest(self, indexes: list[int]) -> str:
        """sha256 over the chosen (file, label) pairs: names the subset in a row without listing it."""
        h = hashlib.sha256()
        for i in indexes:
            h.update(f"{self.files[i]}\t{self.labels[i]}\n".encode())
        return h.hexdigest()


def load_labelled(root: str | Path, labels_file: str | Path | None = None) -> LabelledSet:
    folder = Path(root)
    if not folder.is_dir():
        raise ConfigError(str(folder), "", "labelled data set: no such folder")
    if labels_file:
        return _from_labels_file(folder, Path(labels_file))
    class_dirs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not class_dirs:
        raise ConfigError(str(folder), "", "labelled data set: no class subfolders (give a labels file for a "
                                           "flat folder of images)")
    names = [p.name for p in class_dirs]
    numeric = all(n.isdigit() for n in names)
    index = {n: (int(n) if numeric else i) for i, n in enumerate(names)}
    files: list[tuple[str, int]] = []
    for d in class_dirs:
        for p in sorted(d.rglob("*")):
            if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES:
                files.append((p.relative_to(folder).as_posix(), index[d.name]))
    if not files:
        raise ConfigError(str(folder), "", f"labelled data set: no images ({', '.join(IMAGE_SUFFIXES)}) in "
                                           f"{len(class_dirs)} class folders")
    files.sort()
    return LabelledSet(folder, tuple(f for f, _ in files), tuple(lb for _, lb in files), tuple(names))


def _from_labels_file(folder: Path, path: Path) -> LabelledSet:
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(str(path), "", f"labels file: cannot read ({exc.strerror})") from None
    pairs: list[tuple[str, int]] = []
    for n, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.replace(",", " ").replace("\t", " ").split()
        if len(parts) != 2 or not parts[1].lstrip("-").isdigit() or int(parts[1]) < 0:
            raise ConfigError(str(path), f"line {n}", f"expected '<image> <class index>', got {line.strip()!r}")
        if not (folder / parts[0]).is_file():
            raise ConfigError(str(path), f"line {n}", f"image {parts[0]!r} is not in {folder}")
        pairs.append((parts[0], int(parts[1])))
    if not pairs:
        raise ConfigError(str(path), "", "labels file: no '<image> <class index>' lines")
    pairs.sort()
    return LabelledSet(folder, tuple(f for f, _ in pairs), tuple(lb for _, lb in pairs), (), str(path))


# ----------------------------------------------------------------------------------------------- scoring

def topk_pct(logits: np.ndarray, labels: np.ndarray, k: int) -> float | None:
    """% of samples whose label is among the k largest outputs; None when the model has fewer than k classes.
    A sample with a NaN output counts as wrong."""
    import numpy as np

    out = np.asarray(logits, dtype=np.float64).reshape(len(logits), -1)
    if out.shape[1] < k or len(out) == 0:
        return None
    top = np.argsort(-out, axis=1, kind="stable")[:, :k]
    hit = np.any(top == np.asarray(labels).reshape(-1, 1), axis=1) & ~np.isnan(out).any(axis=1)
    return float(np.mean(hit) * 100.0)


def score(logits: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """Row fields accuracy_top1_pct / accuracy_top5_pct for outputs [N, classes] against labels [N]."""
    import numpy as np

    labels = np.asarray(labels)
    out = np.asarray(logits).reshape(len(logits), -1)
    if len(out) != len(labels):
        raise ValueError(f"{len(out)} outputs for {len(labels)} labels")
    if len(labels) and int(labels.max()) >= out.shape[1]:
        raise ValueError(f"label {int(labels.max())} but the model has {out.shape[1]} outputs per sample")
    return {f"accuracy_top{k}_pct": topk_pct(out, labels, k) for k in TOP_K}


# ----------------------------------------------------------------------------------------------- per sweep

@dataclass(frozen=True)
class Evaluation:
    """The evaluated images of one model: inputs [N, C, H, W], labels [N], and what they are (row + row dir)."""

    inputs: np.ndarray
    labels: np.ndarray
    record: dict[str, Any]  # written to the row folder as accuracy_subset.json

    def row_fields(self) -> dict[str, Any]:
        return {"accuracy_dataset": self.record["dataset"],
                "accuracy_subset_sha256": self.record["evaluated_sha256"][:16]}

    def score(self, outputs: dict[str, np.ndarray], output_name: str) -> dict[str, Any]:
        """top-1/top-5 of the named output (the first one when that name is absent)."""
        logits = outputs[output_name] if output_name in outputs else next(iter(outputs.values()))
        return score(logits, self.labels)


def evaluation_set(spec: Any, accuracy: Any, calibration: Any, samples: int) -> Evaluation:
    """Up to `samples` labelled images of accuracy.dataset, preprocessed for `spec`'s weights, never one of the
    images calibration.source 'labelled' calibrates on (those are reserved even for non-int8 rows, so every
    precision is evaluated on the same images)."""
    import numpy as np

    from edgebench.weights import preprocess_for

    pre = preprocess_for(spec)
    ds = load_labelled(accuracy["dataset"], accuracy.get("labels"))
    reserve = int(calibration.get("samples", 0)) if str(calibration.get("source")) == "labelled" else 0
    seed = int(calibration.get("seed", 0))
    evaluated, calib = ds.split(samples, reserve, seed)
    record = {"dataset": str(ds.root), "labels_file": ds.labels_file, "images_total": len(ds),
              "classes": len(ds.classes) or len(set(ds.labels)), "seed": seed, "requested": samples,
              "evaluated": len(evaluated), "evaluated_sha256": ds.digest(evaluated),
              "calibration_reserved": len(calib), "calibration_sha256": ds.digest(calib),
              "preprocess": pre.to_dict(), "files": [ds.files[i] for i in evaluated],
              "labels": [ds.labels[i] for i in evaluated]}
    labels = np.asarray([ds.labels[i] for i in evaluated], dtype=np.int64)
    return Evaluation(ds.load(evaluated, pre), labels, record)
