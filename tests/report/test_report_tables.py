"""Report tables, status handling, cross-run comparison and the power timeline on hand-made run folders.

results.csv is written with the real ResultsStore; the status mix (ok / invalid / failed / skipped), two
boards and a power timeline with known values are made by hand so every expected number is known.
"""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from edgebench.results.store import ResultsStore

UNSTABLE = "throughput unstable across 5 sub-windows: 28% from the mean"
DIED = "instance 1 (pid 4242, cpu) died in measure: exit code 3"
SKIP = "CPUExecutionProvider computes float16 graphs in float32"


def row(i: int, precision: str, batch: int, tput: float | None, status: str = "ok", reason: str = "",
        instances: int = 1, energy: float | None = None, model: str = "my_net", **extra) -> dict:
    placement = "+".join(["cpu"] * instances)
    out = {"model": model, "backend": "ort", "precision": precision, "batch": batch, "instances": instances,
           "mode": "process", "placement": placement, "throughput_ips": tput, "status": status, "reason": reason,
           "row_index": i, "config_hash": f"h{i}", "energy_per_inference_mj": energy,
           "latency_ms_p50": None if tput is None else 1000.0 * batch / tput,
           "latency_ms_p99": None if tput is None else 2000.0 * batch / tput}
    out.update(extra)
    return out


def make_run(path: Path, rows: list[dict], board: str | None = "Test Board A", profile: str = "board") -> Path:
    store = ResultsStore(path)
    for r in rows:
        store.append(r)
    if board is not None:
        (path / "system.json").write_text(json.dumps({
            "board": {"model": board}, "cpu": {"model": "Cortex-A78AE", "usable_cores": 12},
            "packages": {"onnxruntime": "1.17.0", "tensorrt": None}, "edgebench_version": "0.1.0",
            "git": {"commit": "abc123def4567890", "dirty": True}, "python": {"version": "3.10.12"}}))
        (path / "profile.yaml").write_text(f"name: {profile}\n")
    return path


MIX = [row(0, "fp32", 1, 100.0), row(1, "fp32", 4, 300.0, "invalid", UNSTABLE), row(2, "fp32", 8, None, "failed", DIED),
       row(3, "fp16", 1, None, "skipped", SKIP), row(4, "fp16", 4, 450.0), row(5, "fp32", 1, 110.0)]


@pytest.fixture
def mix_run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "mix", MIX)


def test_latex_escape_covers_every_special_character():
    from edgebench.report.tables import latex_escape

    assert latex_escape("a_b%c&d#e$f{g}h~i^j\\>=662") == (
        r"a\_b\%c\&d\#e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}\textgreater{}=662")


def test_results_table_latex_has_booktabs_units_escapes_and_reason_notes(mix_run):
    from edgebench.report.tables import results_table
    from edgebench.results.runs import load_runs

    table = results_table(load_runs([mix_run]))
    tex = table.to_latex()
    parts = tex.count(r"\begin{tabular}")  # a wide table is split into tabulars that fit a column
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert tex.count(rule) == parts
    assert r"my\_net" in tex and "my_net" not in tex.replace(r"my\_net", "")
    assert "Throughput (img/s)" in tex and "p99 (ms)" in tex and "Energy (mJ/img)" in tex and r"(\%)" in tex
    # the invalid and failed rows stay in, with status and a lettered reason note
    lines = [ln for ln in tex.splitlines() if ln.endswith(r"\\") and "my" in ln]
    assert len(lines) == len(MIX) * parts
    invalid_line = next(ln for ln in lines if r"invalid\textsuperscript{" in ln)
    letter = invalid_line.split(r"invalid\textsuperscript{")[1][0]
    assert f"{letter}: throughput unstable across 5 sub-windows: 28\\% from the mean" in tex
    assert r"failed\textsuperscript{" in tex and "pid 4242" in tex
    failed_line = next(ln for ln in lines if "failed" in ln)
    assert "--" in failed_line  # no throughput: shown as absent, never 0
    md = table.to_markdown()
    assert f"| invalid | {UNSTABLE} |" in md and f"| failed | {DIED} |" in md and "| skipped |" in md


