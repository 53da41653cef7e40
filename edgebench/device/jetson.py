"""Jetson metadata: L4T / JetPack, board, power mode, clocks, CUDA, TensorRT, DLAs.

Files are read under a root directory passed in (default "/"), so tests point it at a fixture
tree. Commands (`nvpmodel -q`, `jetson_clocks --show`, `systemctl is-active jtop`) are looked up
on PATH and run with a timeout and no stdin. Nothing here raises because something is missing:
every value is None with a stated reason.

L4T -> JetPack: NVIDIA's JetPack archive (https://developer.nvidia.com/embedded/jetpack-archive),
the same table jetson-stats 7.2.2 keeps (jtop/core/jetson_variables.py, NVIDIA_JETPACK). A release
missing from the table maps to its family (R32.7 -> 4.6.x, R35 -> 5.x, R36 -> 6.x) and says so.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edgebench.device.facts import Facts

JETPACK_SOURCE = "NVIDIA JetPack archive (developer.nvidia.com/embedded/jetpack-archive)"

# exact L4T release -> JetPack release
L4T_TO_JETPACK: dict[str, str] = {
    "32.1.0": "4.2", "32.2.0": "4.2.1", "32.2.1": "4.2.2", "32.2.3": "4.2.3", "32.3.1": "4.3",
    "32.4.2": "4.4 DP", "32.4.3": "4.4", "32.4.4": "4.4.1", "32.5.0": "4.5", "32.5.1": "4.5.1",
    "32.5.2": "4.5.1", "32.6.1": "4.6", "32.7.1": "4.6.1", "32.7.2": "4.6.2", "32.7.3": "4.6.3",
    "32.7.4": "4.6.4", "32.7.5": "4.6.5", "32.7.6": "4.6.6",
    "34.1.0": "5.0 DP", "34.1.1": "5.0.1 DP", "35.1.0": "5.0.2", "35.2.1": "5.1", "35.3.1": "5.1.1",
    "35.4.1": "5.1.2", "35.5.0": "5.1.3", "35.6.0": "5.1.4", "35.6.1": "5.1.5", "35.6.2": "5.1.5",
    "36.2.0": "6.0 DP", "36.3.0": "6.0", "36.4.0": "6.1", "36.4.3": "6.2", "36.4.4": "6.2.1",
    "38.2.0": "7.0",
}
# release family when the exact release is not in the table
L4T_FAMILY: list[tuple[str, str]] = [("32.7", "4.6.x"), ("32", "4.x"), ("34", "5.0 DP"), ("35", "5.x"),
                                     ("36", "6.x"), ("38", "7.x")]

DLA_SYSFS_GLOBS = (
    "sys/bus/platform/devices/*.nvdla[0-9]",  # every platform device is linked here, whatever the release
    "sys/devices/platform/*.nvdla[0-9]",  # L4T R32
    "sys/devices/platform/host1x/*.nvdla[0-9]",  # L4T R35
    "sys/devices/platform/bus@0/*.host1x/*.nvdla[0-9]",  # L4T R36
)
DLA_DEV_GLOB = "dev/nvhost-nvdla[0-9]"
TENSORRT_DEB_PACKAGES = ("tensorrt", "libnvinfer10", "libnvinfer8", "libnvinfer7", "nvidia-tensorrt")
TENSORRT_HINT = ("TensorRT comes with JetPack: sudo apt install nvidia-tensorrt (or tensorrt); "
                 "Python bindings: sudo apt install python3-libnvinfer")
JTOP_HINT = "sudo pip3 install jetson-stats (installs and starts jtop.service)"

Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


def run_command(argv: list[str], timeout_s: float = 15.0) -> subprocess.CompletedProcess[str]:
    """Run a command with no stdin (nvpmodel may prompt) and a timeout; raises FileNotFoundError if absent."""
    path = shutil.which(argv[0])
    if path is None:
        raise FileNotFoundError(2, "not found on PATH", argv[0])
    return subprocess.run([path, *argv[1:]], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=timeout_s)


# --------------------------------------------------------------------------- L4T / JetPack

@dataclass(frozen=True)
class L4TRelease:
    major: int
    revision: str  # e.g. "3.0", "7.1", "4.1"
    raw: str  # first line of etc/nv_tegra_release
    board: str | None = None  # BOARD: t186ref / generic / ...

    @property
    def version(self) -> str:
        """Three-part release, e.g. '36.3.0', '32.7.1'."""
        parts = [str(self.major), *self.revision.split(".")]
        while len(parts) < 3:
            parts.append("0")
        return ".".join(parts[:3])


_RELEASE = re.compile(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*([\d.]+)")
_BOARD = re.compile(r"BOARD:\s*([^,\s]+)")


def parse_l4t_release(text: str) -> L4TRelease:
    """'# R36 (release), REVISION: 3.0, GCID: ..., BOARD: generic, ...' -> L4TRelease(36, '3.0', ...)."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = _RELEASE.search(first)
    if m is None:
        raise ValueError(f"not an L4T release line: {first[:80]!r}")
    board = _BOARD.search(first)
    return L4TRelease(int(m.group(1)), m.group(2).rstrip("."), first, board.group(1) if board else None)


