"""Issue 37: the report tables headed a non-image model's throughput 'img/s'; the unit follows the rows' inputs."""

from __future__ import annotations

from pathlib import Path

from edgebench.report.tables import all_tables
from edgebench.results.runs import load_runs
from edgebench.results.sample_unit import in_unit, rate_unit, sample_noun
from edgebench.results.store import ResultsStore

AUDIO = "input:float32[1x512];state:float32[2x1x128];sr:int64[]"
IMAGE = "input:float32[1x3x224x224]"


def run_with(path: Path, shapes: str) -> Path:
    store = ResultsStore(path)
    for i, (precision, batch, tput) in enumerate([("fp32", 1, 100.0), ("fp32", 4, 300.0), ("int8", 1, 150.0)]):
        store.append({"model": "m", "backend": "ort", "precision": precision, "batch": batch, "instances": 1,
                      "mode": "process", "placement": "cpu", "throughput_ips": tput, "status": "ok",
                      "row_index": i, "config_hash": f"h{i}", "energy_per_inference_mj": 2.0,
                      "latency_ms_p50": 10.0, "latency_ms_p99": 20.0, "input_shapes": shapes})
    return path


def headers(run: Path) -> list[str]:
    return [c.header for t in all_tables(load_runs([run])) for c in t.columns]


def test_tables_of_an_audio_model_say_samples_per_second(tmp_path):
    audio = headers(run_with(tmp_path / "audio", AUDIO))
    assert "Throughput (samples/s)" in audio and "Energy (mJ/sample)" in audio
    assert "Throughput median (samples/s)" in audio
    assert not [h for h in audio if "img" in h]
    image = headers(run_with(tmp_path / "image", IMAGE))
    assert "Throughput (img/s)" in image and "Energy (mJ/img)" in image


def test_the_unit_is_decided_from_the_inputs():
    assert rate_unit({"input_shapes": IMAGE}) == "img/s" and rate_unit({"input_shapes": AUDIO}) == "samples/s"
    assert rate_unit({"input_shapes": "input_ids:int64[1x128];attention_mask:int64[1x128]"}) == "samples/s"
    assert rate_unit({"input_shapes": "images:uint8[1x224x224x3]"}) == "img/s"  # NHWC, as TF-exported models take
    assert rate_unit({"input_shapes": "state:float32[2x1x128]"}) == "samples/s"
    assert rate_unit({"input_shapes": "x:float32[1x40x100x7]"}) == "samples/s"  # 7 is no image's channel count
    assert sample_noun([{"input_shapes": IMAGE}, {"input_shapes": AUDIO}]) == "sample"
    assert sample_noun([{"input_shapes": IMAGE}, {}]) == "img"  # an older row without input_shapes: images
    assert in_unit("Per instance (img/s)", "sample") == "Per instance (samples/s)"
    assert in_unit("Energy (mJ/img)", "img") == "Energy (mJ/img)"
