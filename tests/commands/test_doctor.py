"""Issue 28, `edgebench doctor`: a bottom line of what this machine will and will not measure, no '?' for absent
hardware, and advice that applies to this machine (no jtop.service restart on a machine that is not a Jetson)."""

from __future__ import annotations

import os
import subprocess
import sys

from repo_paths import REPO

from edgebench.backends.base import Env
from edgebench.commands.doctor import bottom_line, machine, package_lines, sampler_lines

NOT_JETSON = {"host": None, "nvml": "NVML Shared Library Not Found (needs the NVIDIA driver)",
              "jtop": "jtop service not active: fix: sudo systemctl restart jtop.service",
              "ina3221": "INA3221 not available", "tegrastats": "'tegrastats' is not on PATH",
              "jetson_throttle": "no Jetson clocks"}


def cpu_box(**kw) -> Env:
    return Env(cpu_count=kw.get("cpus", 2), machine="x86_64", ort_version="1.0", ort_providers=("CPUExecutionProvider",),
               cuda_devices=kw.get("gpus", 0))


def test_cpu_only_machine_without_rapl_says_power_columns_stay_empty():
    m = machine(cpu_box(), NOT_JETSON, jetson=False, rapl="RAPL not available: no powercap", torch=False, trt=False)
    lines = bottom_line(m)
    assert lines[0] == "bottom line: CPU only (2 cores, x86_64); no power sensor: W and mJ columns will be empty"
    text = "\n".join(lines)
    assert "with ort, null (CPU placements)" in text and "GPU, TensorRT and DLA rows (no NVIDIA GPU" in text
    assert "RAPL not available: no powercap; no NVIDIA GPU for NVML; not a Jetson" in text
    assert "throttled column stays empty" in text
    samplers = "\n".join(sampler_lines(m, NOT_JETSON))
    assert "jtop.service" not in samplers and "jtop       unavailable: not a Jetson" in samplers
    assert "nvml       unavailable: no NVIDIA GPU" in samplers and "needs the NVIDIA driver" not in samplers


def test_cpu_with_rapl_and_a_gpu_box_and_a_jetson_get_their_own_bottom_lines():
    rapl = machine(cpu_box(), NOT_JETSON, jetson=False, rapl=None, torch=True, trt=False)
    head, will = bottom_line(rapl)[:2]
    assert head == "bottom line: CPU only (2 cores, x86_64)" and "power and energy from RAPL (CPU package)" in will
    assert "only the CPU package is measured" in "\n".join(bottom_line(rapl))
    gpu = machine(cpu_box(gpus=1, cpus=16), {**NOT_JETSON, "nvml": None}, jetson=False, rapl="no RAPL",
                  torch=True, trt=True)
    text = "\n".join(bottom_line(gpu))
    assert text.startswith("bottom line: CPU + 1 NVIDIA GPU (16 cores, x86_64)\n")
    assert "ort, torch, trt, null (GPU and CPU placements)" in text and "NVML (GPU board)" in text
    assert "throttling (nvml)" in text and "no NVIDIA GPU" not in text
    jetson = machine(cpu_box(cpus=6), {**NOT_JETSON, "jtop": None, "ina3221": None, "jetson_throttle": None},
                     jetson=True, rapl="no RAPL", torch=False, trt=True)
    text = "\n".join(bottom_line(jetson))
    assert text.startswith("bottom line: Jetson (6 cores") and "jtop/ina3221 (Jetson module)" in text
    assert "power and energy (" not in text and "GPU, TensorRT and DLA rows" not in text  # it measures both
    packages = "\n".join(package_lines(jetson))
    assert "n/a      jtop" not in packages and "n/a      tensorrt" not in packages  # they apply on a Jetson
    assert "n/a      jtop         jtop telemetry on Jetson" in "\n".join(package_lines(rapl))


def test_doctor_on_this_machine_ends_with_its_bottom_line_and_no_question_marks():
    out = subprocess.run([sys.executable, "-m", "edgebench", "doctor"], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    gpus = Env.detect().cuda_devices
    bottom = text[text.index("\nbottom line: "):].strip().splitlines()
    assert bottom[0].startswith("bottom line: CPU only (" if not gpus else "bottom line: CPU + ")
    assert bottom[1].startswith("  will measure:     throughput, latency and accuracy vs fp32 with ort")
    assert " ? " not in text and not any(line.rstrip().endswith("?") for line in text.splitlines())
    if not os.path.exists("/etc/nv_tegra_release"):
        assert "jtop.service" not in text.split("jetson:")[0]  # no restart advice for a service that cannot exist
    if not gpus:
        assert "W and mJ columns will be empty" in bottom[0] or "power and energy from" in bottom[1]
        assert "n/a      tensorrt" in text and "MISSING  tensorrt" not in text