def test_results_csv_table_keeps_full_numbers_and_status(mix_run, tmp_path):
    from edgebench.report.tables import results_table
    from edgebench.results.runs import load_runs

    paths = results_table(load_runs([mix_run])).write(tmp_path / "t")
    assert [p.name for p in paths] == ["results.csv", "results.md", "results.tex"]
    with open(paths[0], newline="") as fh:
        recs = {r["row_index"]: r for r in csv.DictReader(fh)}
    assert recs["1"]["status"] == "invalid" and recs["1"]["reason"] == UNSTABLE
    assert float(recs["1"]["throughput_ips"]) == 300.0
    assert recs["2"]["throughput_ips"] == "" and recs["2"]["status"] == "failed"


def test_invalid_failed_and_skipped_rows_in_the_figure_data(mix_run):
    from edgebench.report.plots import throughput_vs_batch
    from edgebench.results.runs import load_runs

    (fig,) = throughput_vs_batch(load_runs([mix_run]))
    assert fig.counts == {"ok": 3, "invalid": 1, "failed": 1, "skipped": 1}
    assert fig.invalid_points() == [("fp32", 4.0, 300.0)]
    fp32 = next(s for s in fig.series if s.label == "fp32")
    assert [(p.x, p.y, p.status) for p in fp32.points if p.status == "failed"] == [(8.0, None, "failed")]
    assert fig.x_ticks == [1.0, 4.0, 8.0]  # the failed b8 row keeps its place on the axis
    assert fp32.line_x == [1.0] and fp32.line_y == [105.0]  # median of the two ok repeats; invalid not on the line
    fp16 = next(s for s in fig.series if s.label == "fp16")
    assert [(p.x, p.status) for p in fp16.points] == [(4.0, "ok")]  # the skipped b1 row is not a point
    caption = " ".join(fig.caption)
    assert "failed 1" in caption and "invalid 1" in caption and f"skipped (1): {SKIP}" in caption


def test_summary_counts_statuses_and_lists_every_non_ok_reason(mix_run, tmp_path):
    from edgebench.report.summary import build_report

    rep = build_report([mix_run], tmp_path / "rep", max_timelines=0, formats=("png",))
    md = rep.summary_md.read_text()
    # columns ok, skipped, failed, invalid (schema.STATUSES order)
    assert "| board | Test Board A | 0.1.0 (git abc123def456) | 3 | 1 | 1 | 1 |" in md  # written by, statuses
    for reason in (UNSTABLE, DIED, SKIP):
        assert reason in md
    assert "no rows/ folder" in md  # no per-row files: timelines are absent with the reason
    assert "git abc123def456 (dirty)" in md and "onnxruntime 1.17.0" in md
    html = rep.summary_html.read_text()
    assert html.startswith("<!doctype html>") and "tables/results.tex" in html


def test_speedup_and_scaling_tables(tmp_path):
    from edgebench.report.tables import scaling_table, speedup_table
    from edgebench.results.runs import load_runs

    run = make_run(tmp_path / "r", [
        row(0, "fp32", 8, 100.0), row(1, "fp32", 8, 110.0), row(2, "int8", 8, 300.0), row(3, "int8", 8, 50.0, "invalid", UNSTABLE),
        row(4, "fp32", 8, 180.0, instances=2), row(5, "fp32", 8, 200.0, instances=4),
        row(6, "fp32", 8, 999.0, "invalid", UNSTABLE, instances=4)])
    runs = load_runs([run])
    sp = {(r["precision"], r["instances"]): r for r in speedup_table(runs).records}
    assert sp[("int8", 1)]["speedup_vs_fp32"] == pytest.approx(300 / 105)
    assert sp[("int8", 1)]["ok_all"] == "1/2"
    assert sp[("int8", 1)]["speedup_range"] == "2.73..3"
    tex = speedup_table(runs).to_latex()
    assert "Speedup vs fp32 (x)" in tex and "Speedup min" not in tex  # min/max only in the CSV
    sc = {r["instances"]: r for r in scaling_table(runs).records}
    assert sc[1]["scaling_efficiency_pct"] == pytest.approx(100.0)
    assert sc[2]["scaling_efficiency_pct"] == pytest.approx(100 * 180 / 210)
    assert sc[4]["scaling_efficiency_pct"] == pytest.approx(100 * 200 / 420)
    assert sc[4]["ok_all"] == "1/2" and sc[4]["throughput_ips_median"] == 200.0  # the invalid 999 is not used


