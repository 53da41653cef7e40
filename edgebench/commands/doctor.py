"""`edgebench doctor`: what this machine can run, and for everything it cannot, why and how to fix it; it ends with
a bottom line of what this machine will and will not measure (which row columns stay empty here).

Advice applies to this machine: hardware it lacks (an NVIDIA GPU, a Jetson) is named as absent, not as a package to
install or a service to restart; a package found without a version says so in words.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from edgebench.backends import ort, trt_logic
from edgebench.backends.base import Env
from edgebench.device.jetson import doctor_lines, is_jetson
from edgebench.telemetry.host import rapl_status
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
GPU_PACKAGES = ("tensorrt", "cuda", "pynvml")  # of use only with an NVIDIA GPU (a Jetson has one)
JETSON_PACKAGES = ("jtop",)
JETSON_SAMPLERS = ("jtop", "ina3221", "tegrastats", "jetson_throttle")  # read a Jetson's own hardware
DIST_NAMES = {"yaml": "pyyaml", "pynvml": "nvidia-ml-py", "jtop": "jetson-stats"}


@dataclass(frozen=True)
class Machine:
    """What decides which advice applies here and what the bottom line says."""

    cpu_count: int
    arch: str
    jetson: bool
    gpus: int  # NVIDIA GPUs the driver lists (a Jetson's integrated GPU counts as 1)
    backends: tuple[str, ...]  # backends that can run rows here
    power: tuple[str, ...]  # what measures power here, e.g. "RAPL (CPU package)", "NVML (GPU board)"
    no_power: tuple[str, ...]  # why each power source is absent
    throttle: tuple[str, ...]  # samplers that read throttling here

    @property
    def has_gpu(self) -> bool:
        return self.gpus > 0 or self.jetson


def machine(env: Env | None = None, samplers: dict[str, str | None] | None = None, jetson: bool | None = None,
            rapl: str | None | bool = False, torch: bool | None = None, trt: bool | None = None) -> Machine:
    """This machine's facts (each argument overrides a detection, for tests)."""
    env = env or Env.detect()
    samplers = sampler_availability() if samplers is None else samplers
    jetson = is_jetson() if jetson is None else jetson
    rapl_why = rapl_status() if rapl is False else rapl
    torch = importlib.util.find_spec("torch") is not None if torch is None else torch
    trt = trt_logic.detect_env().trt_version is not None if trt is None else trt
    gpus = env.cuda_devices or (1 if jetson else 0)
    backends = [b for b, ok in (("ort", not env.ort_missing_reason), ("torch", torch), ("trt", trt and gpus > 0),
                                ("null", True)) if ok]
    power, no_power = [], []
    if samplers.get("host") is None and rapl_why is None:
        power.append("RAPL (CPU package)")
    else:
        no_power.append(f"no CPU power counter: {samplers.get('host') or rapl_why}")
    if samplers.get("nvml") is None:
        power.append("NVML (GPU board)")
    elif not gpus:
        no_power.append("no NVIDIA GPU for NVML")
    else:
        no_power.append(f"NVML unreadable ({samplers['nvml']})")
    jetson_power = [n for n in ("jtop", "ina3221", "tegrastats") if samplers.get(n) is None]
    if jetson_power:
        power.append(f"{'/'.join(jetson_power)} (Jetson module)")
    elif not jetson:
        no_power.append("not a Jetson (no INA3221 rails)")
    else:
        no_power.append("no Jetson power source readable (jtop, ina3221, tegrastats: see above)")
    throttle = tuple(n for n in ("nvml", "jetson_throttle") if samplers.get(n) is None)
    return Machine(env.cpu_count, env.machine, jetson, gpus, tuple(backends), tuple(power), tuple(no_power), throttle)


def _version(mod: str) -> str | None:
    from importlib import metadata

    dists = [mod, DIST_NAMES.get(mod, mod), *metadata.packages_distributions().get(mod, []), "onnxruntime-gpu"]
    for dist in dists:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def package_lines(m: Machine | None = None) -> list[str]:
    """One line per package: ok with its version, MISSING with how to install it, or n/a where it needs hardware
    this machine lacks (then no install advice)."""
    lines = []
    for mod, hint, purpose in PACKAGES:
        found = importlib.util.find_spec(mod) is not None
        lacks = None
        if m is not None and mod in GPU_PACKAGES and not m.has_gpu:
            lacks = "this machine has no NVIDIA GPU"
        elif m is not None and mod in JETSON_PACKAGES and not m.jetson:
            lacks = "this machine is not a Jetson"
        if lacks:
            state = "installed, unused" if found else "not installed, not needed"
            where = " (TensorRT comes with JetPack on a Jetson)" if mod == "tensorrt" else ""
            lines.append(f"  n/a      {mod:<12} {purpose}: {state}: {lacks}{where}")
        elif not found:
            lines.append(f"  MISSING  {mod:<12} {purpose}: {hint}")
        else:
            lines.append(f"  ok       {mod:<12} {_version(mod) or '(version unknown)':<14} {purpose}")
    return lines


