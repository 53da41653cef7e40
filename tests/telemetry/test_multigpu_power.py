"""Rows on several GPUs: NVML samples every GPU the placements use and the power/energy columns are the SUM.

Two fake GPUs behind the one NVML seam (an autospec of the real pynvml, tests/test_nvml_sampler.py) draw
known constant powers (100 W and 250 W: their energy counters rise linearly), and REAL sweeps of the null
backend (real instance processes, real results.csv) are placed on cuda:0, cuda:1 and [cuda:0, cuda:1].
"""

from __future__ import annotations

import csv
import json
import os
import time
from types import SimpleNamespace

import pytest

pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed (pip install nvidia-ml-py)")
from test_nvml_sampler import fake_nvml  # noqa: E402

WATTS = {"handle-0": 100.0, "handle-1": 250.0}
COUNTER_BASE_MJ = {"handle-0": 7_000_000, "handle-1": 123_000_000}  # counters run since driver load


def two_gpus():
    m = fake_nvml()
    m.nvmlDeviceGetCount.return_value = 2
    m.nvmlDeviceGetHandleByIndex.side_effect = lambda i: f"handle-{i}"
    m.nvmlDeviceGetHandleByUUID.side_effect = lambda u: {"GPU-aaaa": "handle-0", "GPU-bbbb": "handle-1"}[u]
    m.nvmlDeviceGetIndex.side_effect = lambda h: int(h[-1])
    m.nvmlDeviceGetUUID.side_effect = lambda h: {"handle-0": "GPU-aaaa", "handle-1": "GPU-bbbb"}[h]
    m.nvmlDeviceGetPciInfo.side_effect = lambda h: SimpleNamespace(busId=f"00000000:{h[-1]}B:00.0")
    m.nvmlDeviceGetPowerUsage.side_effect = lambda h: int(WATTS[h] * 1000)
    # NVML's counter is in mJ since driver load: W * s * 1000, linear in time for a constant power
    m.nvmlDeviceGetTotalEnergyConsumption.side_effect = lambda h: int(
        COUNTER_BASE_MJ[h] + WATTS[h] * 1000 * time.monotonic_ns() / 1e9)
    m.nvmlDeviceGetTemperature.side_effect = lambda h, kind: {"handle-0": 40, "handle-1": 55}[h]
    return m


# ---------------------------------------------------------------- which GPUs a row uses


def test_gpu_devices_follow_the_placements_and_cuda_visible_devices():
    from edgebench.telemetry.nvml import gpu_devices

    assert gpu_devices(("cuda:0", "cuda:1"), {}) == [0, 1]
    assert gpu_devices(("cuda:1", "cuda:1", "cuda:0"), {}) == [1, 0]
    assert gpu_devices(("cpu", "cpu"), {}) == [0]  # no GPU placement: GPU 0 as before
    assert gpu_devices(("gpu", "dla0"), {}) == [0]
    assert gpu_devices(("cuda:0", "cuda:1"), {"CUDA_VISIBLE_DEVICES": "2,3"}) == [2, 3]
    assert gpu_devices(("cuda:0",), {"CUDA_VISIBLE_DEVICES": "GPU-bbbb"}) == ["GPU-bbbb"]
    # no GPU placement: CUDA's GPU 0, which CUDA_VISIBLE_DEVICES remaps like any other
    assert gpu_devices(("cpu",), {"CUDA_VISIBLE_DEVICES": "1"}) == [1]
    assert gpu_devices((), {"CUDA_VISIBLE_DEVICES": "3,2"}) == [3]
    # ... unless CUDA sees no GPU by it, or it names one by UUID (NVML opens only whole UUIDs, CUDA takes prefixes):
    # then NVML GPU 0, as before, so a CPU-only sweep's baseline on a GPU host never stops on it
    for hidden in ("-1", "none", "", "GPU-8932f9", "MIG-GPU-aaaa/1/0", "\u00b2"):
        assert gpu_devices(("cpu",), {"CUDA_VISIBLE_DEVICES": hidden}) == [0], hidden
    assert gpu_devices(("cuda:0",), {"CUDA_VISIBLE_DEVICES": "1,foo"}) == [1]


# ---------------------------------------------------------------- the sampler