def test_two_runs_give_a_cross_run_table_with_ratios_to_the_first(tmp_path):
    from edgebench.report.compare import cross_run_table
    from edgebench.results.runs import load_runs

    a = make_run(tmp_path / "a", [row(0, "fp32", 1, 100.0, energy=10.0), row(1, "fp16", 1, 200.0, energy=4.0),
                                  row(2, "int8", 1, 400.0)], board="Jetson AGX Orin", profile="orin-agx")
    b = make_run(tmp_path / "b", [row(0, "fp32", 1, 40.0, energy=5.0), row(1, "fp16", 1, None, "failed", DIED)],
                 board="Jetson Orin Nano", profile="orin-nano")
    runs = load_runs([a, b])
    assert [r.label for r in runs] == ["orin-agx on Jetson AGX Orin", "orin-nano on Jetson Orin Nano"]
    table = cross_run_table(runs)
    recs = {(r["precision"], r["run"]): r for r in table.records}
    nano = recs[("fp32", "orin-nano on Jetson Orin Nano")]
    assert nano["throughput_ratio"] == pytest.approx(0.4) and nano["energy_ratio"] == pytest.approx(0.5)
    assert recs[("fp32", "orin-agx on Jetson AGX Orin")]["throughput_ratio"] == pytest.approx(1.0)
    failed = recs[("fp16", "orin-nano on Jetson Orin Nano")]
    assert failed["ok_all"] == "0/1" and failed["throughput_ratio"] is None
    assert ("int8", "orin-agx on Jetson AGX Orin") not in recs  # measured on one board only
    assert any("1 configuration(s) measured in only one run" in n for n in table.notes)


def test_report_cli_with_two_runs_writes_the_cross_run_table(tmp_path):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install 'edgebench[report]')")
    from edgebench.cli import main

    a = make_run(tmp_path / "a", [row(0, "fp32", 1, 100.0), row(1, "fp32", 4, 300.0)], board="Board A")
    b = make_run(tmp_path / "b", [row(0, "fp32", 1, 150.0), row(1, "fp32", 4, 330.0)], board="Board B")
    assert main(["report", str(a), str(b), "--formats", "png"]) == 0
    out = a / "report"  # default: the first run's report folder
    with open(out / "tables" / "cross_run.csv", newline="") as fh:
        recs = [r for r in csv.DictReader(fh) if r["run"] == "board on Board B"]
    assert sorted(float(r["throughput_ratio"]) for r in recs) == pytest.approx([1.1, 1.5])
    tex = (out / "tables" / "cross_run.tex").read_text()
    assert r"\toprule" in tex and "Throughput / reference (x)" in tex
    from edgebench.report.plots import throughput_vs_batch
    from edgebench.results.runs import load_runs

    (fig,) = throughput_vs_batch(load_runs([a, b]))
    assert {s.label for s in fig.series} == {"fp32 (board on Board A)", "fp32 (board on Board B)"}
    assert (out / "figures" / f"{fig.name}_single.png").stat().st_size > 0


def _power_row_dir(run: Path, artifact: str, t0: int) -> None:
    """A row folder as the sweep writes it, with an NVML-like timeline whose values are known."""
    d = run / artifact
    d.mkdir(parents=True)
    with open(d / "telemetry_nvml.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t_ns", "power_total_mw[mW]", "energy_total_mj[mJ]", "gpu_util_pct[%]", "temperature_c[C]"])
        for k in range(-2, 13):  # every 0.1 s from 0.2 s before release to 1.2 s after
            w.writerow([t0 + k * 100_000_000, 20_000.0 + 1000.0 * k, 5.0 * k, "" if k < 0 else 90.0, 40.0])
    with gzip.open(d / "latencies.csv.gz", "wt", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["instance", "placement", "start_ns", "end_ns"])
        for inst, (first, last) in enumerate([(10, 900), (30, 950)]):  # ms after release
            for ms in range(first, last, 10):
                w.writerow([inst, "gpu", t0 + ms * 1_000_000, t0 + (ms + 10) * 1_000_000])
    (d / "row.json").write_text(json.dumps({"measure_start_ns": t0, "measure_end_ns": t0 + 1_000_000_000,
                                            "telemetry": [{"source": "nvml", "notes": []}]}))


