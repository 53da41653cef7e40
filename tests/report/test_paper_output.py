"""What a paper takes from a report: the Pareto front, figures with intervals at column width with >= 7 pt
text and captions beside them, tables without the old bugs, and the column dictionary."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from test_report_tables import make_run, row

from edgebench.answer.candidates import load_sources
from edgebench.answer.pareto import ENERGY, THROUGHPUT, ParetoPoint, dominates, mark_front, pareto_fronts
from edgebench.report.pareto import pareto_table
from edgebench.results.runs import load_runs


def _grid(tmp_path: Path) -> Path:
    """fp32/int8 x b1/b4, 2 repeats; int8 is faster, more frugal and quicker than fp32 at each batch; b1 has the
    lower latency, b4 the higher throughput."""
    rows, i = [], 0
    spec = {("fp32", 1): (100.0, 50.0), ("fp32", 4): (300.0, 30.0), ("int8", 1): (150.0, 40.0),
            ("int8", 4): (500.0, 10.0)}
    for rep in range(2):
        for (prec, batch), (tput, mj) in spec.items():
            rows.append(row(i, prec, batch, tput + rep, repeat=rep, config_hash=f"{prec}{batch}{rep}",
                            energy=mj + rep, power_w_mean=5.0, power_scope="cpu-package",
                            latency_ms_p99=float(batch) - (0.5 if prec == "int8" else 0.0)))
            i += 1
    return make_run(tmp_path / "grid", rows)


def test_dominance_needs_better_in_one_and_no_worse_in_any():
    assert dominates((-10.0, 5.0, 1.0), (-9.0, 5.0, 1.0))
    assert not dominates((-10.0, 5.0, 1.0), (-10.0, 5.0, 1.0))  # equal: neither dominates
    assert not dominates((-10.0, 5.0, 2.0), (-9.0, 6.0, 1.0))  # worse latency


def test_front_keeps_the_trade_offs_and_drops_the_dominated(tmp_path: Path):
    (front,) = pareto_fronts(load_sources([_grid(tmp_path)]))
    assert front.latency_column == "latency_ms_p99"
    on = {p.candidate.label() for p in front.points if p.on_front}
    # int8 dominates fp32 at the same batch; int8 b1 (p99 0.5 ms) and int8 b4 (500 samples/s) trade off
    assert on == {"ort int8 b4 cpu", "ort int8 b1 cpu"}
    table = pareto_table([front])
    assert [r["configuration"] for r in table.records][0] == "ort int8 b4 cpu"  # by throughput
    best = table.records[0]
    # [min, max] of 2 repeats: it holds the median 50% of the time, and the cell says so
    assert best["throughput_ips"] == 500.5 and best["throughput_ci"] == "[500, 501] 50%" and best["repeats"] == 2


def test_front_of_points_without_latency_is_two_dimensional():
    from edgebench.answer.candidates import Candidate
    from edgebench.answer.intervals import median_ci

    pts = [ParetoPoint(Candidate({"model": "m"}, "s"), median_ci([t]), median_ci([e]), None)
           for t, e in ((10.0, 5.0), (20.0, 4.0), (15.0, 6.0))]
    mark_front(pts, [(THROUGHPUT, True), (ENERGY, False)])
    assert [p.on_front for p in pts] == [False, True, False]


def test_paper_figures_are_column_wide_with_7pt_text_and_captions_beside(tmp_path: Path):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install 'edgebench[report]')")
    from edgebench.report import paper_style
    from edgebench.report.paper_figures import paper_figures
    from edgebench.report.pareto import draw_front

    runs = load_sources([_grid(tmp_path)])
    figs = paper_figures(runs, tmp_path / "paper", ("png",))
    drawn = {f.stem.split("_ort")[0].removesuffix("_my_net"): f for f in figs if f.absent_reason is None}
    assert set(drawn) == {"throughput_vs_batch", "energy_vs_batch", "latency_p50_vs_batch", "speedup_vs_batch"}
    cdf = next(f for f in figs if f.stem.startswith("latency_cdf"))
    assert cdf.absent_reason is not None and "latencies.npz" in cdf.absent_reason  # no per-row files here
    from matplotlib.image import imread

    single = imread(drawn["speedup_vs_batch"].png("single"))
    double = imread(drawn["speedup_vs_batch"].png("double"))
    assert single.shape[1] == round(3.5 * 300) and double.shape[1] == round(7.16 * 300)  # print widths at 300 dpi
    caption = (tmp_path / "paper" / f"{drawn['speedup_vs_batch'].stem}.caption.txt").read_text()
    assert caption.startswith("Speedup over fp32 vs batch") and "95% interval" not in caption
    # 2 repeats a side, [min, max] each (50%): the ratio's interval holds the true ratio >= 50% * 50% of the time
    assert "coverage >= 25%" in caption and "lower bound" in caption
    tput = (tmp_path / "paper" / f"{drawn['throughput_vs_batch'].stem}.caption.txt").read_text()
    assert "bars: interval of the median, coverage 50% (" in tput and "repeats per point: 2" in tput
    tex = (tmp_path / "paper" / f"{drawn['speedup_vs_batch'].stem}.caption.tex").read_text()
    assert tex.startswith(r"\caption{Speedup over fp32") and r"\label{fig:speedup-vs-batch" in tex

    # the smallest text of a drawn figure is >= 7 pt, and its title is not in the figure (the caption has it)
    (front,) = pareto_fronts(runs)
    with paper_style.style():
        fig, ax = paper_style.new_figure("single")
        ax.plot([1, 2], [1, 2], label="fp32")
        ax.legend()
        ax.set_xlabel("x")
        assert paper_style.smallest_font_pt(fig) >= paper_style.MIN_FONT_PT
    files, lines = draw_front(front, tmp_path / "paper", ("png",), "single")
    assert lines[0].startswith("Pareto front of my_net") and "2 of 4 configurations on the front" in lines[1]
    assert imread(files[0]).shape[1] == round(3.5 * 300)
    assert any(line.startswith("bars: interval of the median over repeats, coverage 50% (") for line in lines)


def test_same_precision_same_colour_everywhere():
    from edgebench.report.figure import FigureData, Series
    from edgebench.report.paper_style import precision_color
    from edgebench.report.render import _colors

    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_hex

    fig = FigureData("f", "t", "x", ["y"], series=[Series("a", color_key="int8"), Series("b", color_key="fp16")])
    colors = _colors(fig)
    assert to_hex(colors["int8"]) == precision_color("int8") and to_hex(colors["fp16"]) == precision_color("fp16")


def test_tables_show_row_zero_whole_notes_no_one_repeat_range_and_no_self_baseline(tmp_path: Path):
    from edgebench.report.repeats_table import repeats_table
    from edgebench.report.tables import results_table, scaling_table, speedup_table

    long_reason = "throughput unstable across 5 sub-windows: 30% from the mean; " + "x" * 80 + " END"
    rows = [row(0, "fp32", 1, 100.0, repeat=0, config_hash="a"),
            row(1, "fp32", 1, 110.0, "invalid", long_reason, repeat=1, config_hash="b"),
            row(2, "int8", 1, 165.0, repeat=0, config_hash="c"),
            # 1 instance invalid, 2 instances ok: no baseline, so no efficiency (not 100% of itself)
            row(3, "fp16", 1, 90.0, "invalid", "unstable", repeat=0, config_hash="d"),
            row(4, "fp16", 1, 170.0, instances=2, repeat=0, config_hash="e")]
    runs = load_runs([make_run(tmp_path / "r", rows)])
    md = results_table(runs).to_markdown()
    assert "| 0 | my_net |" in md  # row 0's index is a value, not a blank
    note = next(r["note"] for r in repeats_table(runs).records if r["precision"] == "fp32")
    assert note.endswith("END)")  # the reason is not cut
    sp = {r["precision"]: r for r in speedup_table(runs).records if r["instances"] == 1}
    assert sp["int8"]["speedup_vs_fp32"] == pytest.approx(1.65) and sp["int8"]["speedup_range"] == ""
    sc = [r for r in scaling_table(runs).records if r["precision"] == "fp16"]
    assert [(r["instances"], r["scaling_efficiency_pct"]) for r in sc] == [(1, None), (2, None)]


def test_latex_wide_tables_are_split_with_lead_columns_and_labels_are_unique(tmp_path: Path):
    from edgebench.report.table_format import MAX_LATEX_COLUMNS
    from edgebench.report.tables import results_table

    runs = load_runs([make_run(tmp_path / "r", [row(0, "fp32", 1, 100.0)])])
    table = results_table(runs)
    table.label = "run-a"
    tex = table.to_latex()
    heads = [ln for ln in tex.splitlines() if ln.startswith("Row & Model")]
    assert len(heads) >= 2 and all(h.count("&") + 1 <= MAX_LATEX_COLUMNS for h in heads)
    assert r"\label{tab:results-run-a}" in tex


def test_column_dictionary_counts_per_sample_and_per_batch_and_ships_with_runs(tmp_path: Path):
    from edgebench.results.column_dictionary import PER_BATCH, PER_SAMPLE, entries, to_csv
    from edgebench.results.rundir import create_run_dir
    from edgebench.results.schema import COLUMN_NAMES

    per = {e.name: e.counts_per for e in entries()}
    assert [e.name for e in entries()] == list(COLUMN_NAMES)
    assert per["throughput_ips"] == PER_SAMPLE and per["energy_per_inference_mj"] == PER_SAMPLE
    assert per["inferences"] == PER_BATCH and per["latency_ms_p99"] == PER_BATCH and per["status"] == ""
    read = list(csv.DictReader(io.StringIO(to_csv())))
    assert read[0]["name"] == "model" and read[0]["required"] == "yes"
    run_dir = create_run_dir(tmp_path / "runs", "x")
    assert sorted(p.name for p in run_dir.iterdir()) == ["columns.csv", "columns.md"]
    assert "| **latency_ms_p99** | ms | float | per batch (one inference) |" in (run_dir / "columns.md").read_text()


def test_old_figures_only_invalid_is_not_drawn_legend_names_what_is_drawn_title_goes_to_the_caption(tmp_path):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install 'edgebench[report]')")
    from edgebench.report.figure import FigureData, Point, Series
    from edgebench.report.render import render, series_drawn
    from edgebench.report.summary import build_report

    bad = [row(0, "fp32", 1, 100.0, "invalid", "unstable", config_hash="a"),
           row(1, "fp32", 4, 300.0, "invalid", "unstable", config_hash="b")]
    rep = build_report([make_run(tmp_path / "bad", bad)], tmp_path / "rep", max_timelines=0, formats=("png",))
    tput = [f for f in rep.figures if f.name.startswith("throughput_vs_batch")]
    assert tput and all(f.absent_reason and "every point is invalid" in f.absent_reason and not f.files for f in tput)

    fig = FigureData("f", "My title", "batch", ["y"], series=[
        Series("fp32", [Point(1.0, 2.0, "ok")], [1.0], [2.0], color_key="fp32"),
        Series("int8", [], color_key="int8")])  # nothing drawn for int8
    files = render(fig, tmp_path / "figs", ("png",))
    assert [f.name for f in files] == ["f_single.png", "f_double.png"]
    assert (tmp_path / "figs" / "f.caption.txt").read_text().startswith("My title")
    assert [series_drawn(x) for x in fig.series] == [True, False]  # the legend names only drawn series
