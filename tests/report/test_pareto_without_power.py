"""The Pareto front on a machine with no power sampler (a CPU host without RAPL): over throughput and latency,
said so in the notes, the table and the figure; with neither energy nor a latency percentile, no front."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from test_report_tables import make_run, row

from edgebench.answer.candidates import Candidate, LeftOut, load_sources
from edgebench.answer.intervals import median_ci
from edgebench.answer.pareto import (
    ENERGY,
    NO_POWER,
    THROUGHPUT,
    ParetoFront,
    ParetoPoint,
    mark_front,
    pareto_fronts,
)
from edgebench.report.pareto import front_slug, pareto_table

NO_RAPL = "none: RAPL not available: /sys/class/powercap does not exist (no powercap driver, or not exposed here)"
# (precision, batch, instances) -> (throughput per repeat, p90 ms per repeat); medians in the comments
CPU_GRID = {
    ("fp32", 1, 1): ((89.0, 91.0), (10.0, 12.0)),  # 90, 11: the quickest: on the front
    ("fp32", 4, 1): ((96.0, 96.0), (42.0, 44.0)),  # 96, 43: on the front
    ("int8", 4, 2): ((99.0, 101.0), (81.0, 83.0)),  # 100, 82: the fastest: on the front
    ("fp32", 4, 2): ((93.0, 95.0), (86.0, 88.0)),  # 94, 87: int8 b4 x2 is better in both
    ("int8", 1, 2): ((96.0, 96.0), (49.0, 51.0)),  # 96, 50: as fast as fp32 b4 x1, only its latency is worse
    ("int8", 1, 1): ((67.0, 69.0), (14.0, 16.0)),  # 68, 15: fp32 b1 x1 is better in both
}
ON_FRONT = {"ort fp32 b1 cpu", "ort fp32 b4 cpu", "ort int8 b4 2x cpu"}


def _cpu_rows(model: str = "my_net", start: int = 0, p90: bool = True) -> list[dict]:
    rows, i = [], start
    for (prec, batch, instances), (tputs, lats) in CPU_GRID.items():
        for rep, (tput, lat) in enumerate(zip(tputs, lats)):
            rows.append(row(i, prec, batch, tput, instances=instances, model=model, repeat=rep,
                            config_hash=f"{model}{prec}{batch}{instances}{rep}", latency_ms_p99=None,
                            latency_ms_p90=lat if p90 else None, **({} if p90 else {"latency_ms_p50": None}),
                            power_w_mean=None, energy_source=NO_RAPL,
                            empty_reasons="latency_ms_p99: 553 inferences in the window, p99 needs 662"))
            i += 1
    return rows


def test_without_power_the_front_is_over_throughput_and_latency(tmp_path: Path):
    left_out = LeftOut()
    (front,) = pareto_fronts(load_sources([make_run(tmp_path / "cpu", _cpu_rows())]), left_out)
    assert left_out.total() == 0  # no row is left out for its empty energy
    assert front.objectives == [(THROUGHPUT, True), ("latency_ms_p90", False)]
    assert front.latency_column == "latency_ms_p90" and not front.has_energy
    assert len(front.points) == 6 and all(p.energy is None for p in front.points)
    assert {p.candidate.label() for p in front.points if p.on_front} == ON_FRONT
    dominated_in_latency_only = next(p for p in front.points if p.candidate.label() == "ort int8 b1 2x cpu")
    assert dominated_in_latency_only.throughput.median == 96.0 and not dominated_in_latency_only.on_front
    no_power = next(n for n in front.notes if n.startswith(NO_POWER))
    assert "(p90)" in no_power and "RAPL not available" in no_power
    assert any("latency is latency_ms_p90: not every configuration has a p99" in n for n in front.notes)


def test_mark_front_follows_the_objectives_it_is_given():
    def pt(tput: float, energy: float | None, lat: float) -> ParetoPoint:
        return ParetoPoint(Candidate({"model": "m"}, "s"), median_ci([tput]),
                           None if energy is None else median_ci([energy]), median_ci([lat]))

    pts = [pt(10.0, 5.0, 1.0), pt(10.0, 4.0, 2.0), pt(12.0, 4.0, 3.0)]
    mark_front(pts, [(THROUGHPUT, True), (ENERGY, False), ("latency_ms_p99", False)])
    assert [p.on_front for p in pts] == [True, True, True]  # each is best in one: latency, energy+latency, throughput
    mark_front(pts, [(THROUGHPUT, True), ("latency_ms_p99", False)])
    assert [p.on_front for p in pts] == [True, False, True]  # the 2nd: as fast as the 1st, only slower per batch
    mark_front(pts, [(THROUGHPUT, True), (ENERGY, False)])
    assert [p.on_front for p in pts] == [False, False, True]  # energy and throughput: the 3rd dominates both
    mark_front(pts, [(THROUGHPUT, True)])
    assert [p.on_front for p in pts] == [False, False, False]  # throughput alone is not a front
    no_energy = [pt(10.0, None, 1.0), pt(12.0, 4.0, 1.0)]  # a missing value never dominates
    mark_front(no_energy, [(THROUGHPUT, True), (ENERGY, False)])
    assert [p.on_front for p in no_energy] == [False, True]


def test_energy_where_some_rows_have_it_and_a_2d_front_for_the_model_without(tmp_path: Path):
    powered = [row(100 + i, prec, batch, tput, model="powered", repeat=0, config_hash=f"p{i}", energy=mj,
                   power_w_mean=None if mj is None else 5.0, power_scope="cpu-package", energy_source=src)
               for i, (prec, batch, tput, mj, src) in enumerate(
                   [("fp32", 1, 100.0, 50.0, "rapl"), ("int8", 1, 150.0, 40.0, "rapl"),
                    ("int8", 4, 500.0, None, NO_RAPL)])]
    left_out = LeftOut()
    fronts = pareto_fronts(load_sources([make_run(tmp_path / "mixed", _cpu_rows() + powered)]), left_out)
    by_model = {f.model: f for f in fronts}
    assert by_model["powered"].objectives == [(THROUGHPUT, True), (ENERGY, False), ("latency_ms_p99", False)]
    assert [p.candidate.label() for p in by_model["powered"].points] == ["ort fp32 b1 cpu", "ort int8 b1 cpu"]
    (line,) = left_out.lines()  # the powered model's row without energy, and no row of my_net
    assert line.startswith("1 row(s): energy_per_inference_mj empty: RAPL not available: /sys/class/powercap")
    assert by_model["my_net"].objectives == [(THROUGHPUT, True), ("latency_ms_p90", False)]
    table = pareto_table(fronts)
    assert table.title == "Pareto front: throughput vs energy per inference (where measured) vs latency"
    energy_by_model = {r["configuration"]: r["energy_per_inference_mj"] for r in table.records
                       if r["model"] == "powered"}
    assert energy_by_model == {"ort int8 b1 cpu": 40.0}  # fp32 b1 is dominated
    assert all(r["energy_per_inference_mj"] is None for r in table.records if r["model"] == "my_net")


def test_table_leaves_energy_empty_and_says_why(tmp_path: Path):
    fronts = pareto_fronts(load_sources([make_run(tmp_path / "cpu", _cpu_rows())]))
    table = pareto_table(fronts)
    assert table.title == "Pareto front: throughput vs latency"
    assert [r["configuration"] for r in table.records] == [  # by throughput, highest first
        "ort int8 b4 2x cpu", "ort fp32 b4 cpu", "ort fp32 b1 cpu"]
    first = table.records[0]
    assert first["energy_per_inference_mj"] is None and first["energy_ci"] == ""
    assert first["latency_column"] == "p90" and first["latency_ms"] == 82.0 and first["latency_ci"] == "[81, 83] 50%"
    assert any(n.startswith("energy cells are empty where no power was measured") for n in table.notes)
    assert any(n.startswith(NO_POWER) for n in table.notes)
    files = table.write(tmp_path / "tables")
    with open(next(f for f in files if f.suffix == ".csv"), newline="") as fh:
        written = list(csv.DictReader(fh))
    assert written[0]["energy_per_inference_mj"] == ""
    assert written[0]["front_over"] == "throughput_ips up, latency_ms_p90 down"


def test_figure_plots_throughput_vs_latency_without_power(tmp_path: Path):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install 'edgebench[report]')")
    from matplotlib.image import imread

    from edgebench.report.pareto import draw_front

    (front,) = pareto_fronts(load_sources([make_run(tmp_path / "cpu", _cpu_rows())]))
    files, lines = draw_front(front, tmp_path / "paper", ("png",), "single")
    assert [f.name for f in files] == [f"{front_slug(front)}_single.png"] and imread(files[0]).shape[1] == round(3.5 * 300)
    assert lines[0] == f"Pareto front of my_net on {front.setup}: throughput vs p90 latency (no power measured)"
    assert lines[1].startswith("3 of 6 configurations on the front")
    assert "no power measured: y is p90 latency per batch" in lines[2]
    assert not any("power_scope" in line for line in lines)  # no power: no scope line
    caption = (tmp_path / "paper" / f"{front_slug(front)}_single.caption.txt").read_text()
    assert caption.startswith("Pareto front of my_net") and NO_POWER in caption


def test_neither_energy_nor_latency_is_no_front_and_says_so(tmp_path: Path):
    from edgebench.report.answer_page import answer_blocks, draw_fronts

    runs = load_sources([make_run(tmp_path / "bare", _cpu_rows(p90=False))])
    (front,) = pareto_fronts(runs)
    assert front.objectives == [] and front.latency_column is None and front.members() == []
    assert any("throughput alone is not a front" in n for n in front.notes)
    assert pareto_table([front]).records == []
    assert draw_fronts([front], tmp_path / "paper", ("png",)) == []
    blocks = answer_blocks(runs, [front], [], lambda p: str(p))
    text = [b for b in blocks if b[0] == "p" and str(b[1][0]).startswith("No front")]
    assert len(text) == 1 and "throughput alone is not a front" in text[0][1][0]


def test_report_of_a_run_without_power_has_a_front_table_and_figure(tmp_path: Path):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (pip install 'edgebench[report]')")
    from edgebench.report.summary import build_report

    rep = build_report([make_run(tmp_path / "cpu", _cpu_rows())], tmp_path / "rep", max_timelines=0,
                       formats=("png",))
    (front,) = rep.fronts
    assert isinstance(front, ParetoFront) and len(front.members()) == 3
    assert (tmp_path / "rep" / "tables" / "pareto.csv").is_file()
    assert (tmp_path / "rep" / "paper" / f"{front_slug(front)}_single.png").is_file()
    summary = rep.summary_md.read_text()
    assert "Pareto front: throughput vs latency" in summary and "No front" not in summary
    # the answer's and the front's intervals say what they cover (2 repeats each: 50%), never "95% CI"
    assert "median [interval] (coverage)" in summary and "95% CI" not in summary and "(50% interval)" in summary
    assert "| interval (coverage) |" in summary and "[81, 83] 50%" in summary
