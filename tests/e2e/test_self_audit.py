"""Self-audit in CI (issue 19): edgebench as a user runs it (the `edgebench bench` CLI, the shipped host profile,
every default sampler and pre-pass) against an independent bare ONNX Runtime loop in a separate process,
interleaved; fails when the upper bound of the edgebench/bare throughput ratio drops below 0.97."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from repo_paths import REPO

RATIO_FLOOR = 0.97


@pytest.mark.slow
def test_ort_cpu_edgebench_keeps_up_with_a_bare_loop(tmp_path):
    if importlib.util.find_spec("onnxruntime") is None:
        pytest.skip("onnxruntime is not installed")
    out = tmp_path / "audit.json"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "self_audit.py"), "--backend", "ort",
                           "--model", "small_cnn", "--pairs", "3", "--duration-s", "1", "--out", str(tmp_path / "runs"),
                           "--json", str(out)], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rec = json.loads(out.read_text())
    assert len(rec["pairs"]) == 3 and [p["order"] for p in rec["pairs"]] == ["ab", "ba", "ab"]
    assert all(p["edgebench_ips"] > 0 and p["bare_ips"] > 0 for p in rec["pairs"])
    assert rec["ratio_low"] <= rec["ratio_median"] <= rec["ratio_high"]
    assert "bench --device host" in rec["edgebench_command"]  # the shipped profile, as a user runs it
    assert rec["probe"].startswith("row 0 (batch 1")  # its accuracy pass ran in a probe process
    assert rec["ratio_high"] >= RATIO_FLOOR, (
        f"edgebench/bare ORT CPU throughput ratio {rec['ratio_median']:.3f} "
        f"[{rec['ratio_low']:.3f}, {rec['ratio_high']:.3f}] is below {RATIO_FLOOR}: {rec['pairs']}")


def test_the_bare_loop_imports_no_edgebench():
    text = (REPO / "benchmarks" / "bare_loop.py").read_text()
    assert "edgebench" not in "\n".join(line for line in text.splitlines()
                                         if line.lstrip().startswith(("import ", "from ")))
