"""Per-row files under runs/<id>/rows/<index>-<hash>/: latencies.csv.gz (every inference's timestamps), the telemetry
timelines and row.json (config, outcome, phases, instances, artifact). `outcome` is the runner's RunOutcome, read by its
attributes (results/ imports no runner)."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path
from typing import Any

from edgebench.atomic_files import write_json_atomic
from edgebench.config.run_config import RunConfig


def write_row_files(row_dir: Path, cfg: RunConfig, outcome: Any, artifact: Any, info: dict,
                    phases: dict[str, float] | None = None) -> None:
    """`phases`: the row's wall time per phase in seconds (pipeline/phases.py), kept in row.json."""
    row_dir.mkdir(parents=True, exist_ok=True)
    with gzip.open(row_dir / "latencies.csv.gz", "wt", newline="") as fh:
        w = csv.writer(fh)
        open_loop = any(inst.issued_ns is not None for inst in outcome.instances)
        # fixed-rate rows: start_ns is the scheduled arrival, issued_ns when the inference really began
        w.writerow(["instance", "placement", "start_ns", "end_ns", *(["issued_ns"] if open_loop else [])])
        for inst in outcome.instances:
            if open_loop and inst.issued_ns is not None:
                for s, e, i in zip(inst.start_ns.tolist(), inst.end_ns.tolist(), inst.issued_ns.tolist()):
                    w.writerow([inst.instance, inst.placement, s, e, i])
                continue
            for s, e in zip(inst.start_ns.tolist(), inst.end_ns.tolist()):
                w.writerow([inst.instance, inst.placement, s, e])
    for tl in outcome.timelines:
        tl.to_csv(row_dir / f"telemetry_{tl.source}.csv")
    write_json_atomic(row_dir / "row.json", {
        "config": cfg.to_dict(),
        "status": outcome.status,
        "reason": outcome.reason,
        "measure_start_ns": outcome.measure_start_ns,
        "measure_end_ns": outcome.measure_end_ns,
        "phase_s": outcome.phase_s,
        "phases": phases or {},
        "probe": None if outcome.probe is None else {
            "label": outcome.probe.label, "pid": outcome.probe.pid, "batch": outcome.probe.batch,
            "seconds": round(outcome.probe.seconds, 6), "notes": outcome.probe.notes,
            "kernels_note": outcome.probe.kernels_note},
        "instances": [{"instance": i.instance, "placement": i.placement, "pid": i.pid,
                       "inferences": int(len(i.start_ns)), "error": i.error} for i in outcome.instances],
        "telemetry": [{"source": t.source, "interval_s": t.interval_s, "notes": t.notes,
                       "channels": {n: c.unit for n, c in t.channels.items()}} for t in outcome.timelines],
        "artifact": {"path": artifact.onnx_path, "sha256": artifact.sha256, "sidecar": artifact.sidecar},
        "prepared": info,
    })
