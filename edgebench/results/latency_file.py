"""A row's per-inference timestamps: rows/<row>/latencies.npz, written here and read back by every consumer (the
report's latency CDF and window shading, the self-audit). Run folders an earlier edgebench wrote hold
latencies.csv.gz instead (instance, placement, start_ns, end_ns[, issued_ns] as text); `read_latencies` reads both.

latencies.npz is a NumPy archive (`np.load(path)`, no pickle), one array per column, one entry per inference,
the instances one after another:

    instance    int32  the instance (0 .. instances-1)
    start_ns    int64  when the inference started (time.monotonic_ns; a fixed-rate row: its scheduled arrival)
    end_ns      int64  when it ended
    issued_ns   int64  fixed-rate rows only: when the inference really began (-1: its instance recorded none)

and one entry per instance: `instances` (int32, its number) and `placements` (str, where it ran).

Why binary (issue 27): the null backend's 1.5-2.5 million inferences per 0.2 s row at 4-8 instances took 1.0-1.4 s
to write as CSV text (formatting ~0.35 us, gzip ~0.35 us per line); the same columns as int64 arrays, deflated at
level 1, take ~0.3 s, are smaller (~5.1 bytes per inference against ~8.2 for the gzipped text) and read back
~40x faster (2.4 million inferences: 0.12 s against 4.6 s).
"""

from __future__ import annotations

import csv
import gzip
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

LATENCY_FILE = "latencies.npz"
LEGACY_LATENCY_FILE = "latencies.csv.gz"  # what edgebench wrote before issue 27's set-up work; read, never written
LATENCY_DEFLATE_LEVEL = 1  # level 6 (np.savez_compressed's) took ~6x as long and was no smaller (1.8 M inferences)


@dataclass
class RowLatencies:
    """Every measured inference of a row, in instance order (arrays of equal length)."""

    instance: np.ndarray  # int32
    start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64
    issued_ns: np.ndarray | None  # int64, fixed-rate rows only
    placements: dict[int, str]  # instance -> placement

    def latency_ms(self) -> np.ndarray:
        """end - start of every inference, in ms (float64)."""
        return (self.end_ns - self.start_ns) / 1e6

    def of_instance(self, instance: int) -> tuple[np.ndarray, np.ndarray]:
        """(start_ns, end_ns) of one instance's inferences."""
        mine = self.instance == instance
        return self.start_ns[mine], self.end_ns[mine]

    def spans_ns(self) -> dict[int, tuple[int, int]]:
        """instance -> (its first start, its last end), for each instance with an inference."""
        import numpy as np

        spans = {}
        for number in np.unique(self.instance).tolist():  # sorted, without a Python set of every inference
            start, end = self.of_instance(number)
            spans[number] = (int(start.min()), int(end.max()))
        return spans


def latency_path(row_dir: Path) -> Path | None:
    """The row's timestamp file: latencies.npz, else an earlier edgebench's latencies.csv.gz; None when neither
    exists (a skipped row, a run before any was kept)."""
    for name in (LATENCY_FILE, LEGACY_LATENCY_FILE):
        if (row_dir / name).exists() or (row_dir / name).is_symlink():
            return row_dir / name
    return None


def write_latencies(path: Path, instances: Sequence[Any]) -> None:
    """latencies.npz at `path` from the runner's instance results (attributes instance, placement, start_ns,
    end_ns, issued_ns), read by attribute: results/ imports no runner. Written as a whole where `path` says (the
    caller renames a temp file)."""
    import numpy as np

    counts = [len(inst.start_ns) for inst in instances]
    numbers = np.asarray([inst.instance for inst in instances], dtype=np.int32)
    columns: dict[str, np.ndarray] = {
        "instance": np.repeat(numbers, np.asarray(counts, dtype=np.int64)),
        "start_ns": _joined([inst.start_ns for inst in instances]),
        "end_ns": _joined([inst.end_ns for inst in instances]),
    }
    if any(inst.issued_ns is not None for inst in instances):  # fixed-rate rows: start_ns is the scheduled arrival
        columns["issued_ns"] = _joined([inst.issued_ns if inst.issued_ns is not None
                                        else np.full(n, -1, dtype=np.int64) for inst, n in zip(instances, counts,
                                                                                              strict=True)])
    columns["instances"] = numbers
    columns["placements"] = np.asarray([str(inst.placement) for inst in instances], dtype=np.str_)
    # np.savez's layout (one NAME.npy entry per array), deflated at a chosen level: np.savez_compressed has none
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=LATENCY_DEFLATE_LEVEL,
                         allowZip64=True) as zf:
        for name, array in columns.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, array, allow_pickle=False)


def _joined(arrays: list[Any]) -> np.ndarray:
    import numpy as np

    return np.concatenate([np.asarray(a, dtype=np.int64) for a in arrays]) if arrays else np.empty(0, np.int64)


def read_latencies(path: Path) -> RowLatencies:
    """A latencies.npz (or an earlier edgebench's latencies.csv.gz) as arrays. A file that is not one raises
    (OSError, ValueError, zipfile.BadZipFile or KeyError), as a damaged latencies.csv.gz always did (OSError)."""
    if path.name.endswith(".csv.gz"):
        return _read_legacy(path)
    import numpy as np

    with np.load(path, allow_pickle=False) as z:
        issued = z["issued_ns"] if "issued_ns" in z.files else None
        return RowLatencies(z["instance"], z["start_ns"], z["end_ns"], issued,
                            {int(i): str(p) for i, p in zip(z["instances"], z["placements"], strict=True)})


def _read_legacy(path: Path) -> RowLatencies:
    """latencies.csv.gz: a header, then one line per inference (instance, placement, start_ns, end_ns[, issued_ns])."""
    import numpy as np

    instance: list[int] = []
    start: list[int] = []
    end: list[int] = []
    issued: list[int] = []
    placements: dict[int, str] = {}
    with gzip.open(path, "rt", newline="") as fh:
        reader = csv.DictReader(fh)
        open_loop = "issued_ns" in (reader.fieldnames or [])
        for rec in reader:
            i = int(rec["instance"])
            placements.setdefault(i, rec["placement"])
            instance.append(i)
            start.append(int(rec["start_ns"]))
            end.append(int(rec["end_ns"]))
            if open_loop:
                issued.append(int(rec["issued_ns"]) if rec.get("issued_ns") else -1)
    return RowLatencies(np.asarray(instance, dtype=np.int32), np.asarray(start, dtype=np.int64),
                        np.asarray(end, dtype=np.int64), np.asarray(issued, dtype=np.int64) if open_loop else None,
                        placements)
