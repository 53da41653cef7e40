"""`edgebench doctor`: what this machine can run, and for everything it cannot, why and how to fix it."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from edgebench.backends import ort, trt_logic
from edgebench.backends.base import Env
from edgebench.device.jetson import doctor_lines
from edgebench.telemetry.registry import sampler_availability

# (import name, pip/dist hint, what it enables)
PACKAGES = [
    ("numpy", "pip install numpy", "core"),
    ("yaml", "pip install pyyaml", "profiles and model specs"),
    ("pydantic", "pip install 'pydantic>=2.6'", "checking profiles, model specs and backend options"),
    ("psutil", "pip install psutil", "host telemetry (CPU, memory)"),
    ("onnx", "pip install 'edgebench[ort]'", "ONNX checks, fp16/int8 variants"),
    ("onnxruntime", "pip install 'edgebench[ort]' (or onnxruntime-gpu for CUDA)", "ort backend"),
    ("torch", "pip install 'edgebench[export]'", "exporting models to ONNX (not needed when given an ONNX)"),
    ("torchvision", "pip install 'edgebench[export]'", "torchvision model specs"),
    ("tensorrt", "TensorRT comes with JetPack on Jetson (apt: nvidia-jetpack); on x86 install TensorRT from NVIDIA",
     "trt backend (engines, DLA)"),
    ("cuda", "pip install 'edgebench[trt]' (cuda-python; or a CUDA build of torch)", "TensorRT device buffers"),
    ("pynvml", "pip install 'edgebench[gpu]' (nvidia-ml-py)", "NVML power/energy on discrete GPUs"),
    ("jtop", "sudo pip3 install jetson-stats (then reboot or start jtop.service)", "jtop telemetry on Jetson"),
    ("rich", "pip install 'edgebench[progress]'", "coloured progress and tables"),
    ("matplotlib", "pip install 'edgebench[report]'", "figures"),
]


def package_lines() -> list[str]:
    from importlib import metadata

    lines = []
    for mod, hint, purpose in PACKAGES:
        spec = importlib.util.find_spec(mod)
        if spec is None:
            lines.append(f"  MISSING  {mod:<12} {purpose}: {hint}")
            continue
        version = "?"
        for dist in (mod, {"yaml": "pyyaml", "pynvml": "nvidia-ml-py", "jtop": "jetson-stats"}.get(mod, mod),
                     "onnxruntime-gpu"):
            try:
                version = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
        lines.append(f"  ok       {mod:<12} {version:<14} {purpose}")
    return lines


def backend_lines() -> list[str]:
    env = Env.detect()
    lines = []
    if env.ort_missing_reason:
        lines.append(f"  ort      unavailable: {env.ort_missing_reason}")
    else:
        lines.append(f"  ort      onnxruntime {env.ort_version}, providers: {', '.join(env.ort_providers)}")
        if "CUDAExecutionProvider" not in env.ort_providers:
            why = ("no NVIDIA GPU found" if env.cuda_devices == 0
                   else "installed onnxruntime has no CUDA provider: pip install onnxruntime-gpu")
            lines.append(f"           CUDA placements unavailable: {why}")
        elif "TensorrtExecutionProvider" in env.ort_providers:
            nvinfer = ort.libnvinfer_missing_reason()
            lines.append(f"           ort_provider=tensorrt: {'available' if nvinfer is None else 'unavailable: ' + nvinfer}")
    lines.append("  null     available (measures the harness's own per-inference overhead)")

    trt = trt_logic.detect_env()
    if trt.trt_version is None:
        lines.append(f"  trt      unavailable: {trt.missing_reason}")
    else:
        dla = "unknown" if trt.dla_cores is None else str(trt.dla_cores)
        lines.append(f"  trt      TensorRT {trt.trt_version}; DLA cores: {dla}")
    lines.append(f"  cpu      {env.cpu_count} usable cores ({env.machine}); CUDA devices: {env.cuda_devices}")
    return lines


def sampler_lines() -> list[str]:
    lines = []
    for name, why in sampler_availability().items():
        lines.append(f"  {name:<10} {'available' if why is None else 'unavailable: ' + why}")
    return lines


def jetson_lines(root: str | Path = "/") -> list[str]:
    """L4T/JetPack, board, nvpmodel, clocks, CUDA, TensorRT, DLAs, jtop service (edgebench.device.jetson)."""

    return doctor_lines(root)


def report() -> str:
    parts = ["edgebench doctor", "", "packages:", *package_lines(), "", "backends:", *backend_lines(),
             "", "telemetry samplers:", *sampler_lines(), "", "jetson:", *jetson_lines()]
    cache = os.environ.get("EDGEBENCH_CACHE")
    parts += ["", f"artifact cache: {cache or '~/.cache/edgebench (set EDGEBENCH_CACHE to move it)'}"]
    return "\n".join(parts)
