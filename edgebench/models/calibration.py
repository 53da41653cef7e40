"""Calibration data for INT8 quantization: seeded synthetic inputs, a folder of .npy files / images,
"labelled": a subset of the labelled data set disjoint from the images accuracy is evaluated on
(edgebench.models.labelled), preprocessed like them, or (models with several inputs) .npz files with one array
per input name.

Every call returns the array and a record of exactly what it holds (source, count, seed, sha256 of the
array bytes, the files read), which goes into the int8 artifact's sidecar and its cache key.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import ModelError
from edgebench.models.inputs import load_data, sample_count, synthetic
from edgebench.models.labelled import Preprocess, load_labelled
from edgebench.models.weights import preprocess_for

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.models.inputs import InputDesc

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
NPY_SUFFIXES = (".npy",)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def calibration_batches(
    source: str, input_shape: tuple[int, ...], samples: int, seed: int, labelled: dict[str, Any] | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Return `samples` inputs shaped [samples, *input_shape] (float32) and the record describing them.

    source "synthetic": seeded standard normal. Otherwise a folder of .npy files (each one sample, or a
    batch whose trailing dims are `input_shape`) or .jpg/.png images (resized to HxW, ImageNet-normalized,
    CHW). Files are read in sorted name order; the first `samples` samples are used.
    source "labelled": `labelled` = {"dataset", "labels", "preprocess"} (labelled_source()); the calibration
    subset of that data set (the back of its seeded shuffle, see edgebench.models.labelled).
    """
    import numpy as np

    shape = tuple(int(d) for d in input_shape)
    if samples < 1:
        raise ModelError(f"calibration: samples must be >= 1, got {samples}")
    record: dict[str, Any] = {"source": source, "seed": seed}
    if source == "synthetic":
        rng = np.random.default_rng(seed)
        data = rng.standard_normal((samples, *shape), dtype=np.float32)
    elif source == "labelled":
        data, files = _from_labelled(labelled, shape, samples, seed)
        record["files"] = files
        record["labelled"] = dict(labelled or {})
    else:
        data, files = _from_folder(Path(source), shape, samples)
        record["files"] = files
    data = np.ascontiguousarray(data, dtype=np.float32)
    record["count"] = int(data.shape[0])
    record["shape"] = list(data.shape)
    record["sha256"] = hashlib.sha256(data.tobytes()).hexdigest()
    return data, record


def _from_labelled(labelled: dict[str, Any] | None, shape: tuple[int, ...], samples: int,
                   seed: int) -> tuple[np.ndarray, list[str]]:
    if not labelled or not labelled.get("dataset"):
        raise ModelError("calibration.source is 'labelled' but no labelled data set is given "
                         "(accuracy.dataset / --dataset)")
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in labelled["preprocess"].items()}
    pre = Preprocess(**fields)
    if (pre.channels, pre.height, pre.width) != tuple(shape):
        raise ModelError(f"calibration: preprocessing gives {[pre.channels, pre.height, pre.width]}, "
                         f"the model takes {list(shape)}")
    ds = load_labelled(labelled["dataset"], labelled.get("labels"))
    _, calib = ds.split(1, samples, seed)  # at least one image must stay for evaluation (disjoint sets)
    data, calib, _ = ds.load_readable(calib, pre)  # an unreadable image is skipped (the record lists the files used)
    return data, [ds.files[i] for i in calib]


def labelled_source(spec: Any, calibration: Any) -> dict[str, Any] | None:
    """What calibration_batches needs for source "labelled" with this model (None for other sources)."""
    if str(calibration.get("source", "synthetic")) != "labelled":
        return None

    return {"dataset": calibration.get("dataset"), "labels": calibration.get("labels"),
            "preprocess": preprocess_for(spec).to_dict()}


def _from_folder(folder: Path, shape: tuple[int, ...], samples: int) -> tuple[np.ndarray, list[str]]:
    import numpy as np

    if not folder.is_dir():
        raise ModelError(f"{folder}: calibration source is neither 'synthetic' nor an existing folder")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in NPY_SUFFIXES + IMAGE_SUFFIXES)
    if not files:
        raise ModelError(f"{folder}: no .npy or image ({', '.join(IMAGE_SUFFIXES)}) files for calibration")
    chunks: list[np.ndarray] = []
    used: list[str] = []
    have = 0
    for path in files:
        if have >= samples:
            break
        if path.suffix.lower() in NPY_SUFFIXES:
            arr = _load_npy(path, shape)
        else:
            arr = _load_image(path, shape)[None]
        chunks.append(arr)
        used.append(path.name)
        have += arr.shape[0]
    data = np.concatenate(chunks, axis=0)[:samples]
    if data.shape[0] < samples:
        raise ModelError(
            f"{folder}: holds {data.shape[0]} calibration samples, {samples} requested (calibration.samples)"
        )
    return data, used


