"""One reading of the accelerator's temperature and clock between rows (the cooldown and temp_c_start/end).

Not a sampler (nothing runs during the window): `read()` returns (temperature C, clock MHz), either None
when not readable, with `note` saying why. Two sources:
- sysfs (Jetson, and any Linux with thermal zones): the hottest of the GPU/SoC/Tj thermal zones (m°C) and
  the integrated GPU's devfreq cur_freq (Hz); `root` is a directory (fixture trees in the tests, "/" on a board);
- nvml (discrete GPUs): NVML_TEMPERATURE_GPU and the SM clock of one device; `nvml` is the pynvml module
  (a fake in the tests), imported lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from edgebench.errors import EdgebenchError, exc_text
from edgebench.telemetry import nvml as nvml_module  # module-qualified: tests stand in for _import_nvml
from edgebench.telemetry.jetson_throttle import _gpu_devfreq

# thermal zone types that follow the accelerator: Jetson gpu-thermal / soc*-thermal / tj-thermal (the max of
# all), GPU-therm / SOC-therm on older boards; x86_pkg_temp as a host's package temperature
ZONE_HINTS = ("gpu", "soc", "tj", "cv", "x86_pkg_temp")


class ThermalProbe(Protocol):
    name: str
    note: str

    def read(self) -> tuple[float | None, float | None]: ...


class SysfsProbe:
    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)
        self.name = f"sysfs:{self.root}"
        self.note = ""
        thermal = self.root / "sys/class/thermal"
        if not any(thermal.glob("thermal_zone*")):
            thermal = self.root / "sys/devices/virtual/thermal"
        self.zones: list[tuple[str, Path]] = []
        for zdir in sorted(thermal.glob("thermal_zone*")):
            kind = (zdir / "type").read_text().strip() if (zdir / "type").is_file() else ""
            if any(h in kind.lower() for h in ZONE_HINTS) and (zdir / "temp").is_file():
                self.zones.append((kind, zdir / "temp"))
        self.devfreq = _gpu_devfreq(self.root)
        missing = []
        if not self.zones:
            missing.append(f"no GPU/SoC thermal zone under {thermal}")
        if self.devfreq is None:
            missing.append(f"no GPU devfreq node under {self.root / 'sys/class/devfreq'} (clock not compared)")
        self.note = "; ".join(missing)

    def read(self) -> tuple[float | None, float | None]:
        temps = []
        for _kind, path in self.zones:
            try:
                temps.append(int(path.read_text().strip()) / 1000.0)
            except (OSError, ValueError):
                continue
        clock = None
        if self.devfreq is not None:
            try:
                clock = int((self.devfreq / "cur_freq").read_text().strip()) / 1e6
            except (OSError, ValueError):
                clock = None
        return (max(temps) if temps else None), clock


class NvmlProbe:
    def __init__(self, device_index: int = 0, nvml: Any = None) -> None:
        self.nvml = nvml if nvml is not None else nvml_module._import_nvml()
        self.name = f"nvml:{device_index}"
        self.note = ""
        try:
            self.nvml.nvmlInit()
            self.handle = self.nvml.nvmlDeviceGetHandleByIndex(device_index)
        except Exception as exc:  # noqa: BLE001 - NVMLError and its subclasses
            raise EdgebenchError(f"NVML cannot open GPU {device_index}: {exc_text(exc)}") from None

    def read(self) -> tuple[float | None, float | None]:
        temp = clock = None
        try:
            temp = float(self.nvml.nvmlDeviceGetTemperature(self.handle, self.nvml.NVML_TEMPERATURE_GPU))
        except Exception as exc:  # noqa: BLE001
            self.note = f"NVML temperature: {exc_text(exc)}"
        try:
            clock = float(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
        except Exception as exc:  # noqa: BLE001
            self.note = f"NVML SM clock: {exc_text(exc)}"
        return temp, clock


def make_probe(source: str, root: str | Path = "/", gpu: bool = False, nvml: Any = None) -> ThermalProbe:
    """source: 'sysfs', 'nvml', or 'auto' (nvml when the sweep uses a CUDA GPU, else sysfs)."""
    if source == "nvml" or (source == "auto" and gpu):
        return NvmlProbe(0, nvml)
    return SysfsProbe(root)
