"""Figures fit the axes the run has: a host-profile-shaped run (one batch; models, precisions, instances) gets
no vs-batch figures of one point each, but latency and energy against instances; a run with batches gets
vs-batch figures, and a facet with one batch among them is not drawn."""

from __future__ import annotations

from test_report_tables import make_run, row

from edgebench.report.plots import all_figures, energy_vs_batch, latency_vs_batch, throughput_vs_batch
from edgebench.results.runs import load_runs


def host_like(tmp_path):
    rows = []
    i = 0
    for model in ("mobilenet_v2", "resnet18"):
        for prec in ("fp32", "int8"):
            for n in (1, 2):
                rows.append(row(i, prec, 1, 100.0 * n, instances=n, model=model, energy=5.0 / n))
                i += 1
    return load_runs([make_run(tmp_path / "host", rows)])


def test_one_batch_run_draws_latency_against_instances_and_says_why_no_vs_batch(tmp_path):
    runs = host_like(tmp_path)
    tput = throughput_vs_batch(runs)
    assert len(tput) == 1 and tput[0].absent_reason.startswith("every row ran at batch 1: a vs-batch figure")
    assert "see throughput vs instances" in tput[0].absent_reason
    lat = latency_vs_batch(runs)
    drawn = [f for f in lat if f.absent_reason is None]
    assert [f.name for f in lat if f.absent_reason] == ["latency_vs_batch"]
    assert sorted(f.name for f in drawn) == ["latency_vs_instances_mobilenet_v2_ort_b1_process",
                                            "latency_vs_instances_resnet18_ort_b1_process"]
    fig = drawn[0]
    assert fig.x_label == "concurrent instances" and fig.x_ticks == [1.0, 2.0]
    p50 = next(s for s in fig.series if s.label == "fp32 p50")
    assert [(p.x, p.y) for p in p50.points] == [(1.0, 10.0), (2.0, 5.0)]  # 1000 * batch / throughput
    energy = energy_vs_batch(runs)
    assert {f.name for f in energy} == {"energy_vs_instances_mobilenet_v2_ort_b1_process",
                                        "energy_vs_instances_resnet18_ort_b1_process"}
    all_names = [f.name for f in all_figures(runs) if f.absent_reason is None and not f.name.startswith("power")]
    assert not any(n.startswith(("throughput_vs_batch", "latency_vs_batch")) for n in all_names)


def test_batches_give_vs_batch_figures_and_a_single_batch_facet_is_not_drawn(tmp_path):
    rows = [row(0, "fp32", 1, 100.0), row(1, "fp32", 4, 300.0), row(2, "fp32", 16, 500.0),
            row(3, "fp32", 1, 60.0, model="fixed_b1")]  # a model whose graph fixes batch 1
    runs = load_runs([make_run(tmp_path / "b", rows)])
    figs = {f.name: f for f in throughput_vs_batch(runs)}
    drawn = figs["throughput_vs_batch_my_net_ort_n1_process"]
    assert drawn.absent_reason is None and drawn.x_ticks == [1.0, 4.0, 16.0] and drawn.x_log
    single = figs["throughput_vs_batch_fixed_b1_ort_n1_process"]
    assert "one batch value (1) in this facet" in single.absent_reason


def test_one_configuration_shape_draws_nothing_per_batch_and_points_to_the_tables(tmp_path):
    runs = load_runs([make_run(tmp_path / "one", [row(0, "fp32", 1, 100.0, energy=3.0), row(1, "int8", 1, 180.0, energy=2.0)])])
    for figs in (throughput_vs_batch(runs), latency_vs_batch(runs), energy_vs_batch(runs)):
        assert len(figs) == 1 and "see the results and repeats tables" in (figs[0].absent_reason or "")


def test_a_figure_name_stays_a_file_name_however_many_placements_a_row_has(tmp_path):
    """A 28-stream SLO probe's placement column is 28 'cuda:0' joined: its paper figure's name was 700 bytes, and
    `edgebench report` died with 'File name too long' on the GPU (issue 35's search). Runs of one placement are
    counted, and a stem still too long is cut and ends in a hash of the whole."""
    from edgebench.report.figure import SLUG_MAX, short_placement, slug

    assert short_placement("+".join(["cuda:0"] * 28)) == "28xcuda:0"
    assert short_placement("cuda:0+cuda:0+dla0+dla1+dla1") == "2xcuda:0+dla0+2xdla1"
    assert short_placement("cpu") == "cpu"
    long_a, long_b = slug("latency", "x" * 300, "a"), slug("latency", "x" * 300, "b")
    assert len(long_a) == SLUG_MAX and long_a != long_b and long_a.startswith("latency_xxx")
    assert slug("latency", "resnet50", "n28") == "latency_resnet50_n28"  # short ones as before
    (tmp_path / f"{long_a}_single.caption.tex").write_text("fits")  # a file system takes the name with its suffix
