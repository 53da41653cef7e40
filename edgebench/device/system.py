"""What system.json records so a run can be reproduced: versions, OS, CPU, memory, board.

`collect_system_info` never raises because something is missing or unreadable: the value is
None and `unavailable["<key>"]` says why. Heavy packages are not imported except
onnxruntime (lazily, for its provider list); versions come from installed package metadata.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgebench import __version__
from edgebench.device import jetson
from edgebench.device.facts import Facts, why
from edgebench.telemetry.nvml import list_gpus

PACKAGES = (
    "numpy", "onnx", "onnxscript", "onnxruntime", "onnxruntime-gpu", "torch", "torchvision", "psutil",
    "tensorrt", "jetson-stats", "nvidia-ml-py", "pyyaml", "rich", "pandas", "matplotlib",
)
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent


def collect_system_info(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-able description of this machine and software; `extra` keys are merged in last."""

    facts = Facts()
    get, unavailable = facts.get, facts.unavailable

    info: dict[str, Any] = {
        "edgebench_version": __version__,
        "collected_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hostname": get("hostname", socket.gethostname),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "platform": get("platform", platform.platform),
        "machine": platform.machine(),
        "kernel": get("kernel", lambda: f"{platform.release()} {platform.version()}".strip()),
        "os_release": get("os_release", _os_release),
        "board": get("board", _board),
        "cpu": _cpu(get),
        "memory": get("memory", _memory),
        "packages": _packages(unavailable),
        "onnxruntime_providers": get("onnxruntime_providers", _ort_providers),
        "git": get("git", _git),
        "cuda_mps": get("cuda_mps", cuda_mps_state),
        "gpus": get("gpus", _gpus),  # NVML: index, name, UUID, PCI bus id (rows' gpu<N>_ channels name the index)
    }

    if jetson.is_jetson("/"):  # L4T/JetPack, board, nvpmodel mode, jetson_clocks, CUDA, TensorRT, DLAs
        info["jetson"] = get("jetson", jetson.jetson_info)
    info["unavailable"] = unavailable
    if extra:
        info.update(extra)
    return info


def _gpus() -> list[dict[str, Any]]:
    return list_gpus()


def _os_release() -> dict[str, str]:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        if os.path.exists(path):
            out: dict[str, str] = {}
            for line in Path(path).read_text().splitlines():
                key, sep, value = line.partition("=")
                if sep and key.strip() in ("NAME", "VERSION", "VERSION_ID", "PRETTY_NAME", "ID"):
                    out[key.strip()] = value.strip().strip('"')
            return out
    raise FileNotFoundError(2, "No such file or directory", "/etc/os-release")


def board_name() -> str:
    """The board in one line: device-tree model (Jetson), else DMI product name; '' when neither is readable."""
    try:
        board = _board()
    except LookupError:
        return ""
    return board.get("model") or board.get("dmi_product") or ""


def _board() -> dict[str, str]:
    """Device-tree model (Jetson / ARM boards), DMI product (x86), L4T release (Jetson)."""
    sources = {
        "model": ("/proc/device-tree/model", "/sys/firmware/devicetree/base/model"),
        "dmi_product": ("/sys/class/dmi/id/product_name",),
        "dmi_vendor": ("/sys/class/dmi/id/sys_vendor",),
        "l4t_release": ("/etc/nv_tegra_release",),
    }
    out: dict[str, str] = {}
    for key, paths in sources.items():
        for path in paths:
            try:
                text = Path(path).read_text(errors="replace").replace("\x00", "").strip()
            except OSError:
                continue
            if text:
                out[key] = text.splitlines()[0]
                break
    if not out:
        raise LookupError("no device-tree model, DMI product or L4T release readable")
    return out


def _cpu(get: Callable[[str, Callable[[], Any]], Any]) -> dict[str, Any]:
    return {
        "model": get("cpu.model", _cpu_model),
        "logical_cores": os.cpu_count(),
        "physical_cores": get("cpu.physical_cores", _physical_cores),
        "usable_cores": get("cpu.usable_cores", lambda: len(os.sched_getaffinity(0))),
        "max_freq_mhz": get("cpu.max_freq_mhz", _max_freq_mhz),
        "governor": get("cpu.governor", _governor),
        "int8_dot_flags": get("cpu.int8_dot_flags", _int8_dot_flags),
    }


