"""Per-layer TensorRT timing (trt option layer_profile): aggregation of captured profiler output, layers.csv,
the report figure and page; the IProfiler call itself runs only with TensorRT (-m tensorrt).

Fixtures (tests/fixtures/trt/README.md): profile_mobilenet_qat_int8_sm75.json is real trtexec --exportProfile
output (trtexec's IProfiler) of the engine whose inspector JSON is inspector_mobilenet_qat_int8_sm75.json;
profile_vgg19_dla0_fallback_constructed.json is constructed (DLA ForeignNodes, reformats, GPU fallback)."""

from __future__ import annotations

import csv

import pytest
from repo_paths import FIXTURES

from edgebench.backends.trt_layers import (
    LayerTimes,
    aggregate,
    inspector_types,
    parse_trtexec_profile,
)
from edgebench.errors import BackendError
from edgebench.results.layer_profile import read_layers_csv, top_layers, write_layers_csv

FIX = FIXTURES / "trt"


def mobilenet_rows():
    times = parse_trtexec_profile((FIX / "profile_mobilenet_qat_int8_sm75.json").read_text())
    types = inspector_types((FIX / "inspector_mobilenet_qat_int8_sm75.json").read_text())
    return times, aggregate(times, "gpu", "gpu", types)


def test_captured_gpu_profile_aggregates_to_per_inference_times_and_shares():
    times, rows = mobilenet_rows()
    assert times.runs == 4216 and len(rows) == 85
    assert sum(r.share_pct for r in rows) == pytest.approx(100.0)
    top = top_layers(rows, 3)
    assert top[0].layer == "features.16.conv.2.weight + QuantizeLinear_771 + Conv_775 + Add_777"
    assert top[0].time_ms == pytest.approx(73.3303 / 4216)  # timeMs is the total over `count` runs
    assert top[0].share_pct == pytest.approx(2.68804, rel=1e-3)  # trtexec's own percentage
    assert {r.device for r in rows} == {"GPU"}


def test_layer_types_come_from_the_inspector_and_reformats_are_named():
    _times, rows = mobilenet_rows()
    by_name = {r.layer: r for r in rows}
    assert by_name["features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)"].type == "CaskConvolution"
    reformats = [r for r in rows if r.layer.startswith("Reformatting CopyNode")]
    assert len(reformats) == 13 and {r.type for r in reformats} == {"Reformat"}
    typed = sum(1 for r in rows if r.type)
    assert typed >= 80  # the inspector of the same engine names (almost) every profiled layer


def test_dla_foreign_nodes_are_one_dla_entry_each_and_fallback_layers_stay_gpu():
    times = parse_trtexec_profile((FIX / "profile_vgg19_dla0_fallback_constructed.json").read_text())
    rows = aggregate(times, "dla0", "dla")
    by_name = {r.layer: r for r in rows}
    dla = [r for r in rows if r.device == "DLA"]
    assert [r.layer for r in dla] == ["{ForeignNode[conv1_1...pool5]}", "{ForeignNode[relu6...fc8]}"]
    assert {r.type for r in dla} == {"ForeignNode"}
    assert by_name["fc6"].device == "GPU" and by_name["fc6"].type == ""
    assert by_name["Reformatting CopyNode for Input Tensor 0 to {ForeignNode[conv1_1...pool5]}"].device == "GPU"
    assert sum(r.share_pct for r in dla) == pytest.approx(100 * (21.873 + 0.6541) / 24.6186, rel=1e-4)
    # the same names in a GPU engine are Myelin subgraphs: GPU
    assert {r.device for r in aggregate(times, "gpu", "gpu")} == {"GPU"}


def test_profiler_reports_accumulate_per_layer_across_runs():
    times = LayerTimes()
    for _run in range(3):  # what report_layer_time(layer_name, ms) delivers, once per layer per execute_v2
        times.add("conv1 + relu1", 0.5)
        times.add("{ForeignNode[a...b]}", 1.5)
        times.runs += 1
    rows = aggregate(times, "dla1", "dla")
    assert [(r.layer, r.device, r.time_ms, r.share_pct) for r in rows] == [
        ("conv1 + relu1", "GPU", 0.5, 25.0), ("{ForeignNode[a...b]}", "DLA", 1.5, 75.0)]
    with pytest.raises(BackendError, match="no profiled inference"):
        aggregate(LayerTimes(), "gpu", "gpu")
    with pytest.raises(BackendError, match="expected a list starting with"):
        parse_trtexec_profile('{"name": "x"}')


