"""The console's end-of-sweep table says how many rows ran on a busy host (host_busy), with the figures, and nothing
when none did; the report's summary page lists them with each row's note."""

from __future__ import annotations

from pathlib import Path

from edgebench.commands.console import busy_host_line, summary_table
from edgebench.report.summary import busy_host_blocks
from edgebench.results.runs import Run

NOTE = ("busy host: other processes took 71% of the CPU this row's instances could use (1.4 of 2 cores on average, "
        "71% of the host, where the instances could use 2 and got 0.58): its throughput may be cut")


def rows() -> list[dict]:
    base = {"model": "tiny_cnn", "precision": "fp32", "batch": "1", "instances": "1", "placement": "cpu",
            "mode": "process", "status": "ok", "throughput_ips": "100"}
    return [{**base, "row_index": "0", "host_busy": "false", "cpu_taken_by_others_pct": "2"},
            {**base, "row_index": "1", "host_busy": "true", "cpu_taken_by_others_pct": "71", "reason": NOTE},
            {**base, "row_index": "2", "host_busy": "true", "cpu_taken_by_others_pct": "45.4", "status": "invalid",
             "reason": "throughput unstable: 22% > 15%; " + NOTE.replace("71%", "45%")},
            {**base, "row_index": "3", "status": "skipped"}]


def test_the_table_ends_with_the_busy_rows_and_their_range():
    text = summary_table(rows(), title="t")
    assert text.splitlines()[-1] == (
        "busy host: 2 of 3 measured rows ran while other processes took 45-71% of the CPU the instances could use "
        "(row_index 1, 2): their throughput may be cut (each row's reason has its figure), and no int8 cause is "
        "named from them")
    quiet = [r for r in rows() if r.get("host_busy") != "true"]
    assert busy_host_line(quiet) is None and "busy host" not in summary_table(quiet, title="t")


def test_the_report_lists_the_busy_rows_with_their_notes():
    from edgebench.results.reader import typed_row

    blocks = busy_host_blocks([Run(Path("/runs/r1"), [typed_row(r) for r in rows()], label="r1")])
    assert blocks[0] == ("h2", "Rows measured on a busy host") and blocks[1] == ("h3", "r1")
    assert blocks[2][1][0].startswith("2 row(s) (row_index 1, 2) ran while other processes took")
    assert blocks[3] == ("ul", [[NOTE], [NOTE.replace("71%", "45%")]])
    assert busy_host_blocks([Run(Path("/runs/r2"), [typed_row(rows()[0])], label="r2")]) == []
