"""The end-of-run table reads rows back from results.csv (text) and must still format numbers."""

from __future__ import annotations

import pytest

from edgebench.commands.console import slo_table, summary_table
from edgebench.placement import compact_placement


def test_summary_table_formats_csv_text_and_marks_missing(capsys):
    rows = [
        {"model": "resnet18", "precision": "fp32", "batch": "1", "instances": "2", "placement": "cpu+cpu",
         "mode": "process", "throughput_ips": "53.962611161873", "latency_ms_p50": "30.166965",
         "latency_ms_p99": "114.6353386000003", "power_w_mean": "", "energy_per_inference_mj": "",
         "accuracy_top1_agreement_pct": "100.0", "status": "ok"},
        {"model": "resnet18", "precision": "fp16", "status": "skipped"},
    ]
    text = summary_table(rows, title="t")
    lines = text.splitlines()
    assert lines[0] == "t" and "img/s" in lines[1]
    assert "53.96" in lines[2] and "53.962611" not in lines[2]
    assert "114.6" in lines[2] and " - " in lines[2]  # empty power shown as '-', never 0
    assert lines[3].split()[:2] == ["resnet18", "fp16"] and lines[3].split()[-1] == "skipped"
    assert "53.96" in capsys.readouterr().out


def test_throughput_column_says_samples_unless_the_input_is_an_image():
    """Issue 20: the table headed audio and text models 'img/s'. The CSV column stays throughput_ips."""
    from edgebench.commands.console import rate_unit

    image = {"input_shapes": "pixels:float32[4x3x12x12]", "throughput_ips": "10", "status": "ok"}
    audio = {"input_shapes": "audio:float32[2x32];sr:int64[]", "throughput_ips": "10", "status": "ok"}
    text = {"input_shapes": "input_ids:int64[8x128];attention_mask:int64[8x128]", "status": "ok"}
    grey = {"input_shapes": "x:float32[1x1x28x28]"}
    assert [rate_unit(r) for r in (image, audio, text, grey)] == ["img/s", "samples/s", "samples/s", "img/s"]
    assert "img/s" in summary_table([image], title="t").splitlines()[1]
    header = summary_table([image, audio], title="t").splitlines()[1]
    assert "samples/s" in header and "mJ/sample" in header and "img/s" not in header


def test_placements_print_compactly_and_the_csv_cell_stays_full(capsys):
    assert compact_placement("+".join(["cuda:0"] * 31)) == "31x cuda:0"
    assert compact_placement("cpu+cpu") == "2x cpu"
    assert compact_placement("cuda:0+dla0") == "cuda:0+dla0"
    assert compact_placement("cuda:0+cuda:0+dla0+dla1+dla1") == "2x cuda:0+dla0+2x dla1"
    assert compact_placement("gpu") == "gpu" and compact_placement("") == ""
    full = "+".join(["cuda:0"] * 31)
    text = summary_table([{"model": "resnet50", "instances": "31", "placement": full, "status": "ok"}], title="t")
    assert "31x cuda:0" in text and full not in text
    assert max(len(line) for line in text.splitlines()) < 150  # was ~250 characters for the placement alone


def test_slo_table_puts_option_sets_and_sharing_modes_side_by_side(capsys):
    base = {"model": "resnet50", "backend": "torch", "precision": "fp16", "batch": 1, "device": "cuda:0",
            "mode": "process", "rate_per_stream_hz": 30.0, "slo_ms": 33.0, "first_missed_streams": None,
            "p99_ms_at_first_miss": None, "monotonic": "true", "notes": "", "probes": "8:met p99=2.9ms"}
    records = [dict(base, options="", gpu_sharing="time-slicing", answer="21", p99_ms_at_max=30.1),
               dict(base, options="cuda_graph=True", gpu_sharing="time-slicing", answer="31", p99_ms_at_max=2.9),
               dict(base, options="", gpu_sharing="mps", answer="at least 40", p99_ms_at_max=12.0, monotonic="false",
                    notes="not monotonic: p99 fell")]
    text = slo_table(records)
    lines = text.splitlines()
    assert lines[0] == "SLO search: resnet50/torch/fp16/b1 on cuda:0 (process), streams of 30/s, p99 <= 33 ms"
    assert lines[2].split()[:3] == ["default", "time-slicing", "21"]
    assert lines[3].split()[:3] == ["cuda_graph=True", "time-slicing", "31"]
    assert lines[4].split()[:5] == ["default", "mps", "at", "least", "40"]
    assert "default / mps: not monotonic: p99 fell" in text
    assert "cuda_graph=True / time-slicing: probes 8:met p99=2.9ms" in capsys.readouterr().out


# ---------------------------------------------------------------- issue 28: a table that fits, repeats, accuracy n


def _resnet_rows() -> list[dict]:
    base = {"model": "resnet18", "backend": "ort", "batch": "4", "instances": "2", "placement": "cpu+cpu",
            "mode": "process", "throughput_ips": "53.96", "latency_ms_p50": "30.1", "latency_ms_p99": "",
            "power_w_mean": "", "energy_per_inference_mj": "", "accuracy_samples": "16",
            "weights": "random-init", "input_shapes": "x:float32[4x3x224x224]"}
    return [dict(base, precision=p, repeat=str(r), status=s, accuracy_top1_agreement_pct=a)
            for p, a, s in (("fp32", "100.0", "ok"), ("int8", "81.25", "invalid")) for r in (0, 1)]


@pytest.mark.parametrize("width", [80, 100, 120])
def test_the_table_fits_the_width_and_never_splits_a_word(width):
    rows = _resnet_rows()
    text = summary_table(rows, title="edgebench host: runs/x/results.csv", width=width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines[1:]), "\n".join(lines)
    body = "\n".join(line for line in lines[1:] if not line.startswith("(not shown"))
    whole_words = set(summary_table(rows, title="t").split())  # unfitted: every word as it is
    assert set(body.split()) <= whole_words  # fitted: no fragment of a word (`proces`/`s`, `invali`/`d`)
    assert "invalid" in body.split() and "81.25" in body.split()  # status and accuracy are never dropped


def test_at_80_columns_empty_and_low_priority_columns_go_first_and_the_table_says_so():
    text = summary_table(_resnet_rows(), title="t", width=80)
    header = text.splitlines()[1].split()
    assert header[:4] == ["model", "prec", "b", "n"] and header[-1] == "status"
    assert "rep" in header and "img/s" in header
    assert "W" not in header  # empty in every row (no power sampler on this CPU): left out first
    assert text.splitlines()[-1].startswith("(not shown at 80 columns: ") and "W" in text.splitlines()[-1]


def test_repeats_have_their_column_and_accuracy_carries_n_and_the_weights():
    text = summary_table(_resnet_rows(), title="t")
    lines = text.splitlines()
    header = lines[1].split()
    rep = header.index("rep") + 1  # the placement cell '2x cpu' is two words
    assert [line.split()[rep] for line in lines[2:]] == ["0", "1", "0", "1"]
    assert "81.25 (n=16, random init)" in lines[4] and "100 (n=16, random init)" in lines[2]


def test_the_start_line_names_the_placement_as_the_table_does(capsys):
    from edgebench.commands.console import start_line
    from edgebench.config.run_config import RunConfig

    cfg = RunConfig(model="resnet18", backend="ort", precision="fp32", batch=1, placements=("cpu", "cpu"))
    start_line(0, 3, cfg)
    out = capsys.readouterr().out
    assert "resnet18/ort/fp32/b1/2x cpu/process" in out and "cpu+cpu" not in out
