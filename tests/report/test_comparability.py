"""What differs between runs: facts from system.json and the rows, the report's top section, and the label on
every cross-run line (same setup / differs only in X / CONFOUNDED)."""

from __future__ import annotations

import json
from pathlib import Path

from test_report_tables import row

from edgebench.answer.comparability import UNKNOWN, pair_label, run_differences, run_facts
from edgebench.report.compare import cross_run_table
from edgebench.report.summary import build_report
from edgebench.results.runs import load_runs
from edgebench.results.store import ResultsStore


def system(ort: str = "1.17.0", cpu: str = "Cortex-A78AE", jetson: dict | None = None) -> dict:
    return {"board": {"model": "Test Board"}, "cpu": {"model": cpu, "usable_cores": 2, "governor": "performance"},
            "packages": {"onnxruntime": ort, "torch": "2.3.0", "tensorrt": None}, "edgebench_version": "0.1.0",
            "git": {"commit": "abc123def4567890", "dirty": False}, **({"jetson": jetson} if jetson else {})}


def run_dir(path: Path, threads: int, sysinfo: dict | None, tput: float = 100.0) -> Path:
    store = ResultsStore(path)
    for i, prec in enumerate(("fp32", "int8")):
        store.append(row(i, prec, 1, tput * (i + 1), threads_per_instance=threads, provider="CPUExecutionProvider",
                         edgebench_version="0.1.0", weights="random-init"))
    if sysinfo is not None:
        (path / "system.json").write_text(json.dumps(sysinfo))
    (path / "profile.yaml").write_text("name: host\n")
    return path


def test_facts_come_from_system_json_and_rows(tmp_path):
    jetson = {"is_jetson": True, "jetpack": "5.1.1", "l4t": "35.3.1", "cuda": "11.4",
              "tensorrt": {"tensorrt": "8.5.2"}, "nvpmodel": {"id": 0, "name": "MAXN"},
              "jetson_clocks": {"active": True}}
    run = load_runs([run_dir(tmp_path / "a", 2, system(jetson=jetson))])[0]
    facts = run_facts(run)
    assert facts["JetPack"] == "5.1.1" and facts["L4T"] == "35.3.1" and facts["TensorRT"] == "tensorrt 8.5.2"
    assert facts["power mode"] == "MAXN" and facts["clocks locked (jetson_clocks)"] == "yes"
    assert facts["onnxruntime"] == "1.17.0" and facts["tensorrt (pip)"] == "not installed"
    assert facts["threads per instance"] == "2" and facts["execution provider"] == "CPUExecutionProvider"
    assert facts["edgebench commit"] == "abc123def456"
    plain = load_runs([run_dir(tmp_path / "b", 2, system())])[0]
    assert run_facts(plain)["JetPack"] == "n/a (not a Jetson)"


def test_two_runs_differing_in_threads_and_ort_are_confounded(tmp_path):
    a = run_dir(tmp_path / "a", 1, system(ort="1.17.0"))
    b = run_dir(tmp_path / "b", 2, system(ort="1.18.1"), tput=180.0)
    runs = load_runs([a, b])
    diffs = {d.fact: d for d in run_differences(runs)}
    assert set(diffs) == {"onnxruntime", "threads per instance"}
    assert diffs["onnxruntime"].values == ["1.17.0", "1.18.1"]
    table = cross_run_table(runs)
    other = [r for r in table.records if r["reference"] != "yes"]
    assert other and all(r["setup_vs_reference"].startswith("CONFOUNDED: differs in 2 things") for r in other)
    assert any(r["throughput_ratio"] == 1.8 for r in other)
    assert any("onnxruntime (1.17.0 vs 1.18.1)" in n for n in table.notes)


def test_one_difference_is_the_compared_factor(tmp_path):
    runs = load_runs([run_dir(tmp_path / "a", 1, system()), run_dir(tmp_path / "b", 2, system())])
    assert [d.fact for d in run_differences(runs)] == ["threads per instance"]
    other = [r for r in cross_run_table(runs).records if r["reference"] != "yes"]
    assert {r["setup_vs_reference"] for r in other} == {"differs only in threads per instance"}


def test_a_fact_one_run_does_not_record_is_listed_as_unknown(tmp_path):
    runs = load_runs([run_dir(tmp_path / "a", 1, system()), run_dir(tmp_path / "b", 1, None)])
    diffs = {d.fact: d for d in run_differences(runs)}
    assert diffs["onnxruntime"].unknown and diffs["onnxruntime"].values == ["1.17.0", UNKNOWN]
    label = pair_label(list(diffs.values()))
    assert "not recorded on one side: " in label and "onnxruntime" in label


def test_identical_setups_are_run_to_run_variation(tmp_path):
    runs = load_runs([run_dir(tmp_path / "a", 1, system()), run_dir(tmp_path / "b", 1, system(), tput=97.0)])
    assert run_differences(runs) == []
    other = [r for r in cross_run_table(runs).records if r["reference"] != "yes"]
    assert {r["setup_vs_reference"] for r in other} == {"same setup (run-to-run variation)"}


def test_report_lists_the_differences_at_the_top(tmp_path):
    a = run_dir(tmp_path / "a", 1, system(ort="1.17.0"))
    b = run_dir(tmp_path / "b", 2, system(ort="1.18.1"))
    rep = build_report([a, b], tmp_path / "rep")
    md = rep.summary_md.read_text()
    top = md.index("## Comparability of the runs")
    assert top < md.index("## Runs")
    section = md[top:md.index("## Runs")]
    assert "differ in 2 fact(s)" in section and "| onnxruntime | 1.17.0 | 1.18.1 |" in section
    assert "| threads per instance | 1 | 2 |" in section
    assert "written by edgebench" in md
    cross = (tmp_path / "rep" / "tables" / "cross_run.csv").read_text()
    assert "setup_vs_reference" in cross and "CONFOUNDED" in cross
    side_by_side = [f for f in rep.figures if not f.name.startswith("power_timeline")]
    assert side_by_side and all("runs differ in: onnxruntime (1.17.0 vs 1.18.1); threads per instance (1 vs 2)"
                                in f.caption for f in side_by_side)
