"""The SLO searches of each run side by side: one line per search (option set x GPU sharing mode) from the
run folder's slo_search.csv, written with the other tables (tables/slo_search.{csv,md,tex}).

Answers are as the search wrote them: '21', 'at least 31' (capped at max_streams, or the next count was
unmeasured), 'undetermined ...' or 'skipped: ...'; `monotonic` false means p99 fell as streams were added
and the answer rests on an assumption the probes contradict (the note says where). The horizon the answer holds
for and the search's capacity (issue 35) are columns of their own.
"""

from __future__ import annotations

from typing import Any

from edgebench.report.table_format import Col, Table
from edgebench.results.reader import read_table
from edgebench.results.runs import Run

SLO_FILE = "slo_search.csv"
# the numbers of slo_search.csv (pipeline.slo_search.SEARCH_COLUMNS); its other cells stay text as written
SEARCH_TYPES = {"rate_per_stream_hz": float, "slo_ms": float, "p99_ms_at_max": float, "p99_ms_at_first_miss": float,
                "horizon_s": float, "capacity_per_s": float}


def slo_records(run: Run) -> list[dict[str, Any]]:
    """The lines of the run's slo_search.csv (none when the run has no SLO search)."""
    path = run.path / SLO_FILE
    if not path.exists():
        return []
    lines = read_table(path, types=SEARCH_TYPES)
    out = []
    for line in lines:
        rec: dict[str, Any] = dict(line, run=run.label)
        rec["options"] = line.get("options") or "default"
        rec["gpu_sharing"] = line.get("gpu_sharing") or "time-slicing"
        rec["answer"] = line.get("answer") or ("at least " if line.get("capped_at_max_streams") == "true" else "") \
            + str(line.get("max_streams_under_slo") or "")
        out.append(rec)
    return out


def slo_table(runs: list[Run]) -> Table | None:
    """None when no run holds an SLO search."""
    records = [rec for run in runs for rec in slo_records(run)]
    if not records:
        return None
    cols = [Col("run", "Run")] if len(runs) > 1 else []
    cols += [Col("model", "Model"), Col("backend", "Backend"), Col("precision", "Precision"), Col("batch", "Batch"),
             Col("device", "Device"), Col("options", "Options"), Col("gpu_sharing", "GPU sharing"),
             Col("rate_per_stream_hz", "Rate per stream (1/s)", True), Col("slo_ms", "SLO p99 (ms)", True),
             Col("arrival", "Arrivals"), Col("repeats_per_count", "Repeats per count"),
             Col("answer", "Max streams"), Col("p99_ms_at_max", "p99 at max (ms)", True),
             Col("p99_ms_repeats_at_max", "p99 per repeat at max (ms)"),
             Col("first_missed_streams", "First miss"), Col("p99_ms_at_first_miss", "p99 there (ms)", True),
             Col("p99_ms_repeats_at_first_miss", "p99 per repeat there (ms)"),
             Col("monotonic", "Monotonic"), Col("horizon_s", "Horizon (s)", True),
             Col("holds_at_max", "Holds at max"), Col("capacity_per_s", "Capacity (1/s)", True),
             Col("capacity_max_streams", "Streams it admits"), Col("capacity_source", "Capacity from"),
             Col("notes", "Notes"), Col("probes", "Probes", csv_only=True)]
    notes = ["one line per option set x GPU sharing mode; latency counts queueing (end - scheduled arrival)",
             "a count is accepted only when every repeat meets the SLO; p99 at max / there is the worst repeat's",
             "a count meets over the horizon: p99 + the latency growth its window cannot exclude (the trend's upper "
             "bound x horizon) <= the SLO (holds at max: the worst repeat's)",
             "capacity: what the device served (a closed loop at the search's first count, or an overloaded probe); "
             "no count offered more was probed but the one above the answer",
             "monotonic false: p99 fell as streams were added, which the search assumes never happens"]
    return Table("slo_search", "Most fixed-rate streams under a p99 SLO, side by side", cols, records, notes)
