"""The end-of-run table reads rows back from results.csv (text) and must still format numbers."""

from __future__ import annotations

from edgebench.commands.console import summary_table


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
