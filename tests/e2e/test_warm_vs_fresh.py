"""benchmarks/warm_vs_fresh.py (issue 19) run for real: the `edgebench bench` CLI on CPU with tiny_cnn through ONNX
Runtime, one warm/fresh pair. Checks what the record holds (a ratio per row label, the setup columns, the profiles
that differ in run.workers only), never what the ratios come out as: that is a timing result."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest
from repo_paths import REPO

SCRIPT = REPO / "benchmarks" / "warm_vs_fresh.py"
LABELS = {"tiny_cnn/ort/fp32/1/1", "tiny_cnn/ort/fp32/1/2"}


def _script_module():
    spec = importlib.util.spec_from_file_location("warm_vs_fresh_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(tmp_path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "EDGEBENCH_CACHE": str(tmp_path / "cache")}  # never the user's cache
    return subprocess.run([sys.executable, str(SCRIPT), *extra], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env=env)


@pytest.mark.slow
def test_one_pair_on_cpu_gives_a_ratio_and_setup_times_per_row(tmp_path):
    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("torch") is None:
        pytest.skip("the tiny_cnn ORT grid needs onnxruntime and torch (export)")
    out = tmp_path / "wf.json"
    proc = _run(tmp_path, "--models", "tiny_cnn", "--backends", "ort", "--batches", "1", "--instances", "1,2",
                "--pairs", "1", "--duration-s", "0.5", "--warmup-s", "0.2", "--out", str(tmp_path / "runs"),
                "--json", str(out))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rec = json.loads(out.read_text())

    # the two sides differ in run.workers only, and each extends the same grid profile over `host`
    assert "workers: warm" in rec["profiles"]["warm"] and "workers: fresh" in rec["profiles"]["fresh"]
    assert "extends: host" in rec["base_profile"] and "duration_s: 0.5" in rec["base_profile"]
    for side in ("warm", "fresh"):
        run_dir = next(r["run_dir"] for r in rec["runs"] if r["side"] == side)
        resolved = (tmp_path / "runs" / f"pair0-{side}").glob("*/profile.yaml")
        assert f"workers: {side}" in next(resolved).read_text(), f"edgebench did not get run.workers {side}"
        assert run_dir.startswith(str(tmp_path / "runs" / f"pair0-{side}"))
    assert [r["order"] for r in rec["runs"]] == ["warm-fresh", "warm-fresh"]  # pair 0 starts warm

    by_label = {r["label"]: r for r in rec["rows"]}
    assert set(by_label) == LABELS
    raw = {(r["side"], f"{row['model']}/{row['backend']}/{row['precision']}/{row['batch']}/{row['instances']}"): row
           for r in rec["runs"] for row in r["rows"]}
    for label, row in by_label.items():
        assert row["pairs_measured"] == 1, row
        warm, fresh = raw[("warm", label)], raw[("fresh", label)]
        # the ratio is this label's warm row over its fresh row (pairing by label, not by position)
        expected = float(warm["throughput_ips"]) / float(fresh["throughput_ips"])
        assert math.isclose(row["throughput_ratio"]["median"], expected, rel_tol=1e-9)
        assert row["throughput_ratio"]["per_pair"] == [pytest.approx(expected)]
        expected_p50 = float(warm["latency_ms_p50"]) / float(fresh["latency_ms_p50"])
        assert math.isclose(row["latency_p50_ratio"]["median"], expected_p50, rel_tol=1e-9)
        assert row["statuses_warm"] == [warm["status"]] and row["statuses_fresh"] == [fresh["status"]]
        for side, src in (("warm", warm), ("fresh", fresh)):
            assert row[f"setup_s_mean_{side}"] == pytest.approx(float(src["setup_s"]))
            assert row[f"setup_s_mean_{side}"] > 0
        assert row["verdict"] == "no interval (1 pair)"  # one pair proves nothing either way
    assert rec["pooled"]["throughput_ratio"]["rows"] == 2 and rec["pooled"]["throughput_ratio"]["pairs"] == 1
    assert "| all rows (geometric mean) |" in proc.stdout
    assert all(f"| {label} |" in proc.stdout for label in LABELS)
    assert len(list((tmp_path / "runs" / "fill").glob("*/results.csv"))) == 1  # the unmeasured cache-filling run


def test_a_failing_cli_exits_2_and_names_the_problem(tmp_path):
    proc = _run(tmp_path, "--models", "no_such_model", "--pairs", "1", "--out", str(tmp_path / "runs"),
                "--json", str(tmp_path / "wf.json"))
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "unknown model 'no_such_model'" in proc.stderr
    assert not (tmp_path / "wf.json").exists()  # no record of runs that did not happen


def test_verdict_and_pooled_geometric_mean():
    wf = _script_module()
    assert wf.verdict({"low": 0.95, "high": 1.01}, pairs=4) == "equal"  # contains 1
    assert wf.verdict({"low": 0.975, "high": 0.99}, pairs=4) == "equal"  # excludes 1, inside [0.97, 1.03]
    assert wf.verdict({"low": 0.90, "high": 0.96}, pairs=4) == "differs"
    assert wf.verdict({"low": 0.96, "high": 0.99}, pairs=4) == "differs"  # excludes 1, reaches below 0.97
    assert wf.verdict(None, pairs=0) == "unmeasured"
    assert wf.verdict({"low": 1.0, "high": 1.0}, pairs=1) == "no interval (1 pair)"
    # ratios 2 and 0.5 in one pair, 1 in another: geometric mean over the three rows is 1
    pooled = wf.pooled_geomean_ci([[math.log(2.0), math.log(0.5)], [0.0]])
    assert pooled["geomean"] == pytest.approx(1.0) and pooled["rows"] == 3 and pooled["pairs"] == 2
    assert pooled["low"] <= pooled["geomean"] <= pooled["high"]
    # resampling whole pairs: a pair of all-1.1 rows and a pair of all-0.9 rows bound the interval
    pooled = wf.pooled_geomean_ci([[math.log(1.1)] * 3, [math.log(0.9)] * 3])
    assert pooled["low"] == pytest.approx(0.9) and pooled["high"] == pytest.approx(1.1)


def test_rows_pair_by_label_and_a_missing_side_is_not_paired():
    wf = _script_module()

    def row(instances, ips, status="ok"):
        return {"model": "m", "backend": "ort", "precision": "fp32", "batch": "1", "instances": str(instances),
                "throughput_ips": str(ips), "latency_ms_p50": "2.0", "status": status, "setup_s": "1.5"}

    runs = [{"pair": 0, "side": "warm", "rows": {"m/ort/fp32/1/1": row(1, 110), "m/ort/fp32/1/2": row(2, 300)}},
            {"pair": 0, "side": "fresh", "rows": {"m/ort/fp32/1/2": row(2, 200), "m/ort/fp32/1/1": row(1, 100)}},
            {"pair": 1, "side": "fresh", "rows": {"m/ort/fp32/1/1": row(1, 100)}},
            {"pair": 1, "side": "warm", "rows": {"m/ort/fp32/1/1": row(1, 90, "invalid")}}]
    table, pooled = wf.compare(runs)
    got = {r["label"]: r for r in table}
    assert got["m/ort/fp32/1/1"]["throughput_ratio"]["per_pair"] == [pytest.approx(1.1), pytest.approx(0.9)]
    assert got["m/ort/fp32/1/1"]["statuses_warm"] == ["ok", "invalid"]
    assert got["m/ort/fp32/1/1"]["workers_warm"] == ["(no column)"]  # before rows carry `workers`
    assert got["m/ort/fp32/1/2"]["throughput_ratio"]["per_pair"] == [pytest.approx(1.5)]
    assert got["m/ort/fp32/1/2"]["statuses_fresh"] == ["ok", "missing"]
    assert pooled["throughput_ratio"]["rows"] == 3
    assert pooled["throughput_ratio"]["geomean"] == pytest.approx((1.1 * 0.9 * 1.5) ** (1 / 3))
