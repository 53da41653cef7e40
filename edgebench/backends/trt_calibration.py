"""Implicit INT8 (entropy) calibration data for TensorRT: the recorded calibration set re-created and
checked byte for byte, cut into the fixed-size batches an IInt8EntropyCalibrator2 feeds, and its table cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import ModelError
from edgebench.models.calibration import calibration_batches

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

def calibration_chunks(data: np.ndarray, batch: int) -> list[np.ndarray]:
    """Contiguous [batch, ...] chunks of the calibration set in order; a last partial chunk is left out
    (the calibrator's batch size is fixed)."""
    import numpy as np

    if batch < 1:
        raise ModelError(f"calibration batch must be >= 1, got {batch}")
    if data.shape[0] < batch:
        raise ModelError(f"calibration set has {data.shape[0]} samples, fewer than one batch of {batch}")
    return [np.ascontiguousarray(data[i:i + batch], dtype=np.float32)
            for i in range(0, data.shape[0] - batch + 1, batch)]


def recorded_calibration(record: dict[str, Any], input_shape: tuple[int, ...]) -> np.ndarray:
    """Re-create the calibration set the int8 artifact recorded, and check it is byte-identical."""

    try:
        data, now = calibration_batches(str(record["source"]), tuple(input_shape), int(record["count"]),
                                        int(record.get("seed", 0)), labelled=record.get("labelled"))
    except KeyError as exc:
        raise ModelError(f"calibration record lacks {exc}") from None
    if now["sha256"] != record.get("sha256"):
        raise ModelError(f"calibration data from {record['source']!r} changed since it was recorded "
                         f"(sha256 {now['sha256'][:12]} != {str(record.get('sha256'))[:12]})")
    return data


class CalibrationFeed:
    """The data side of an entropy calibrator: batches in order, then None; the calibration table cache."""

    def __init__(self, data: np.ndarray, batch: int, cache_path: Path) -> None:
        self.batch = batch
        self.batches = calibration_chunks(data, batch)
        self.cache_path = Path(cache_path)
        self.served = 0

    def next_batch(self) -> np.ndarray | None:
        if self.served >= len(self.batches):
            return None
        self.served += 1
        return self.batches[self.served - 1]

    def read_cache(self) -> bytes | None:
        try:
            blob = self.cache_path.read_bytes()
        except OSError:
            return None
        return blob or None

    def write_cache(self, blob: bytes) -> None:
        import os
        import tempfile

        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".calibration.", dir=self.cache_path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(bytes(blob))
        os.replace(tmp, self.cache_path)