def _load_npy(path: Path, shape: tuple[int, ...]) -> np.ndarray:
    import numpy as np

    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: not a readable .npy array ({exc})") from None
    if tuple(arr.shape) == shape:
        arr = arr[None]
    if arr.ndim != len(shape) + 1 or tuple(arr.shape[1:]) != shape:
        raise ModelError(f"{path}: array shape {tuple(arr.shape)} is neither {shape} nor [N, *{shape}]")
    if not np.issubdtype(arr.dtype, np.number):
        raise ModelError(f"{path}: array dtype {arr.dtype} is not numeric")
    return arr.astype(np.float32)


def _load_image(path: Path, shape: tuple[int, ...]) -> np.ndarray:
    import numpy as np

    if len(shape) != 3 or shape[0] not in (1, 3):
        raise ModelError(f"{path}: images need a model input of [1 or 3, H, W], the model takes {list(shape)}")
    try:
        from PIL import Image
    except ImportError:
        raise ModelError(
            f"{path}: reading images for calibration needs Pillow (pip install pillow), or use .npy files"
        ) from None
    channels, height, width = shape
    try:
        bilinear = getattr(Image, "Resampling", Image).BILINEAR  # Image.Resampling from Pillow 9.1
        with Image.open(path) as src:
            img = src.convert("RGB" if channels == 3 else "L").resize((width, height), bilinear)
            arr = np.asarray(img, dtype=np.float32) / 255.0
    except OSError as exc:
        raise ModelError(f"{path}: not a readable image ({exc})") from None
    if channels == 1:
        return ((arr - IMAGENET_MEAN[0]) / IMAGENET_STD[0])[None]
    normed = (arr - np.asarray(IMAGENET_MEAN, dtype=np.float32)) / np.asarray(IMAGENET_STD, dtype=np.float32)
    return normed.transpose(2, 0, 1)


def calibration_feeds(
    source: str, inputs: tuple[InputDesc, ...], samples: int, seed: int
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Calibration data for every input of a model, {name: [samples, *shape]}, and its record.

    One float32 input keeps calibration_batches (same data and record as before several inputs existed, unless
    the source is an .npz). Several inputs or integer/bool ones: source "synthetic" draws valid data per input
    (edgebench.models.inputs.synthetic: token ids within the vocabulary, masks of ones), otherwise the source is an .npz
    or a folder of .npz files with one array per input name. Integer inputs are data, never quantised: the
    quantizer only inserts Q/DQ on float tensors."""
    import numpy as np


    if samples < 1:
        raise ModelError(f"calibration: samples must be >= 1, got {samples}")
    npz = source != "synthetic" and (source.endswith(".npz") or (
        Path(source).is_dir() and any(p.suffix == ".npz" for p in Path(source).iterdir())))
    if len(inputs) == 1 and inputs[0].dtype == "float32" and inputs[0].batch_axis == 0 and not npz and \
            inputs[0].value is None:
        data, record = calibration_batches(source, inputs[0].shape, samples, seed)
        return {inputs[0].name: data}, record
    record = {"source": source, "seed": seed}
    if source == "synthetic":
        feeds = synthetic(inputs, samples, seed)
    else:
        feeds = load_data(source, inputs, samples)
        record["files"] = ([Path(source).name] if Path(source).is_file()
                           else sorted(p.name for p in Path(source).iterdir() if p.suffix == ".npz"))
    digest = hashlib.sha256()
    for d in inputs:
        digest.update(d.name.encode())
        digest.update(np.ascontiguousarray(feeds[d.name]).tobytes())
    record["count"] = sample_count(feeds, inputs)
    record["shape"] = list(feeds[inputs[0].name].shape)
    record["inputs"] = {d.name: {"dtype": d.dtype, "shape": list(feeds[d.name].shape), "role": d.role,
                                 "vocab": d.vocab, **({} if d.value is None else {"value": d.value})}
                        for d in inputs}
    record["sha256"] = digest.hexdigest()
    return feeds, record