def read_l4t_release(root: str | Path = "/") -> L4TRelease:
    return parse_l4t_release((Path(root) / "etc" / "nv_tegra_release").read_text(errors="replace"))


def jetpack_for_l4t(version: str) -> tuple[str | None, str]:
    """(JetPack, source) for an L4T release like '36.3.0': ('6.0', source) from the table, ('6.x', why) from
    the release family, or (None, why)."""
    if version in L4T_TO_JETPACK:
        return L4T_TO_JETPACK[version], JETPACK_SOURCE
    for prefix, family in L4T_FAMILY:
        if version == prefix or version.startswith(prefix + "."):
            return family, f"L4T {version} is not in edgebench's table; R{prefix} is JetPack {family} ({JETPACK_SOURCE})"
    return None, f"L4T {version} belongs to no JetPack release edgebench knows"


def is_jetson(root: str | Path = "/") -> bool:
    """An L4T release file, or a device tree that names an NVIDIA Tegra SoC."""
    base = Path(root)
    if (base / "etc" / "nv_tegra_release").is_file():
        return True
    try:
        compatible = (base / "proc" / "device-tree" / "compatible").read_bytes()
    except OSError:
        return False
    return b"nvidia,tegra" in compatible


def board_model(root: str | Path = "/") -> str:
    """proc/device-tree/model without its trailing NUL, e.g. 'NVIDIA Jetson AGX Orin Developer Kit'."""
    base = Path(root)
    for rel in ("proc/device-tree/model", "sys/firmware/devicetree/base/model"):
        try:
            text = (base / rel).read_bytes().split(b"\x00", 1)[0].decode(errors="replace").strip()
        except OSError:
            continue
        if text:
            return text
    raise LookupError(f"no device-tree model under {base} (proc/device-tree/model)")


# --------------------------------------------------------------------------- power mode and clocks

@dataclass(frozen=True)
class PowerMode:
    id: int
    name: str

    def __str__(self) -> str:
        return f"{self.name} (id {self.id})"


def parse_nvpmodel_query(text: str) -> PowerMode:
    """`nvpmodel -q` output ('NV Power Mode: MAXN\\n0', maybe with NVPM warnings around) -> PowerMode."""
    lines = [ln.strip() for ln in text.splitlines()]
    for i, line in enumerate(lines):
        m = re.match(r"NV Power Mode:\s*(.+)$", line)
        if m is None:
            continue
        for nxt in lines[i + 1:]:
            if re.fullmatch(r"\d+", nxt):
                return PowerMode(int(nxt), m.group(1).strip())
        raise ValueError(f"nvpmodel -q: no mode id after {line!r}")
    raise ValueError(f"nvpmodel -q: no 'NV Power Mode:' line in {text.strip()[:120]!r}")