def backend_lines(env: Env | None = None) -> list[str]:
    env = env or Env.detect()
    lines = []
    if env.ort_missing_reason:
        lines.append(f"  ort      unavailable: {env.ort_missing_reason}")
    else:
        lines.append(f"  ort      onnxruntime {env.ort_version}, providers: {', '.join(env.ort_providers)}")
        if "CUDAExecutionProvider" not in env.ort_providers:
            why: str | None = ("no NVIDIA GPU found" if env.cuda_devices == 0
                   else "installed onnxruntime has no CUDA provider: pip install onnxruntime-gpu")
            lines.append(f"           CUDA placements unavailable: {why}")
        elif "TensorrtExecutionProvider" in env.ort_providers:
            nvinfer = ort.libnvinfer_missing_reason()
            lines.append(f"           ort_provider=tensorrt: {'available' if nvinfer is None else 'unavailable: ' + nvinfer}")
    lines.append("  null     available (measures the harness's own per-inference overhead)")

    trt = trt_logic.detect_env()
    if trt.trt_version is None:
        absent = trt.missing_reason if env.cuda_devices else "no NVIDIA GPU here (TensorRT builds engines for one)"
        lines.append(f"  trt      unavailable: {absent}")
    else:
        dla = "none found" if trt.dla_cores is None else str(trt.dla_cores)
        lines.append(f"  trt      TensorRT {trt.trt_version}; DLA cores: {dla}")
    lines.append(f"  cpu      {env.cpu_count} usable cores ({env.machine}); CUDA devices: {env.cuda_devices}")
    return lines


def sampler_lines(m: Machine | None = None, samplers: dict[str, str | None] | None = None) -> list[str]:
    """available, or why not; a Jetson sampler on another machine, or NVML with no GPU, just says so (no fix)."""
    lines = []
    for name, why in (sampler_availability() if samplers is None else samplers).items():
        if why is not None and m is not None and name in JETSON_SAMPLERS and not m.jetson:
            why = "not a Jetson (it reads a Jetson's own sensors)"
        elif why is not None and m is not None and name == "nvml" and not m.gpus:
            why = "no NVIDIA GPU"
        lines.append(f"  {name:<10} {'available' if why is None else 'unavailable: ' + why}")
    return lines


def jetson_lines(root: str | Path = "/") -> list[str]:
    """L4T/JetPack, board, nvpmodel, clocks, CUDA, TensorRT, DLAs, jtop service (edgebench.device.jetson)."""

    return doctor_lines(root)


def bottom_line(m: Machine) -> list[str]:
    """What this machine will and will not measure: the first line in a few words (e.g. 'CPU only; no power
    sensor: W and mJ columns will be empty'), then what rows measure and what stays empty, and why."""
    where = ("Jetson" if m.jetson else f"CPU + {m.gpus} NVIDIA GPU{'s' if m.gpus > 1 else ''}" if m.gpus
             else "CPU only")
    head = f"{where} ({m.cpu_count} cores, {m.arch})"
    if not m.power:
        head += "; no power sensor: W and mJ columns will be empty"
    will = [f"throughput, latency and accuracy vs fp32 with {', '.join(m.backends)} "
            f"({'GPU and CPU' if m.has_gpu else 'CPU'} placements)"]
    if m.power:
        will.append(f"power and energy from {', '.join(m.power)}")
    if m.throttle:
        will.append(f"throttling ({', '.join(m.throttle)})")
    wont = []
    if not m.has_gpu:
        wont.append("GPU, TensorRT and DLA rows (no NVIDIA GPU: they are skipped with that reason)")
    elif "trt" not in m.backends:
        wont.append("TensorRT rows (TensorRT not installed: see trt above)")
    if not m.power:
        wont.append(f"power and energy ({'; '.join(m.no_power)}): power_w_*, energy_* and mJ columns stay empty")
    elif m.no_power and m.power == ("RAPL (CPU package)",):
        wont.append("GPU or board power (only the CPU package is measured: power_scope cpu-package)")
    if not m.throttle:
        wont.append("throttling (no GPU or Jetson clocks to watch): the throttled column stays empty")
    pad = " " * len("  will not measure: ")
    return [f"bottom line: {head}", f"  will measure:     {'; '.join(will)}",
            *(f"{'  will not measure: ' if i == 0 else pad}{w}" for i, w in enumerate(wont))]


def report() -> str:
    env = Env.detect()
    samplers = sampler_availability()
    m = machine(env, samplers)
    parts = ["edgebench doctor", "", "packages:", *package_lines(m), "", "backends:", *backend_lines(env),
             "", "telemetry samplers:", *sampler_lines(m, samplers), "", "jetson:", *jetson_lines()]
    cache = os.environ.get("EDGEBENCH_CACHE")
    parts += ["", f"artifact cache: {cache or '~/.cache/edgebench (set EDGEBENCH_CACHE to move it)'}", "",
              *bottom_line(m)]
    return "\n".join(parts)
