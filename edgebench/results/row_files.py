"""Per-row files under runs/<id>/rows/<index>-<hash>/: latencies.npz (every inference's timestamps), the telemetry
timelines and row.json (config, outcome, phases, instances, artifact). `outcome` is the runner's RunOutcome, read by its
attributes (results/ imports no runner)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edgebench.atomic_files import write_json_atomic
from edgebench.config.run_config import RunConfig
from edgebench.file_sizes import device_of
from edgebench.results.latency_file import LATENCY_FILE, inference_count, write_latencies


@contextlib.contextmanager
def _whole(path: Path) -> Iterator[Path]:
    """A temp path beside `path`, renamed to it when the block ends without error, removed otherwise."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        if exc.filename is None:  # a write() error names no file: name the one being written
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_row_files(row_dir: Path, cfg: RunConfig, outcome: Any, artifact: Any, info: dict,
                    phases: dict[str, float] | None = None) -> None:
    """`phases`: the row's wall time per phase in seconds (pipeline/phases.py), kept in row.json."""
    write_row_data(row_dir, outcome)
    write_row_json(row_dir, cfg, outcome, artifact, info, phases)


def write_row_data(row_dir: Path, outcome: Any) -> None:
    """latencies.npz (results/latency_file.py) and the telemetry timelines (the bulk of a row's files; row.json is
    written after them, so its phases can include their write)."""
    row_dir.mkdir(parents=True, exist_ok=True)
    # every file goes to a temp name first and is renamed when whole: a full disk or a kill leaves no
    # half-written file under a final name
    with _whole(row_dir / LATENCY_FILE) as tmp:
        write_latencies(tmp, outcome.instances)
    for tl in outcome.timelines:
        with _whole(row_dir / f"telemetry_{tl.source}.csv") as tmp:
            tl.to_csv(tmp)


def stamps_record(row_dir: Path, outcome: Any) -> dict[str, Any]:
    """What the row's timestamp chunk files took while it ran (the runner measured its work folder before the files
    were summarised or removed) and whether they were on the results disk (the run folder's work root, or a temp
    folder on the same file system): then a row needs that much more room than its folder keeps
    (pipeline/disk_full.py)."""
    dev = getattr(outcome, "stamps_dev", None)
    results_disk = device_of(next((p for p in (row_dir, *row_dir.parents) if p.exists()), row_dir))  # a row folder
    return {"bytes": int(getattr(outcome, "stamps_bytes", 0)),  # not made yet: the run folder's disk
            "on_results_disk": dev is not None and dev == results_disk}


def write_row_json(row_dir: Path, cfg: RunConfig, outcome: Any, artifact: Any, info: dict,
                   phases: dict[str, float] | None = None) -> None:
    """row.json: config, outcome, phases (pipeline/phases.py), probe, instances, telemetry, artifact."""
    row_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(row_dir / "row.json", {
        "config": cfg.to_dict(),
        "status": outcome.status,
        "reason": outcome.reason,
        "measure_start_ns": outcome.measure_start_ns,
        "measure_end_ns": outcome.measure_end_ns,
        "stream_origin_ns": outcome.stream_origin_ns,
        "phase_s": outcome.phase_s,
        "phases": phases or {},
        "probe": None if outcome.probe is None else {
            "label": outcome.probe.label, "pid": outcome.probe.pid, "batch": outcome.probe.batch,
            "seconds": round(outcome.probe.seconds, 6), "notes": outcome.probe.notes,
            "kernels_note": outcome.probe.kernels_note, "framework_log": outcome.probe.framework_log},
        "instances": [{"instance": i.instance, "placement": i.placement, "pid": i.pid,
                       "inferences": inference_count(i), "error": i.error} for i in outcome.instances],
        "stamps": stamps_record(row_dir, outcome),
        "telemetry": [{"source": t.source, "interval_s": t.interval_s, "notes": t.notes,
                       "channels": {n: c.unit for n, c in t.channels.items()}} for t in outcome.timelines],
        "artifact": {"path": artifact.onnx_path, "sha256": artifact.sha256, "sidecar": artifact.sidecar},
        "prepared": info,
    })