_POWER_MODEL = re.compile(r"POWER_MODEL:?\s+ID=(\d+)\s+NAME=([^\s>]+)")


def parse_power_models(text: str) -> dict[int, str]:
    """Mode id -> name from /etc/nvpmodel.conf ('< POWER_MODEL ID=0 NAME=MAXN >') or
    `nvpmodel -p --verbose` ('POWER_MODEL: ID=0 NAME=MAXN')."""
    return {int(m.group(1)): m.group(2) for m in _POWER_MODEL.finditer(text)}


def nvpmodel_conf_modes(root: str | Path = "/") -> dict[int, str]:
    path = Path(root) / "etc" / "nvpmodel.conf"
    modes = parse_power_models(path.read_text(errors="replace"))
    if not modes:
        raise LookupError(f"{path} defines no POWER_MODEL")
    return modes


def nvpmodel_mode(run: Runner = run_command) -> PowerMode:
    proc = run(["nvpmodel", "-q"])
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        raise LookupError(f"nvpmodel -q failed (exit {proc.returncode}): {err[-1] if err else 'no output'}")
    return parse_nvpmodel_query(proc.stdout)


def parse_jetson_clocks_show(text: str) -> dict[str, Any]:
    """Best effort from `jetson_clocks --show`: clocks are pinned ('on') when every CPU and the GPU
    run with MinFreq == MaxFreq (what `jetson_clocks` sets), else 'off'."""
    cpus = re.findall(r"^cpu\d+:.*?MinFreq=(\d+)\s+MaxFreq=(\d+)", text, re.MULTILINE)
    gpu = re.search(r"^GPU\s+MinFreq=(\d+)\s+MaxFreq=(\d+)", text, re.MULTILINE)
    if not cpus and gpu is None:
        raise ValueError("jetson_clocks --show printed no cpuN/GPU MinFreq/MaxFreq lines")
    pinned = [lo == hi for lo, hi in cpus] + ([gpu.group(1) == gpu.group(2)] if gpu else [])
    state = "on" if all(pinned) else "off"
    how = (f"inferred from jetson_clocks --show: MinFreq {'==' if state == 'on' else '!='} MaxFreq on "
           f"{'every' if state == 'on' else 'some'} CPU{' and the GPU' if gpu else ''}")
    return {"state": state, "how": how}


def jetson_clocks_state(run: Runner = run_command) -> dict[str, Any]:
    proc = run(["jetson_clocks", "--show"])
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        raise LookupError(f"jetson_clocks --show failed (exit {proc.returncode}; needs root): "
                          f"{err[-1] if err else 'no output'}")
    return parse_jetson_clocks_show(proc.stdout)


# --------------------------------------------------------------------------- CUDA, TensorRT, DLA