def test_two_gpus_are_summed_with_per_gpu_channels():
    from edgebench.telemetry.nvml import NvmlSampler
    from edgebench.telemetry.registry import power_summary

    s = NvmlSampler(0.01, nvml=two_gpus(), devices=[0, 1])
    s.start()
    time.sleep(0.3)
    tl = s.stop()
    assert [d["uuid"] for d in s.devices_info] == ["GPU-aaaa", "GPU-bbbb"]
    assert [d["pci_bus_id"] for d in s.devices_info] == ["00000000:0B:00.0", "00000000:1B:00.0"]
    assert set(tl.values["gpu0_power_total_mw"]) == {100_000.0} and set(tl.values["gpu1_power_total_mw"]) == {250_000.0}
    assert set(tl.values["power_total_mw"]) == {350_000.0}
    assert tl.values["temperature_c"][0] == 55.0  # the hotter GPU
    a, b = tl.t_ns[0], tl.t_ns[-1]
    row = power_summary(tl, a, b)
    seconds = (b - a) / 1e9
    assert row["energy_source"] == "counter:nvml" and row["power_scope"] == "gpu-board"
    assert row["energy_j"] == pytest.approx(350.0 * seconds, rel=0.02)
    g0 = tl.counter_delta("gpu0_energy_total_mj", a, b) / 1e3
    g1 = tl.counter_delta("gpu1_energy_total_mj", a, b) / 1e3
    assert g0 == pytest.approx(100.0 * seconds, rel=0.02) and g1 == pytest.approx(250.0 * seconds, rel=0.02)
    assert row["energy_j"] == pytest.approx(g0 + g1, rel=1e-6)
    assert any("SUM" in n and "gpu0, gpu1" in n for n in tl.notes)


def test_a_gpu_named_by_uuid_is_opened_by_uuid():
    from edgebench.telemetry.nvml import NvmlSampler

    m = two_gpus()
    s = NvmlSampler(3600.0, nvml=m, devices=["GPU-bbbb"])
    s.start()
    tl = s.stop()
    m.nvmlDeviceGetHandleByUUID.assert_called_with("GPU-bbbb")
    assert s.device_info["index"] == 1 and set(tl.values["power_total_mw"]) == {250_000.0}


def test_list_gpus_names_every_gpu_by_uuid_and_bus_id():
    from edgebench.telemetry.nvml import list_gpus

    gpus = list_gpus(two_gpus())
    assert [(g["index"], g["uuid"], g["pci_bus_id"]) for g in gpus] == [
        (0, "GPU-aaaa", "00000000:0B:00.0"), (1, "GPU-bbbb", "00000000:1B:00.0")]


# ---------------------------------------------------------------- real sweeps


@pytest.fixture
def nvml_here(monkeypatch):
    """The registry's nvml sampler on the two fake GPUs (the availability check asks the fake too)."""
    from edgebench.telemetry import nvml as nvml_mod
    from edgebench.telemetry import registry

    fake = two_gpus()
    monkeypatch.setattr(nvml_mod, "_import_nvml", lambda: fake)
    factory, _missing = registry.SAMPLERS["nvml"]
    monkeypatch.setitem(registry.SAMPLERS, "nvml", (factory, lambda root: nvml_mod.nvml_status(fake)))
    return fake