def test_power_timeline_from_hand_made_row_files(tmp_path):
    from edgebench.report.plots import power_timeline, render
    from edgebench.results.runs import load_runs

    t0 = 5_000_000_000_000
    run = make_run(tmp_path / "p", [row(0, "fp16", 8, 500.0, power_w_mean=24.5, artifact_dir="rows/0000-h0"),
                                    row(1, "fp16", 16, 600.0, artifact_dir="rows/0001-h1")])
    _power_row_dir(run, "rows/0000-h0", t0)
    (loaded,) = load_runs([run])
    fig = power_timeline(loaded, loaded.rows[0])
    power = next(s for s in fig.series if s.label == "nvml power_total")
    assert power.panel == 0 and fig.y_labels == ["power (W)", "utilization (%)"]
    assert power.line_x[:3] == pytest.approx([-0.2, -0.1, 0.0]) and power.line_y[:3] == pytest.approx([18.0, 19.0, 20.0])
    util = next(s for s in fig.series if s.label == "nvml gpu_util")
    assert util.panel == 1 and util.line_x[0] == pytest.approx(0.0) and set(util.line_y) == {90.0}
    assert not any("temperature" in s.label or "energy" in s.label for s in fig.series)
    # overlap window: latest first start (30 ms) .. earliest last end (instance 0: 900 ms)
    assert fig.spans == [(pytest.approx(0.030), pytest.approx(0.900), "measured window (instance overlap)")]
    assert [x for x, _ in fig.vlines] == pytest.approx([0.0, 1.0])
    assert "power_w_mean over the window (results.csv): 24.5 W" in fig.caption
    other = power_timeline(loaded, loaded.rows[1])  # its folder was never written
    assert other.absent_reason is not None and "no per-row folder" in other.absent_reason
    if pytest.importorskip("matplotlib", reason="drawing needs matplotlib"):
        files = render(fig, tmp_path / "figs", ("png", "svg"))  # single- and double-column width
        assert [f.name for f in files] == [f"{fig.name}_{w}.{e}" for w in ("single", "double") for e in ("png", "svg")]
        assert all(f.stat().st_size > 1000 for f in files)


def test_without_matplotlib_tables_are_written_and_the_summary_says_why_no_figure(mix_run, tmp_path, monkeypatch):
    import subprocess
    import sys

    import edgebench.report.summary as summary

    monkeypatch.setattr(summary, "matplotlib_missing", lambda: "matplotlib is not installed (simulated)")
    rep = summary.build_report([mix_run], tmp_path / "rep")
    assert not (tmp_path / "rep" / "figures").exists() and rep.figure_files() == []
    # results, repeats, speedup, scaling, and pareto (no energy in MIX: the front is over throughput and latency)
    assert all(p.stat().st_size > 0 for p in rep.table_files) and len(rep.table_files) == 15
    assert "No figure drawn: matplotlib is not installed (simulated)" in rep.summary_md.read_text()
    # and the report modules do not import matplotlib until a figure is drawn
    code = "import sys, edgebench.report.summary, edgebench.report.compare; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_power_modes_are_separate_configurations_not_repeats(tmp_path):
    from edgebench.report.compare import cross_run_records
    from edgebench.report.plots import throughput_vs_batch
    from edgebench.report.tables import speedup_table
    from edgebench.results.runs import load_runs

    rows = [row(0, "fp32", 1, 100.0, power_mode="MAXN"), row(1, "fp16", 1, 200.0, power_mode="MAXN"),
            row(2, "fp32", 1, 40.0, power_mode="15W"), row(3, "fp16", 1, 60.0, power_mode="15W"),
            row(4, "fp16", 4, 300.0, power_mode="MAXN"), row(5, "fp16", 4, 90.0, power_mode="15W")]
    runs = load_runs([make_run(tmp_path / "pm", rows)])
    sp = {(r["power_mode"], r["precision"]): r["speedup_vs_fp32"] for r in speedup_table(runs).records
          if r["batch"] == 1}
    assert sp[("MAXN", "fp16")] == pytest.approx(2.0) and sp[("15W", "fp16")] == pytest.approx(1.5)
    figs = throughput_vs_batch(runs)
    assert sorted(f.name for f in figs) == ["throughput_vs_batch_my_net_ort_n1_process_15W",
                                           "throughput_vs_batch_my_net_ort_n1_process_MAXN"]
    assert cross_run_records(runs) == ([], 6)  # one run: nothing to compare, every config counted as single
