"""Labelled images for real accuracy: the data set, its evaluation / calibration subsets, top-k.
(How an image becomes an input array is preprocess.py.)

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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import ConfigError, ModelError
from edgebench.models.preprocess import Preprocess  # noqa: F401 - callers import it from here too
from edgebench.models.weights import preprocess_for

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".ppm")
TOP_K = (1, 5)


# ----------------------------------------------------------------------------------------------- the data set

@dataclass(frozen=True)
class LabelledSet:
    root: Path
    files: tuple[str, ...]  # paths relative to root, sorted
    labels: tuple[int, ...]
    classes: tuple[str, ...]  # class folder names (empty for a labels file)
    labels_file: str | None = None
    empty_classes: tuple[str, ...] = ()  # class folders with no image (they keep their class index)

    def __len__(self) -> int:
        return len(self.files)

    def split(self, evaluate: int, calibrate: int, seed: int) -> tuple[list[int], list[int]]:
        """(evaluation indexes, calibration indexes), disjoint: evaluation from the front of one seeded shuffle,
        calibration from its back. Evaluation gets at most len - calibrate images."""
        import numpy as np

        if calibrate > len(self):
            raise ModelError(f"{self.root}: {len(self)} labelled images, {calibrate} asked for calibration "
                             f"(int8: --calibration-samples / calibration.samples)")
        order = np.random.default_rng(seed).permutation(len(self)).tolist()
        calib = order[len(order) - calibrate:] if calibrate else []
        room = len(order) - calibrate
        if room < 1 and evaluate > 0:
            raise ModelError(f"{self.root}: {len(self)} labelled images leave none to evaluate after "
                             f"{calibrate} for int8 calibration (lower --calibration-samples / calibration.samples)")
        return sorted(order[:min(evaluate, room)]), calib

    def load(self, indexes: list[int], pre: Preprocess) -> np.ndarray:
        import numpy as np

        if not indexes:
            return np.zeros((0, pre.channels, pre.height, pre.width), dtype=np.float32)
        return np.stack([pre.load(self.root / self.files[i]) for i in indexes])

    def load_readable(self, indexes: list[int], pre: Preprocess) -> tuple[np.ndarray, list[int], list[str]]:
        """(inputs, the indexes read, 'file: why' for each image that could not be read: skipped, not fatal).
        Every image unreadable is an error naming the first."""
        import numpy as np

        arrays, kept, skipped = [], [], []
        for i in indexes:
            try:
                arrays.append(pre.load(self.root / self.files[i]))
            except ModelError as exc:
                skipped.append(f"{self.files[i]}: {str(exc).split(': ', 1)[-1]}")
                continue
            kept.append(i)
        if indexes and not kept:
            raise ModelError(f"{self.root}: none of {len(indexes)} labelled images could be read ({skipped[0]})")
        if not arrays:
            return np.zeros((0, pre.channels, pre.height, pre.width), dtype=np.float32), kept, skipped
        return np.stack(arrays), kept, skipped

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
    used = {lb for _, lb in files}
    empty = tuple(n for n in names if index[n] not in used)
    return LabelledSet(folder, tuple(f for f, _ in files), tuple(lb for _, lb in files), tuple(names),
                       empty_classes=empty)


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
                "accuracy_subset_sha256": self.record["evaluated_sha256"][:16],
                "accuracy_skipped": len(self.record.get("skipped") or [])}

    def notes(self) -> list[str]:
        """What the row's reason says about the data set: skipped images, empty class folders, no reserve."""
        out = []
        if skipped := self.record.get("skipped"):
            out.append(f"labelled accuracy: {len(skipped)} unreadable image(s) skipped ({skipped[0]}"
                       f"{', ...' if len(skipped) > 1 else ''})")
        if empty := self.record.get("empty_classes"):
            out.append(f"labelled data set: empty class folder(s) {', '.join(empty)} (no images; they keep their "
                       "class index)")
        if note := self.record.get("calibration_note"):
            out.append(note)
        return out

    def score(self, outputs: dict[str, np.ndarray], output_name: str) -> dict[str, Any]:
        """top-1/top-5 of the named output (the first one when that name is absent)."""
        logits = outputs[output_name] if output_name in outputs else next(iter(outputs.values()))
        return score(logits, self.labels)


def evaluation_set(spec: Any, accuracy: Any, calibration: Any, samples: int) -> Evaluation:
    """Up to `samples` labelled images of accuracy.dataset, preprocessed for `spec`'s weights, never one of the
    images calibration.source 'labelled' calibrates on (those are reserved even for non-int8 rows, so every
    precision is evaluated on the same images)."""
    import numpy as np


    pre = preprocess_for(spec)
    ds = load_labelled(accuracy["dataset"], accuracy.get("labels"))
    reserve = int(calibration.get("samples", 0)) if str(calibration.get("source")) == "labelled" else 0
    seed = int(calibration.get("seed", 0))
    note = None
    if reserve and reserve >= len(ds):  # an fp32 row still evaluates; the int8 row's calibration says why not
        note = (f"labelled data set has {len(ds)} images, too few to reserve {reserve} for int8 calibration and "
                f"evaluate the rest: nothing reserved (lower --calibration-samples for int8 rows)")
        reserve = 0
    evaluated, calib = ds.split(samples, reserve, seed)
    inputs, evaluated, skipped = ds.load_readable(evaluated, pre)
    record = {"dataset": str(ds.root), "labels_file": ds.labels_file, "images_total": len(ds),
              "classes": len(ds.classes) or len(set(ds.labels)), "seed": seed, "requested": samples,
              "evaluated": len(evaluated), "evaluated_sha256": ds.digest(evaluated),
              "calibration_reserved": len(calib), "calibration_sha256": ds.digest(calib),
              "preprocess": pre.to_dict(), "files": [ds.files[i] for i in evaluated],
              "labels": [ds.labels[i] for i in evaluated], "skipped": skipped,
              "empty_classes": list(ds.empty_classes), "calibration_note": note}
    labels = np.asarray([ds.labels[i] for i in evaluated], dtype=np.int64)
    return Evaluation(inputs, labels, record)