def test_a_row_on_two_gpus_reports_the_sum_of_their_energy(nvml_here, tmp_path):
    from edgebench import __version__
    from edgebench.backends.base import Env
    from edgebench.config.profile import profile_from_dict
    from edgebench.models.artifacts import Artifacts
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.pipeline.plan import expand
    from edgebench.pipeline.sweep import run_sweep
    from edgebench.results.store import ResultsStore

    profile = profile_from_dict({
        "name": "two-gpus", "device": "dgpu",
        "sweep": {"models": ["tiny_cnn"], "backends": ["null"], "precisions": ["fp32"], "batches": [4],
                  "placements": [["cuda:0"], ["cuda:1"], ["cuda:0", "cuda:1"]],
                  "option_sets": [{"sleep_s": 0.002}]},
        "run": {"warmup_s": 0.1, "duration_s": 3.0, "max_duration_s": 8.0, "min_inferences": 20,
                "accuracy_samples": 0, "stability_tolerance_pct": 1000.0},
        "telemetry": {"samplers": ["nvml"], "interval_s": 0.02}}, "two-gpus.yaml")
    planned = expand(profile, Env.detect())
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    models = ModelCache(Artifacts(os.environ.get("EDGEBENCH_CACHE") or tmp_path / "cache"), dict(profile.calibration))
    run_sweep(planned, profile, run_dir, ResultsStore(run_dir), models)
    with open(run_dir / "results.csv", newline="") as fh:
        rows = {r["placement"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"cuda:0", "cuda:1", "cuda:0+cuda:1"}
    for placement, watts in (("cuda:0", 100.0), ("cuda:1", 250.0), ("cuda:0+cuda:1", 350.0)):
        row = rows[placement]
        assert row["status"] == "ok", row["reason"]
        assert row["power_scope"] == "gpu-board" and row["energy_source"] == "counter:nvml"
        assert float(row["power_w_mean"]) == pytest.approx(watts, rel=0.02), placement
        assert float(row["energy_j"]) == pytest.approx(watts * float(row["window_s"]), rel=0.02)
        assert float(row["energy_per_inference_mj"]) == pytest.approx(
            float(row["energy_j"]) * 1000 / int(row["samples"]), rel=1e-9)
        # filled in every row now
        assert row["edgebench_version"] == __version__
        assert 0 < float(row["latency_ms_min"]) <= float(row["latency_ms_p50"])
    # the per-GPU figures are in the two-GPU row's timeline
    row_dir = run_dir / rows["cuda:0+cuda:1"]["artifact_dir"]
    with open(row_dir / "telemetry_nvml.csv", newline="") as fh:
        header = next(csv.reader(fh))
    assert {"gpu0_power_total_mw[mW]", "gpu1_power_total_mw[mW]", "gpu0_energy_total_mj[mJ]",
            "gpu1_energy_total_mj[mJ]", "energy_total_mj[mJ]"} <= set(header)
    notes = json.loads((row_dir / "row.json").read_text())["telemetry"][0]["notes"]
    assert any("uuid GPU-bbbb, bus 00000000:1B:00.0" in n for n in notes)


def test_system_json_lists_gpus_by_uuid_and_bus_id(nvml_here):
    from edgebench.device.system import collect_system_info

    info = collect_system_info()
    assert [g["uuid"] for g in info["gpus"]] == ["GPU-aaaa", "GPU-bbbb"]
    assert [g["pci_bus_id"] for g in info["gpus"]] == ["00000000:0B:00.0", "00000000:1B:00.0"]


def test_system_json_says_why_without_nvml(monkeypatch):
    from edgebench.device.system import collect_system_info
    from edgebench.telemetry import nvml as nvml_mod

    fake = two_gpus()
    fake.nvmlInit.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    monkeypatch.setattr(nvml_mod, "_import_nvml", lambda: fake)
    info = collect_system_info()
    assert info["gpus"] is None and "Driver Not Loaded" in info["unavailable"]["gpus"]


def test_idle_baseline_of_gpu0_is_not_subtracted_from_other_gpus(monkeypatch):
    from edgebench.pipeline.idle import idle_applies

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    one, two = SimpleNamespace(name="nvml", devices=[0]), SimpleNamespace(name="nvml", devices=[0, 1])
    assert idle_applies({"power_scope": "gpu-board"}, [one])
    assert not idle_applies({"power_scope": "gpu-board"}, [two])
    assert idle_applies({"power_scope": "cpu-package"}, [SimpleNamespace(name="host")])


def test_under_cuda_visible_devices_the_idle_baseline_and_the_rows_are_on_the_same_gpu(monkeypatch):
    """A sweep run with CUDA_VISIBLE_DEVICES=1 (one of two sweeps on a two-GPU host: measured so in
    docs/results/search/refgrid-resnet18) samples NVML GPU 1 for its rows (cuda:0) and for its idle baseline (no
    placement), and subtracts that baseline; before, the baseline sampled NVML GPU 0, the other sweep's GPU, and
    every row left its dynamic energy empty."""
    from edgebench.pipeline.idle import idle_applies
    from edgebench.telemetry.nvml import NvmlSampler

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    idle = NvmlSampler.create(0.05)
    row = NvmlSampler.create(0.05, placements=("cuda:0",))
    assert idle.devices == [1] and row.devices == [1]
    assert idle_applies({"power_scope": "gpu-board"}, [row])
    assert not idle_applies({"power_scope": "gpu-board"}, [SimpleNamespace(name="nvml", devices=[0])])


def test_int8_rows_name_their_calibration_source():
    from edgebench.pipeline.row_steps import calibration_label

    sidecar = {"calibration": {"source": "synthetic", "seed": 0, "count": 32, "sha256": "ab" * 32}}
    assert calibration_label(sidecar) == "synthetic (32 samples, seed 0, sha256 abababababababab)"
    assert calibration_label({}) is None


def test_schema_says_what_inferences_and_ips_count():
    from edgebench.results import schema
    from edgebench.results.schema import column

    assert "one batch" in column("inferences").description and column("inferences").unit == "batches"
    assert column("throughput_ips").unit == "samples/s" and "samples" in column("per_instance_ips").description
    assert "`inferences` counts batches" in schema.__doc__ and "counts samples per second" in schema.__doc__
    assert column("power_scope") and column("calibration_source")