def cuda_version(root: str | Path = "/") -> str:
    """From usr/local/cuda/version.json ({"cuda": {"version": ...}}) or version.txt ('CUDA Version 10.2.300')."""
    base = Path(root) / "usr" / "local" / "cuda"
    try:
        data = json.loads((base / "version.json").read_text())
        return str(data["cuda"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        m = re.search(r"CUDA Version\s+([\d.]+)", (base / "version.txt").read_text())
    except OSError:
        m = None
    if m:
        return m.group(1)
    raise LookupError(f"no CUDA version in {base}/version.json or version.txt (CUDA comes with JetPack)")


def _dpkg_versions(root: Path, packages: tuple[str, ...]) -> dict[str, str]:
    status = root / "var" / "lib" / "dpkg" / "status"
    found: dict[str, str] = {}
    for block in status.read_text(errors="replace").split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", block, re.MULTILINE))
        if fields.get("Package") in packages and "installed" in fields.get("Status", "").split():
            found[fields["Package"]] = fields.get("Version", "?")
    return found


def tensorrt_version(root: str | Path = "/") -> dict[str, str]:
    """{'version', 'source'}: the Python module when root is '/' and it imports, else dpkg's status file."""
    base = Path(root)
    if base.resolve() == Path("/"):
        try:
            import tensorrt  # type: ignore[import-not-found]  # noqa: PLC0415 - heavy, optional

            return {"version": str(tensorrt.__version__), "source": "python: import tensorrt"}
        except Exception:  # noqa: BLE001 - fall back to the package database
            pass
    try:
        found = _dpkg_versions(base, TENSORRT_DEB_PACKAGES)
    except OSError as exc:
        raise LookupError(f"TensorRT not importable and {base}/var/lib/dpkg/status unreadable "
                          f"({exc.strerror}); {TENSORRT_HINT}") from None
    for pkg in TENSORRT_DEB_PACKAGES:
        if pkg in found:
            return {"version": found[pkg], "source": f"dpkg: {pkg}"}
    raise LookupError(f"TensorRT is not installed (no Python module, no {'/'.join(TENSORRT_DEB_PACKAGES)} "
                      f"package); {TENSORRT_HINT}")


def dla_count(root: str | Path = "/") -> dict[str, Any]:
    """{'count', 'source'}: TensorRT's builder.num_DLA_cores when root is '/' and TensorRT imports,
    else the nvdla devices in sysfs, else /dev/nvhost-nvdla* nodes."""
    base = Path(root)
    if base.resolve() == Path("/"):
        try:
            import tensorrt as trt  # type: ignore[import-not-found]  # noqa: PLC0415

            builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
            return {"count": int(builder.num_DLA_cores), "source": "tensorrt: Builder.num_DLA_cores"}
        except Exception:  # noqa: BLE001 - fall back to sysfs/dev
            pass
    names, source = dla_nodes(base)
    return {"count": len(names), "source": source}


def dla_nodes(root: str | Path = "/") -> tuple[list[str], str]:
    """(['nvdla0', 'nvdla1'], source) from the files alone (no TensorRT, no CUDA): the nvdla platform devices
    in sysfs, else /dev/nvhost-nvdlaN nodes. The one rule for edgebench.device.jetson and the trt backend."""
    base = Path(root)
    names: set[str] = set()
    for pattern in DLA_SYSFS_GLOBS:
        names.update(p.name.split(".", 1)[-1] for p in base.glob(pattern))
    if names:
        return sorted(names), f"sysfs: {', '.join(sorted(names))}"
    nodes = sorted(p.name for p in base.glob(DLA_DEV_GLOB))
    if nodes:
        return [n.removeprefix("nvhost-") for n in nodes], f"dev: {', '.join(nodes)}"
    return [], "no nvdla device in sysfs or /dev (this module has no DLA, e.g. Nano / Orin Nano)"


def jtop_service_state(root: str | Path = "/", run: Runner = run_command) -> dict[str, Any]:
    """{'active': bool|None, 'how'}: `systemctl is-active jtop`, else whether run/jtop.sock exists."""
    sock = Path(root) / "run" / "jtop.sock"
    try:
        proc = run(["systemctl", "is-active", "jtop"])
        state = proc.stdout.strip() or proc.stderr.strip()
        if state in ("active", "inactive", "failed", "activating", "deactivating", "unknown"):
            return {"active": state == "active", "how": f"systemctl is-active jtop: {state}"}
    except (OSError, subprocess.SubprocessError):
        pass
    exists = sock.exists()
    return {"active": exists, "how": f"{sock} {'exists' if exists else 'does not exist'} (systemctl not usable)"}


# --------------------------------------------------------------------------- all together

def jetson_info(root: str | Path = "/", run: Runner = run_command) -> dict[str, Any]:
    """Everything above for system.json; values None where unavailable, reasons in 'unavailable'."""
    facts = Facts()
    get, unavailable = facts.get, facts.unavailable
    release = get("l4t", lambda: read_l4t_release(root))
    info: dict[str, Any] = {"is_jetson": is_jetson(root), "l4t": None, "jetpack": None}
    if release is not None:
        info["l4t"] = release.version
        info["l4t_release_line"] = release.raw
        jetpack, how = jetpack_for_l4t(release.version)
        info["jetpack"] = jetpack
        info["jetpack_source"] = how
    mode = get("nvpmodel", lambda: nvpmodel_mode(run))
    info.update(
        board_model=get("board_model", lambda: board_model(root)),
        nvpmodel=None if mode is None else asdict(mode),
        jetson_clocks=get("jetson_clocks", lambda: jetson_clocks_state(run)),
        cuda=get("cuda", lambda: cuda_version(root)),
        tensorrt=get("tensorrt", lambda: tensorrt_version(root)),
        dla=get("dla", lambda: dla_count(root)),
        jtop_service=get("jtop_service", lambda: jtop_service_state(root, run)),
    )
    info["unavailable"] = unavailable
    return info


# --------------------------------------------------------------------------- doctor

JETPACK_PROVIDES = ("on a Jetson, JetPack provides: L4T (/etc/nv_tegra_release), CUDA, TensorRT with DLA support, "
                    "nvpmodel power modes, jetson_clocks, tegrastats and the INA3221 power rails; "
                    "jtop comes from `sudo pip3 install jetson-stats`")


def doctor_lines(root: str | Path = "/", run: Runner = run_command) -> list[str]:
    """The `edgebench doctor` section for Jetson boards: what is there, and for what is missing, why and the fix."""
    if not is_jetson(root):
        where = Path(root) / "etc" / "nv_tegra_release"
        return [f"  not a Jetson (no {where}, no nvidia,tegra device tree): Jetson checks do not apply",
                f"  {JETPACK_PROVIDES}"]
    info = jetson_info(root, run)
    why = info["unavailable"]
    missing: list[str] = []

    def line(label: str, value: str | None, key: str, hint: str = "") -> str:
        if value is not None:
            return f"  {label:<14} {value}"
        missing.append(label)
        return f"  {label:<14} MISSING: {why.get(key, 'unknown')}{('; ' + hint) if hint and hint not in why.get(key, '') else ''}"

    jp = None
    if info["l4t"] is not None:
        jp = f"L4T R{info['l4t']} -> JetPack {info['jetpack'] or '?'} ({info.get('jetpack_source', '')})"
    mode = info["nvpmodel"]
    clocks = info["jetson_clocks"]
    trt = info["tensorrt"]
    dla = info["dla"]
    jtop = info["jtop_service"]
    lines = [
        line("L4T/JetPack", jp, "l4t"),
        line("board", info["board_model"], "board_model"),
        line("nvpmodel", None if mode is None else f"{mode['name']} (id {mode['id']})", "nvpmodel",
             "nvpmodel ships with L4T; run doctor as root to read it"),
        line("jetson_clocks", None if clocks is None else f"{clocks['state']} ({clocks['how']})", "jetson_clocks"),
        line("CUDA", info["cuda"], "cuda", "CUDA comes with JetPack: sudo apt install nvidia-jetpack"),
        line("TensorRT", None if trt is None else f"{trt['version']} ({trt['source']})", "tensorrt", TENSORRT_HINT),
        line("DLA cores", None if dla is None else f"{dla['count']} ({dla['source']})", "dla"),
    ]
    if jtop is None or not jtop["active"]:
        missing.append("jtop service")
        how = why.get("jtop_service", "") if jtop is None else jtop["how"]
        lines.append(f"  {'jtop service':<14} not running ({how}); {JTOP_HINT}")
    else:
        lines.append(f"  {'jtop service':<14} active ({jtop['how']})")
    lines.append(f"  missing: {', '.join(missing) if missing else 'nothing'}")
    return lines
