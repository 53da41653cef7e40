"""`edgebench report` on a real run folder: a null-backend sweep run through the CLI (seconds).

The figure data is checked against results.csv read independently with the csv module, the power
timeline's shaded window against the row's window_s, and every figure/table file against the summary.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

from edgebench.cli import main

PROFILE = """\
name: reportnull
extends: base
description: null-backend sweep for the report tests
sweep:
  models: [tiny_cnn]
  backends: ["null"]
  precisions: [fp32, fp16]
  batches: [1, 4]
  instances: [1, 2]
  modes: [streams]
  option_sets: [{sleep_s: 0.002}]
run:
  warmup_s: 0.05
  duration_s: 0.25
  max_duration_s: 2.0
  min_inferences: 50
  accuracy_samples: 0
  stability_tolerance_pct: 60.0
telemetry:
  samplers: [host]
  interval_s: 0.05
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch", reason="the sweep exports tiny_cnn to ONNX with torch (pip install 'edgebench[export]')")
    pytest.importorskip("psutil", reason="the host sampler needs psutil")
    base = tmp_path_factory.mktemp("report-sweep")
    (base / "reportnull.yaml").write_text(PROFILE)
    rc = main(["--cache", str(base / "cache"), "bench", "--device", str(base / "reportnull.yaml"),
               "--out", str(base / "runs")])
    assert rc == 0
    (run,) = (base / "runs").iterdir()
    return run


def set_power(run: Path, row: dict[str, str], with_power: bool) -> None:
    """Rewrite a row's telemetry_host.csv with a power channel (a host with RAPL: 5 W + 1 mW per sample) or
    without any (a host without RAPL), whatever this machine's host sampler could read."""
    path = run / row["artifact_dir"] / "telemetry_host.csv"
    with open(path, newline="") as fh:
        lines = list(csv.reader(fh))
    keep = [i for i, name in enumerate(lines[0]) if not name.endswith("[mW]")]
    out = [[line[i] if i < len(line) else "" for i in keep] for line in lines]
    if with_power:
        out = [out[0] + ["power_total_mw[mW]"]] + [line + [str(5000.0 + k)] for k, line in enumerate(out[1:])]
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(out)