INT8_DOT_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")  # int8 dot products in 32-bit sums


def _int8_dot_flags() -> list[str]:
    """The CPU's int8 dot-product instructions (x86 VNNI/AMX, Arm dot product / int8 matrix multiply) that
    ONNX Runtime's int8 kernels use; [] when it has none (x86 without them: 16-bit pair sums, VPMADDUBSW)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            have = set(value.split())
            return [f for f in INT8_DOT_FLAGS if f in have]
    raise LookupError("no flags line in /proc/cpuinfo")


def _cpu_model() -> str:
    keys = ("model name", "Hardware", "Processor", "cpu model")
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() in keys and value.strip():
                return value.strip()
    except OSError:
        pass
    model = platform.processor()
    if model:
        return model
    raise LookupError("no CPU model in /proc/cpuinfo or platform.processor()")


def _physical_cores() -> int:
    import psutil

    n = psutil.cpu_count(logical=False)
    if not n:
        raise LookupError("psutil cannot tell physical cores here")
    return int(n)


def _max_freq_mhz() -> float:
    import psutil

    freq = psutil.cpu_freq()
    if freq is None or not freq.max:
        raise LookupError("CPU frequency not exposed (no cpufreq)")
    return float(freq.max)


def _governor() -> str:
    """scaling_governor of every CPU; one value when they agree, else 'cpu0=...,cpu1=...'."""
    found: dict[str, str] = {}
    for path in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        try:
            found[path.parent.parent.name] = path.read_text().strip()
        except OSError:
            continue
    if not found:
        raise LookupError("no readable /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor")
    values = set(found.values())
    return values.pop() if len(values) == 1 else ",".join(f"{k}={v}" for k, v in found.items())


def _memory() -> dict[str, float]:
    import psutil

    vm = psutil.virtual_memory()
    return {"total_mib": round(vm.total / 2**20, 1), "available_mib": round(vm.available / 2**20, 1)}


def _packages(unavailable: dict[str, str]) -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
            unavailable[f"packages.{name}"] = "not installed"
        except Exception as exc:
            out[name] = None
            unavailable[f"packages.{name}"] = why(exc)
    return out


def _ort_providers() -> list[str]:
    import onnxruntime

    return list(onnxruntime.get_available_providers())


def _git() -> dict[str, Any]:
    if not (PROJECT_ROOT / ".git").exists():
        raise LookupError(f"{PROJECT_ROOT} is not a git checkout (installed package?)")

    def git(*args: str) -> str:
        proc = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), *args], capture_output=True, text=True, timeout=10
        )
        if proc.returncode != 0:
            err = proc.stderr.strip().splitlines()
            raise LookupError(f"git {' '.join(args)} failed: {err[0] if err else f'exit {proc.returncode}'}")
        return proc.stdout.strip()

    try:
        commit = git("rev-parse", "--verify", "-q", "HEAD")
    except LookupError:
        raise LookupError(f"{PROJECT_ROOT} is a git checkout without a commit yet") from None
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return {"commit": commit, "dirty": dirty}


MPS_PROCESS_NAMES = ("nvidia-cuda-mps-control", "nvidia-cuda-mps-server")


def cuda_mps_state(process_names: list[str] | None = None, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Whether CUDA MPS is active: its daemons running, and the pipe directory clients would use.
    Recorded only; edgebench never starts or stops MPS."""
    import psutil

    env = os.environ if environ is None else environ
    names = process_names if process_names is not None else [p.info["name"] or "" for p in
                                                            psutil.process_iter(["name"])]
    running = sorted({n for n in names if n in MPS_PROCESS_NAMES})
    pipe_dir = env.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
    return {"active": bool(running), "daemons": running, "pipe_directory": pipe_dir,
            "pipe_directory_exists": os.path.isdir(pipe_dir)}
