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
from collections.abc import Callable, Iterator, Sequence
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
    """latencies.npz at `path` from the runner's instance results (attributes instance, placement, and either
    `stamps`, runner/stamps.py's chunked timestamps, or start_ns / end_ns / issued_ns arrays), read by attribute:
    results/ imports no runner. Written as a whole where `path` says (the caller renames a temp file).

    Each column is written a chunk at a time behind its .npy header (issue 37): the bytes are those np.savez's
    layout gives the whole arrays, and no column is ever held in memory whole."""
    import numpy as np

    counts = [inference_count(inst) for inst in instances]
    numbers = np.asarray([inst.instance for inst in instances], dtype=np.int32)
    total = sum(counts)

    def instance_column() -> Iterator[np.ndarray]:
        for number, n in zip(numbers.tolist(), counts, strict=True):
            for a in range(0, n, WRITE_CHUNK):
                yield np.full(min(WRITE_CHUNK, n - a), number, dtype=np.int32)

    def column(name: str) -> Callable[[], Iterator[np.ndarray]]:
        def chunks() -> Iterator[np.ndarray]:
            for inst, n in zip(instances, counts, strict=True):
                if name == "issued_ns" and not _has_issued(inst):  # -1: its instance recorded none
                    for a in range(0, n, WRITE_CHUNK):
                        yield np.full(min(WRITE_CHUNK, n - a), -1, dtype=np.int64)
                else:
                    yield from _column_chunks(inst, name)
        return chunks

    streamed: dict[str, tuple[np.dtype, Callable[[], Iterator[np.ndarray]]]] = {
        "instance": (np.dtype(np.int32), instance_column),
        "start_ns": (np.dtype(np.int64), column("start_ns")),
        "end_ns": (np.dtype(np.int64), column("end_ns")),
    }
    if any(_has_issued(inst) for inst in instances):  # fixed-rate rows: start_ns is the scheduled arrival
        streamed["issued_ns"] = (np.dtype(np.int64), column("issued_ns"))
    small = {"instances": numbers, "placements": np.asarray([str(inst.placement) for inst in instances], dtype=np.str_)}
    # np.savez's layout (one NAME.npy entry per array), deflated at a chosen level: np.savez_compressed has none
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=LATENCY_DEFLATE_LEVEL,
                         allowZip64=True) as zf:
        for name, (dtype, chunks) in streamed.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (total,)}
                np.lib.format.write_array_header_1_0(fh, header)
                written = 0
                for chunk in chunks():
                    fh.write(np.ascontiguousarray(chunk, dtype=dtype).tobytes())
                    written += len(chunk)
                if written != total:
                    raise ValueError(f"latencies.npz {name}: {written} entries written, {total} counted")
        for name, array in small.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, array, allow_pickle=False)


WRITE_CHUNK = 1 << 20  # entries of a column written at a time


def inference_count(inst: Any) -> int:
    """An instance result's inferences (its stamps' count, or the length of its start_ns)."""
    stamps = getattr(inst, "stamps", None)
    return int(stamps.count) if stamps is not None else len(inst.start_ns)


def _has_issued(inst: Any) -> bool:
    stamps = getattr(inst, "stamps", None)
    return bool(stamps.open_loop) if stamps is not None else getattr(inst, "issued_ns", None) is not None


def _column_chunks(inst: Any, name: str) -> Iterator[np.ndarray]:
    stamps = getattr(inst, "stamps", None)
    if stamps is not None:
        for chunk in stamps.chunks():
            yield getattr(chunk, name)
        return
    array = getattr(inst, name)
    for a in range(0, len(array), WRITE_CHUNK):
        yield array[a:a + WRITE_CHUNK]


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
