"""Reference anchors: the shipped MLPerf v3.1 Orin file loads with its provenance; a matching trt row on an
AGX Orin (hand-made run folder: no board here) is set beside its anchor with the setup differences; a CPU run
matches nothing and the summary says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_report_tables import row

from edgebench.report.anchors import load_anchors, match_anchors
from edgebench.report.summary import build_report
from edgebench.results.runs import load_runs
from edgebench.results.store import ResultsStore


def test_shipped_anchors_cite_their_source():
    anchors = {a.id: a for a in load_anchors()}
    off = anchors["mlperf-inference-v3.1-closed-orin-resnet50-offline"]
    assert off.value == 6423.63 and off.metric == "throughput_ips" and off.scenario == "Offline"
    assert off.provenance["repository"] == "mlcommons/inference_results_v3.1"
    assert off.provenance["result_file"].endswith("Orin_TRT/resnet50/Offline/performance/run_1/mlperf_log_summary.txt")
    assert str(off.value) in off.provenance["quote"]
    ss = anchors["mlperf-inference-v3.1-closed-orin-resnet50-singlestream"]
    assert ss.value == pytest.approx(640258 / 1e6) and "640258" in ss.provenance["quote"]
    assert ss.match["batch"] == 1 and ss.match["instances"] == 1
    for a in anchors.values():  # no setup value is invented: unknowns say where they are to come from
        assert a.setup["jetpack"] == "5.1.1" and a.setup["tensorrt"] == "8.5.2"
        assert a.setup["precision"].startswith("not stated in the files cited")


def orin_run(path: Path) -> Path:
    store = ResultsStore(path)
    rows = [row(0, "int8", 1, 1200.0, model="resnet50", backend="trt", placement="gpu", weights="random-init",
                latency_ms_p50=0.8, latency_ms_p90=0.83, scenario="closed-loop"),
            row(1, "int8", 32, 3900.0, model="resnet50", backend="trt", placement="gpu", weights="random-init",
                scenario="closed-loop"),
            row(2, "int8", 32, 5100.0, model="resnet50", backend="trt", placement="gpu+dla0+dla1", instances=3,
                weights="random-init", scenario="closed-loop"),
            row(3, "fp32", 1, 400.0, model="resnet18", backend="trt", placement="gpu")]
    for r in rows:
        r["backend"] = "trt"
        store.append(r)
    (path / "system.json").write_text(json.dumps({
        "board": {"model": "NVIDIA Jetson AGX Orin Developer Kit"},
        "jetson": {"is_jetson": True, "jetpack": "6.0", "l4t": "36.3.0", "cuda": "12.2",
                   "tensorrt": {"tensorrt": "8.6.2"}, "nvpmodel": {"id": 0, "name": "MAXN"}}}))
    (path / "profile.yaml").write_text("name: orin\n")
    return path


def test_matching_rows_are_set_beside_their_anchor_with_setup_differences(tmp_path):
    runs = load_runs([orin_run(tmp_path / "orin")])
    matches, unmatched = match_anchors(runs, load_anchors())
    by = {m.anchor.scenario: m for m in matches}
    assert unmatched == []
    off = by["Offline"]
    assert off.row["row_index"] == 2 and off.measured == 5100.0  # the best ok throughput row
    assert off.ratio == pytest.approx(5100.0 / 6423.63)
    assert "jetpack: 6.0 vs anchor 5.1.1" in off.differences
    assert "tensorrt: 8.6.2 vs anchor 8.5.2" in off.differences and "l4t: 36.3.0 vs anchor 35.3.1" in off.differences
    assert any(d.startswith("weights: random-init") for d in off.differences)
    ss = by["SingleStream"]
    assert ss.row["row_index"] == 0 and ss.measured == 0.83  # batch 1, one instance, latency p90
    rep = build_report([tmp_path / "orin"], tmp_path / "rep")
    md = rep.summary_md.read_text()
    assert "## Reference anchors (published results)" in md and "6423.63 samples/s published" in md
    assert (tmp_path / "rep" / "tables" / "anchors.csv").read_text().count("mlperf-inference-v3.1") == 2


def test_a_cpu_run_is_not_compared_and_the_summary_says_why(tmp_path):
    store = ResultsStore(tmp_path / "cpu")
    store.append(row(0, "fp32", 1, 30.0, model="resnet50"))
    runs = load_runs([tmp_path / "cpu"])
    matches, unmatched = match_anchors(runs, load_anchors())
    assert matches == [] and len(unmatched) == 2
    assert "needs resnet50 on trt on a AGX Orin" in unmatched[0] and "backend ort (anchor: trt)" in unmatched[0]
    rep = build_report([tmp_path / "cpu"], tmp_path / "rep")
    assert "Not compared (only matching setups are)" in rep.summary_md.read_text()
    assert not (tmp_path / "rep" / "tables" / "anchors.csv").exists()