def test_layers_csv_round_trips(tmp_path):
    _times, rows = mobilenet_rows()
    path = tmp_path / "layers.csv"
    write_layers_csv(rows, path)
    with open(path, newline="") as fh:
        header = next(csv.reader(fh))
    assert header == ["engine", "layer", "type", "device", "time_ms", "share_pct"]
    back = read_layers_csv(path)
    assert [r.layer for r in back] == [r.layer for r in rows]
    assert back[0].time_ms == pytest.approx(rows[0].time_ms, rel=1e-5)


def test_report_page_shows_the_top_layers_figure_from_captured_data(tmp_path):
    """A run whose rows carry layers.csv (from the captured GPU profile and the constructed DLA one): `edgebench
    report` writes layers.md with one figure per engine, linked from summary.md."""
    pytest.importorskip("matplotlib")
    from edgebench.report.summary import build_report

    run = tmp_path / "20250101-000000-orin"
    (run / "rows" / "0-abc").mkdir(parents=True)
    (run / "rows" / "1-def").mkdir(parents=True)
    (run / "results.csv").write_text("run_id,row_index,config_hash,model,backend,precision,batch,instances,placement,"
                                     "status,reason,throughput_ips\n"
                                     "r,0,abc,mobilenet_v2,trt,int8,1,1,gpu,ok,,1000\n"
                                     "r,1,def,vgg19,trt,fp16,1,1,dla0,ok,,40\n")
    _t, gpu_rows = mobilenet_rows()
    write_layers_csv(gpu_rows, run / "rows" / "0-abc" / "layers.csv")
    dla = aggregate(parse_trtexec_profile((FIX / "profile_vgg19_dla0_fallback_constructed.json").read_text()),
                    "dla0", "dla")
    write_layers_csv(dla, run / "rows" / "1-def" / "layers.csv")
    report = build_report([run], tmp_path / "report", formats=("png",))
    page = report.layers_page
    assert page is not None and page.name == "layers.md"
    text = page.read_text()
    assert "row 0-abc / engine gpu: top 15 of 85 layers" in text
    assert "row 1-def / engine dla0: top 8 of 8 layers" in text and "on DLA 91.5%" in text
    assert "| {ForeignNode[conv1_1...pool5]} | ForeignNode | DLA |" in text
    figs = sorted(p.name for p in (tmp_path / "report" / "figures").glob("layers_*.png"))
    assert figs == [f"layers_{run.name}_0-abc_gpu.png", f"layers_{run.name}_1-def_dla0.png"]
    assert all((tmp_path / "report" / "figures" / f).stat().st_size > 5000 for f in figs)
    assert "(layers.md)" in report.summary_md.read_text()


@pytest.mark.tensorrt
def test_iprofiler_reports_every_layer_of_a_real_engine(tmp_path):
    """Real TensorRT: build a tiny engine, profile it with the IProfiler subclass, every layer reported per run."""
    trt = pytest.importorskip("tensorrt", reason="TensorRT is not installed (JetPack / x86 TensorRT)")
    from edgebench.backends.cuda_buffers import open_runtime
    from edgebench.backends.trt_layers import profile_engine

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    flags = 0 if int(trt.__version__.split(".")[0]) >= 10 else \
        1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    net = builder.create_network(flags)
    x = net.add_input("x", trt.float32, (1, 8))
    relu = net.add_activation(x, trt.ActivationType.RELU)
    relu.name = "relu_layer"
    net.mark_output(relu.get_output(0))
    config = builder.create_builder_config()
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
    engine = trt.Runtime(logger).deserialize_cuda_engine(builder.build_serialized_network(net, config))
    context = engine.create_execution_context()
    cuda = open_runtime()
    bufs = [cuda.malloc(32), cuda.malloc(32)]
    try:
        times = profile_engine(context, bufs, 5, lambda: None)
    finally:
        for b in bufs:
            cuda.free(b)
    assert times.runs == 5 and times.total_ms and all(c == 5 for c in times.calls.values())
