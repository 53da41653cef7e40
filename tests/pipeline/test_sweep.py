"""End to end on the CPU: real export, real ONNX Runtime, real instance processes, real result files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli, cli_env, read_rows
from repo_paths import REPO

from edgebench.results.schema import COLUMNS

REQUIRED = ["model", "backend", "precision", "batch", "instances", "mode", "placement", "throughput_ips",
            "latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "power_w_mean", "energy_per_inference_mj",
            "status", "reason"]


@pytest.fixture(scope="module")
def cache_env(tmp_path_factory) -> dict:
    return cli_env(tmp_path_factory.mktemp("cache"))


def bench(env: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return cli(env, "bench", *args, timeout=timeout)


def only_run_dir(out: Path) -> Path:
    dirs = [d for d in out.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_smoke_sweep_writes_citable_rows(cache_env, tmp_path):
    out = bench(cache_env, "--device", "smoke", "--batches", "1", "--out", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    run_dir = only_run_dir(tmp_path)
    rows = read_rows(run_dir / "results.csv")
    header = list(rows[0].keys())
    assert header == [c.name for c in COLUMNS]
    for name in REQUIRED:
        assert name in header
    # 1 model x 3 precisions x 1 batch x 2 instance counts
    assert len(rows) == 6
    by = {(r["precision"], r["instances"]): r for r in rows}
    for inst in ("1", "2"):
        assert by[("fp16", inst)]["status"] == "skipped" and "float16" in by[("fp16", inst)]["reason"]
        for prec in ("fp32", "int8"):
            row = by[(prec, inst)]
            assert row["status"] in ("ok", "invalid"), row
            if row["status"] == "invalid":  # on a loaded 2-core box only stability may fail
                assert "unstable" in row["reason"], row["reason"]
            assert float(row["throughput_ips"]) > 0
            assert int(row["inferences"]) >= 662 and row["latency_ms_p99"] != ""
            assert float(row["latency_ms_p50"]) <= float(row["latency_ms_p99"])
            assert row["placement"] == "+".join(["cpu"] * int(inst))
            assert len(row["per_instance_ips"].split(";")) == int(inst)
            assert row["weights"] == "random-init"
            # power: a number where RAPL is readable, else empty with the reason -- never 0
            assert row["power_w_mean"] != "0"
            if row["power_w_mean"] == "":
                assert row["energy_per_inference_mj"] == "" and row["energy_source"].startswith("none")
    # FP32 agrees with its own reference exactly; int8 is compared, not assumed
    assert float(by[("fp32", "1")]["accuracy_top1_agreement_pct"]) == 100.0
    assert float(by[("fp32", "1")]["accuracy_max_abs_err"]) < 1e-4
    assert by[("int8", "1")]["accuracy_cosine_min"] != ""
    assert by[("int8", "1")]["calibration_source"].startswith("synthetic (32 samples, seed 0, sha256 ")
    assert by[("fp32", "1")]["calibration_source"] == ""
    for row in (by[("fp32", "1")], by[("int8", "2")]):  # filled in every measured row
        assert row["edgebench_version"] != "" and 0 < float(row["latency_ms_min"]) <= float(row["latency_ms_p50"])
    # per-row files: latencies match the counted inferences' order of magnitude, telemetry saved
    ok_row = by[("fp32", "2")]
    row_dir = next((run_dir / "rows").glob(f"*-{ok_row['config_hash']}"))
    with np.load(row_dir / "latencies.npz", allow_pickle=False) as lat:
        assert set(lat["instance"].tolist()) == {0, 1}
        assert len(lat["start_ns"]) == len(lat["end_ns"]) >= int(ok_row["inferences"])
        assert (lat["end_ns"] > lat["start_ns"]).all()
        assert lat["placements"].tolist() == ["cpu", "cpu"]
    assert (row_dir / "telemetry_host.csv").exists()
    system = json.loads((run_dir / "system.json").read_text())
    assert system["python"]["version"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}")
    assert (run_dir / "profile.yaml").exists()
    assert "img/s" in out.stdout and "rows:" in out.stdout  # summary table printed


def test_harness_killed_mid_sweep_then_resume_loses_and_duplicates_nothing(cache_env, tmp_path):
    import psutil

    args = ["--device", "smoke", "--precisions", "fp32,int8", "--batches", "1,4", "--instances", "1",
            "--out", str(tmp_path)]
    proc = subprocess.Popen([sys.executable, "-m", "edgebench", "bench", *args], env=cache_env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    results = None
    while time.monotonic() < deadline:
        found = [d for d in tmp_path.iterdir() if (d / "results.csv").exists()]
        if found and len(read_rows(found[0] / "results.csv")) >= 2:
            results = found[0]
            break
        assert proc.poll() is None, "sweep ended before it could be killed"
        time.sleep(0.05)
    assert results is not None
    children = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # instances notice their harness is gone and exit on their own
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f"orphaned instance processes: {[p.pid for p in alive]}"
    before = read_rows(results / "results.csv")
    assert 2 <= len(before) < 4

    out = bench(cache_env, "--resume", str(results))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "already done" in out.stdout
    after = read_rows(results / "results.csv")
    hashes = [r["config_hash"] for r in after]
    assert len(after) == 4 and len(set(hashes)) == 4, hashes
    # rows written before the kill are kept unchanged and in order (failed ones are retried, kept in attempts.csv)
    kept = [r for r in before if r["status"] != "failed"]
    assert after[: len(kept)] == kept
    assert {(r["precision"], r["batch"]) for r in after} == {("fp32", "1"), ("fp32", "4"), ("int8", "1"), ("int8", "4")}


def test_crashed_instance_fails_its_row_and_the_sweep_goes_on(tmp_path):
    from edgebench.config.profile import load_profile
    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.pipeline.plan import PlannedRun
    from edgebench.pipeline.sweep import run_sweep
    from edgebench.results.store import ResultsStore

    profile = load_profile("smoke")
    common = dict(model="tiny_cnn", precision="fp32", batch=1, placements=("cpu", "cpu"), duration_s=0.5,
                  max_duration_s=3.0, min_inferences=10, warmup_s=0.1, collect_timeout_s=5.0, accuracy_samples=0)
    crash = RunConfig(backend="null", options=(("fail_after", 20), ("fail_how", "kill"), ("fail_instance", 1),
                                               ("fail_phase", "measure"), ("sleep_s", 0.001)), **common)
    good = RunConfig(backend="ort", **common)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    store = ResultsStore(run_dir)
    models = ModelCache(Artifacts(os.environ.get("EDGEBENCH_CACHE") or tmp_path / "cache"), dict(profile.calibration))
    rows = run_sweep([PlannedRun(crash, None), PlannedRun(good, None)], profile, run_dir, store, models)
    assert rows[0]["status"] == "failed" and rows[1]["status"] in ("ok", "invalid")
    assert "instance 1" in rows[0]["reason"] and "SIGKILL" in rows[0]["reason"]
    assert [r["status"] for r in read_rows(run_dir / "results.csv")][0] == "failed"
    assert float(read_rows(run_dir / "results.csv")[1]["throughput_ips"]) > 0


def test_onnx_whose_input_contradicts_the_config_is_refused(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["input"], ["output"])], "fixed", [x], [y])
    path = tmp_path / "fixed_batch.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    out = subprocess.run([sys.executable, "-m", "edgebench", "run", "--onnx", str(path), "--batch", "8",
                          "--out", str(tmp_path / "runs")], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=120)
    assert out.returncode == 2
    assert str(path) in out.stderr and "batch" in out.stderr and "8" in out.stderr
    assert "Traceback" not in out.stderr


def test_export_then_run_an_external_onnx_through_int8(cache_env, tmp_path):
    """The board workflow: export on a workstation, benchmark the .onnx where torch is absent."""
    onnx_path = tmp_path / "tiny.onnx"
    out = subprocess.run([sys.executable, "-m", "edgebench", "export", "--model", "tiny_cnn", "--out", str(onnx_path)],
                         capture_output=True, text=True, env=cache_env, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    assert onnx_path.stat().st_size > 1000 and "weights random-init" in out.stdout
    runs = tmp_path / "runs"
    out = subprocess.run([sys.executable, "-m", "edgebench", "run", "--onnx", str(onnx_path), "--precision", "int8",
                          "--batch", "2", "--instances", "2", "--mode", "streams", "--duration", "0.5",
                          "--out", str(runs)], capture_output=True, text=True, env=cache_env, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    (row,) = read_rows(only_run_dir(runs) / "results.csv")
    assert row["model"] == "tiny" and row["precision"] == "int8" and row["mode"] == "streams"
    assert row["placement"] == "cpu+cpu" and row["batch"] == "2"
    assert row["status"] in ("ok", "invalid") and float(row["throughput_ips"]) > 0
    assert row["weights"] == "from-onnx"
    assert float(row["accuracy_cosine_min"]) > 0.9  # int8 of the same file vs its fp32


@pytest.mark.parametrize("workers", ["warm", "fresh"])
def test_rows_of_one_model_reuse_warm_workers_and_none_outlive_the_sweep(tmp_path, workers):
    import dataclasses
    import multiprocessing

    from edgebench.config.profile import load_profile
    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.pipeline.plan import PlannedRun
    from edgebench.pipeline.sweep import run_sweep
    from edgebench.results.store import ResultsStore

    profile = load_profile("smoke")
    profile = dataclasses.replace(profile, run={**profile.run, "workers": workers})
    common = dict(model="tiny_cnn", backend="ort", precision="fp32", duration_s=0.3, max_duration_s=3.0,
                  min_inferences=10, warmup_s=0.05, accuracy_samples=0)
    plan = [PlannedRun(RunConfig(batch=b, placements=("cpu",) * n, **common), None) for b in (1, 2) for n in (1, 2)]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    models = ModelCache(Artifacts(os.environ.get("EDGEBENCH_CACHE") or tmp_path / "cache"), dict(profile.calibration))
    rows = run_sweep(plan, profile, run_dir, ResultsStore(run_dir), models)
    assert [r["status"] in ("ok", "invalid") for r in rows] == [True] * 4, [r["reason"] for r in rows]
    if workers == "warm":  # the plan's largest row (2 instances) is started with the first; later rows reuse
        assert [r["workers"] for r in rows] == ["warm: 0 of 1 reused", "warm: 1 of 2 reused",
                                                "warm: 1 of 1 reused", "warm: 2 of 2 reused"]
    else:
        assert [r["workers"] for r in rows] == ["fresh"] * 4
    assert [r["workers"] for r in read_rows(run_dir / "results.csv")] == [r["workers"] for r in rows]
    assert multiprocessing.active_children() == []  # the pool was retired with the sweep