@pytest.fixture(scope="module")
def powered_run(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sweep in which rows 1, 3 and 5 have a power channel and the others none."""
    copy = tmp_path_factory.mktemp("powered") / "run"
    shutil.copytree(run_dir, copy)
    with open(copy / "results.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            set_power(copy, row, row["row_index"] in ("1", "3", "5"))
    return copy


@pytest.fixture(scope="module")
def csv_rows(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_throughput_figure_plots_exactly_the_rows_of_results_csv(run_dir, csv_rows):
    from edgebench.report.plots import throughput_vs_batch
    from edgebench.results.runs import load_runs

    figures = {f.name: f for f in throughput_vs_batch(load_runs([run_dir]))}
    assert set(figures) == {"throughput_vs_batch_tiny_cnn_null_n1_streams_sleep_s-0.002",
                            "throughput_vs_batch_tiny_cnn_null_n2_streams_sleep_s-0.002"}
    for n in ("1", "2"):
        fig = next(f for f in figures.values() if f"_n{n}_" in f.name)
        for precision in ("fp32", "fp16"):
            series = next(s for s in fig.series if s.label == precision)
            expected = sorted((float(r["batch"]), float(r["throughput_ips"]), r["status"]) for r in csv_rows
                              if r["instances"] == n and r["precision"] == precision)
            assert sorted((p.x, p.y, p.status) for p in series.points) == expected
            ok = {x: y for x, y, st in expected if st == "ok"}
            assert dict(zip(series.line_x, series.line_y)) == ok  # the line joins ok rows only
        assert fig.x_ticks == [1.0, 4.0]
        assert fig.counts.get("ok", 0) + fig.counts.get("invalid", 0) == 4


def test_scaling_figure_has_a_linear_reference_from_one_instance(run_dir, csv_rows):
    from edgebench.report.plots import throughput_vs_instances
    from edgebench.results.runs import load_runs

    figs = throughput_vs_instances(load_runs([run_dir]))
    assert len(figs) == 4  # 2 precisions x 2 batches, each at 1 and 2 instances
    for fig in figs:
        (s,) = fig.series
        if not s.line_x or s.line_x[0] != 1.0:
            continue  # the 1-instance row was invalid: no reference from it (stated by the hollow marker)
        (ref,) = fig.references
        t1 = s.line_y[0]
        assert ref.line_x == [1.0, 2.0] and ref.line_y == pytest.approx([t1, 2 * t1])


def test_power_timeline_shades_the_rows_window_and_no_power_means_no_timeline(powered_run):
    from edgebench.report.plots import power_timeline
    from edgebench.results.runs import load_runs

    (run,) = load_runs([powered_run])
    row = next(r for r in run.rows if r["row_index"] in (1, 3, 5) and r["instances"] == 2)
    fig = power_timeline(run, row)
    assert fig.absent_reason is None
    ((x0, x1, label),) = fig.spans
    assert "window" in label
    assert x1 - x0 == pytest.approx(float(row["window_s"]), abs=1e-6)  # the overlap window the row's numbers use
    power = next(s for s in fig.series if s.label == "host power_total")
    assert power.panel == 0 and fig.y_labels == ["power (W)", "utilization (%)"]
    assert power.line_y[:2] == [5.0, 5.001]  # mW as W
    util = next(s for s in fig.series if s.label == "host cpu_util")
    assert util.panel == 1 and util.line_y and all(0 <= v <= 100 for v in util.line_y)
    # a row without a power channel: no figure of a CPU line alone, the reason says so
    bare = power_timeline(run, next(r for r in run.rows if r["row_index"] == 0))
    assert bare.absent_reason is not None and "row 0: no power channel in telemetry_host.csv" in bare.absent_reason


def test_report_cli_writes_every_figure_and_table_and_links_them(powered_run, tmp_path):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install 'edgebench[report]')")
    out = tmp_path / "rep"
    assert main(["report", str(powered_run), "--out", str(out), "--max-timelines", "2"]) == 0
    summary = (out / "summary.md").read_text()
    html = (out / "summary.html").read_text()
    figures = sorted((out / "figures").iterdir())
    tables = sorted((out / "tables").iterdir())
    # pareto too: no row has energy, so the front is over throughput and latency
    assert {p.name for p in tables} == {f"{t}.{e}" for t in ("results", "repeats", "speedup", "scaling", "pareto")
                                        for e in ("csv", "md", "tex")}
    pngs = [p for p in figures if p.suffix == ".png"]
    stems = sorted({p.stem.rsplit("_", 1)[0] for p in pngs})
    # 2 throughput-vs-batch, 2 latency, 4 scaling, 2 timelines (rows 1 and 3: power, capped at 2); no energy (null
    # backend, host sampler); no timeline of the rows without power; each at single- and double-column width
    assert len(stems) == 10, stems
    assert [s for s in stems if s.startswith("power_timeline")] == ["power_timeline_row0001", "power_timeline_row0003"]
    assert sorted(p.name for p in pngs) == sorted(f"{s}_{w}.png" for s in stems for w in ("single", "double"))
    for path in figures + tables:
        assert path.stat().st_size > 0
        rel = path.relative_to(out).as_posix()
        assert rel in summary and rel in html, rel
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / "figures" / f"{png.stem}.pdf").read_bytes()[:5] == b"%PDF-"
    assert "row 5: not drawn (--max-timelines 2)" in summary
    assert "No power timeline for 5 row(s) (row 0, 2, 4, 6, 7): their telemetry holds no power channel" in summary
    assert "Energy per inference: not drawn" in summary and "energy_source" in summary


def test_missing_telemetry_is_stated_not_a_crash(run_dir, tmp_path):
    from edgebench.report.summary import build_report

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    with open(copy / "results.csv", newline="") as fh:
        first, second = list(csv.DictReader(fh))[:2]
    set_power(copy, second, True)  # the next row has power: its timeline is drawn
    for tel in (copy / first["artifact_dir"]).glob("telemetry_*.csv"):
        tel.unlink()
    rep = build_report([copy], tmp_path / "rep", max_timelines=1, formats=("png",))
    fig = next(f for f in rep.figures if f.name == f"power_timeline_row{int(first['row_index']):04d}")
    assert fig.absent_reason is not None and "no telemetry_*.csv" in fig.absent_reason and not fig.files
    assert fig.absent_reason in (tmp_path / "rep" / "summary.md").read_text()
    # the next row still gets its timeline (matplotlib present) or the summary says why none was drawn
    assert any(f.files for f in rep.figures if f.name == f"power_timeline_row{int(second['row_index']):04d}") \
        or rep.figures_note


def test_window_comes_from_latencies_not_the_measure_phase(run_dir):
    """The shaded span must be [latest instance start, earliest instance end] of latencies.npz."""
    from edgebench.report.timeline_plots import _overlap_window

    with open(run_dir / "results.csv", newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["instances"] == "2")
    with np.load(run_dir / row["artifact_dir"] / "latencies.npz", allow_pickle=False) as lat:
        instance, start, end = lat["instance"], lat["start_ns"], lat["end_ns"]
    assert set(instance.tolist()) == {0, 1}
    w0 = max(int(start[instance == i].min()) for i in (0, 1))
    w1 = min(int(end[instance == i].max()) for i in (0, 1))
    assert _overlap_window(run_dir / row["artifact_dir"]) == (w0, w1)
    assert (w1 - w0) / 1e9 == pytest.approx(float(row["window_s"]), abs=1e-9)
