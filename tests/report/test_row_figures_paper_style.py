"""The row figures (throughput / latency / energy vs batch or instances, scaling, load, power timelines) drawn as
paper figures: single- and double-column width, text >= 7 pt at print size, the colour of a precision the same
as in the paper figures, repeats as a median with its interval and the coverage that interval really has in the
caption, the title in the caption, not the figure."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_report_tables import make_run, row

from edgebench.answer.intervals import median_ci
from edgebench.report.batch_plots import throughput_vs_batch
from edgebench.report.figure import FigureData, Point, Series, coverage_words, series_from_rows
from edgebench.report.scaling_plots import throughput_vs_instances
from edgebench.results.runs import load_runs


def _repeats(tmp_path: Path) -> Path:
    """fp32 and int8 at b1/b4, 3 repeats each; one int8 b4 repeat invalid, one fp32 b4 failed."""
    rows, i = [], 0
    for rep, jitter in enumerate((0.0, 4.0, -3.0)):
        for prec, batch, tput in (("fp32", 1, 100.0), ("fp32", 4, 300.0), ("int8", 1, 150.0), ("int8", 4, 500.0)):
            status = "ok"
            if (prec, batch, rep) == ("int8", 4, 2):
                status = "invalid"
            if (prec, batch, rep) == ("fp32", 4, 1):
                status = "failed"
            rows.append(row(i, prec, batch, None if status == "failed" else tput + jitter, status,
                            "" if status == "ok" else "why", repeat=rep, config_hash=f"{prec}{batch}{rep}"))
            i += 1
    return make_run(tmp_path / "rep", rows)


def test_a_series_carries_the_median_of_ok_repeats_and_its_interval(tmp_path):
    (run,) = load_runs([_repeats(tmp_path)])
    fp32 = [r for r in run.rows if r["precision"] == "fp32"]
    s, empty = series_from_rows("fp32", fp32, "batch", "throughput_ips")
    assert empty == 0 and s.line_x == [1.0, 4.0]
    assert s.line_y == [100.0, 298.5]  # b4: the failed repeat has no value, the median of the two ok ones
    b1 = median_ci([100.0, 104.0, 97.0])
    assert (s.line_lo[0], s.line_hi[0], s.line_n[0]) == (b1.lo, b1.hi, 3) and (b1.lo, b1.hi) == (97.0, 104.0)
    assert s.line_n == [3, 2] and s.line_coverage == [0.75, 0.5]  # [min, max] of 3 and of 2 repeats
    int8 = [r for r in run.rows if r["precision"] == "int8"]
    s8, _ = series_from_rows("int8", int8, "batch", "throughput_ips")
    assert s8.line_y[1] == 502.0 and s8.line_n[1] == 2  # the invalid repeat (497) is not in the median
    assert [p.status for p in s8.points if p.x == 4.0].count("invalid") == 1  # but is drawn, hollow


def test_a_figure_caption_says_the_coverage_range_of_its_bars():
    # the least and the most coverage of the bars drawn; a ratio's (a lower bound) with '>='
    assert coverage_words([0.75, 0.75, None]) == "coverage 75%"
    assert coverage_words([0.5, 0.75, 0.96875]) == "coverage 50-96.9%"
    assert coverage_words([0.5625], lower_bound=True) == "coverage >= 56.2%"
    assert coverage_words([None]) == ""


def test_row_figures_are_drawn_at_both_column_widths_with_7pt_text_and_intervals(tmp_path):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install 'edgebench[report]')")
    from matplotlib.image import imread

    from edgebench.report import paper_style
    from edgebench.report.render import _draw, interval_note, render

    runs = load_runs([_repeats(tmp_path)])
    (fig,) = throughput_vs_batch(runs)
    files = render(fig, tmp_path / "figs", ("png", "pdf"))
    assert [f.name for f in files] == [f"{fig.name}_{w}.{e}" for w in ("single", "double") for e in ("png", "pdf")]
    assert imread(files[0]).shape[1] == round(3.5 * 300) and imread(files[2]).shape[1] == round(7.16 * 300)
    caption = (tmp_path / "figs" / f"{fig.name}.caption.txt").read_text()
    assert caption.startswith(fig.title) and interval_note(fig) in caption  # bars are said in the caption
    # 3 ok repeats at b1 (75%), 2 at fp32 b4 and int8 b4 (50%): the bars' real coverage, no "95%" claimed
    assert "bars: the interval of that median, coverage 50-75% (" in caption and "95% interval" not in caption
    assert (tmp_path / "figs" / f"{fig.name}.caption.tex").read_text().startswith(r"\caption{")
    for width in ("single", "double"):
        with paper_style.style():
            drawn = _draw(fig, width)
            assert paper_style.smallest_font_pt(drawn) >= paper_style.MIN_FONT_PT
            texts = [t.get_text() for t in drawn.findobj(lambda o: hasattr(o, "get_text"))]
            assert fig.title not in texts  # the title is the caption's, not drawn
            (legend,) = drawn.legends
            labels = [t.get_text() for t in legend.get_texts()]
            # one entry per precision, and the non-ok rows this figure draws; no entry for ok (the default)
            assert labels == ["fp32", "int8", "invalid row (hollow)", "failed row (no value)"]
            bars = [c for c in drawn.axes[0].containers if c.has_yerr]
            assert len(bars) == 2  # one errorbar container per precision: medians with their intervals


def test_the_colour_of_a_precision_is_the_paper_figures_colour_in_scaling_and_batch_figures(tmp_path):
    from edgebench.report.paper_style import precision_color
    from edgebench.report.render import _colors

    rows = [row(0, "int8", 1, 100.0, instances=1), row(1, "int8", 1, 180.0, instances=2),
            row(2, "fp16", 1, 90.0, instances=1), row(3, "fp16", 1, 150.0, instances=2)]
    runs = load_runs([make_run(tmp_path / "sc", rows)])
    figs = throughput_vs_instances(runs)
    assert len(figs) == 2
    for fig in figs:
        (s,) = fig.series
        prec = "int8" if "int8" in fig.name else "fp16"
        assert s.color_key == prec and _colors(fig)[prec] == precision_color(prec)
        (ref,) = fig.references
        assert _colors(fig)[ref.color_key] not in {precision_color(p) for p in ("fp32", "fp16", "int8")}


def test_a_series_of_only_invalid_points_has_a_hollow_legend_entry_without_a_line(tmp_path):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install 'edgebench[report]')")
    from edgebench.report import paper_style
    from edgebench.report.render import _draw

    fig = FigureData("f", "t", "batch", ["y"], series=[
        Series("fp32", [Point(1.0, 2.0, "ok"), Point(2.0, 3.0, "ok")], [1.0, 2.0], [2.0, 3.0], color_key="fp32"),
        Series("int8", [Point(1.0, 4.0, "invalid")], color_key="int8")])
    with paper_style.style():
        drawn = _draw(fig, "single")
    (legend,) = drawn.legends
    handles = dict(zip([t.get_text() for t in legend.get_texts()], legend.legend_handles))
    assert handles["fp32"].get_linestyle() == "-"
    assert handles["int8"].get_linestyle() == "None" and handles["int8"].get_markerfacecolor() == "none"
