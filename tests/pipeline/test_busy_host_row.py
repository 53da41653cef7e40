"""The busy_host row step (pipeline/row_steps.py): a window where other processes took a material share of the CPU
gets host_busy and a note with the figure in its reason, whatever its status; a quiet one gets host_busy false and no
note; a row without a host timeline says in empty_reasons that it was not checked."""

from __future__ import annotations

from edgebench.config.run_config import RunConfig
from edgebench.pipeline.row_steps import RowFacts, build_row
from edgebench.results.row import Verdict
from edgebench.runner.metrics import Summary
from edgebench.runner.orchestrator import RunOutcome
from edgebench.telemetry.base import Channel, Timeline

S = 1_000_000_000
IDENT = {"model": "tiny_cnn", "backend": "ort", "precision": "int8", "batch": 1, "instances": 1, "mode": "process",
         "placement": "cpu", "run_id": "r", "row_index": 0, "config_hash": "abc", "edgebench_version": "0"}
SUMMARY = Summary(0, 2 * S, 2.0, 200, 200, 100.0, [100.0], {"p50": 10.0})
CFG = RunConfig("tiny_cnn", "ort", "int8", 1, ("cpu",), threads_per_instance=2)


def host(util_pct: float, proc_pct: float, cores: int = 2) -> Timeline:
    tl = Timeline("host", interval_s=0.5)
    for name in ("cpu_util_pct", *[f"cpu{i}_util_pct" for i in range(cores)], "proc_cpu_pct"):
        tl.add_channel(Channel(name, "%"))
    for k in range(5):  # t = 0, 0.5, ... 2 s: inside the window [0, 2 s]
        tl.append(k * S // 2, {"cpu_util_pct": util_pct, "proc_cpu_pct": proc_pct})
    return tl


def row_of(timelines: list[Timeline], judged: tuple[str, str] = ("ok", "")) -> dict:
    facts = RowFacts(dict(IDENT), cfg=CFG, summary=SUMMARY, verdict=Verdict(judged=judged),
                     run=RunOutcome("ok", "", [], 0, 0, timelines=timelines), samplers=("host",))
    return build_row(facts)


def test_a_busy_window_keeps_its_status_and_names_the_host_with_the_figure():
    row = row_of([host(100.0, 58.0)])  # the int8 row: 58% of one core on a fully busy 2-core host
    assert row["status"] == "ok" and row["host_busy"] is True
    assert row["others_cpu_pct_mean"] == 71.0 and row["cpu_taken_by_others_pct"] == 71.0
    assert row["reason"] == ("busy host: other processes took 71% of the CPU this row's instances could use (1.4 of "
                             "2 cores on average, 71% of the host, where the instances could use 2 and got 0.58): its "
                             "throughput may be cut")
    invalid = row_of([host(100.0, 58.0)], judged=("invalid", "throughput unstable: 22% > 15%"))
    assert invalid["status"] == "invalid"
    assert invalid["reason"].startswith("throughput unstable: 22% > 15%; busy host: other processes took 71%")


def test_a_quiet_window_is_checked_and_not_busy():
    row = row_of([host(99.0, 196.0)])
    assert row["host_busy"] is False and row["reason"] is None
    assert abs(row["cpu_taken_by_others_pct"] - 1.0) < 1e-9
    assert "host_busy" not in (row["empty_reasons"] or "")


def test_without_a_host_timeline_the_row_says_it_was_not_checked():
    row = row_of([])
    assert row["host_busy"] is None and row["reason"] is None
    assert ("host_busy, others_cpu_pct_mean, cpu_taken_by_others_pct: not checked: no host sampler timeline with the "
            "instances' own CPU (proc_cpu_pct) in this row") in row["empty_reasons"]
