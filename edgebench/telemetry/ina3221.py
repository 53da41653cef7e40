"""INA3221 sampler: Jetson power rails read straight from sysfs, no service, 10-100 Hz.

Layouts (the ones jetson-stats reads too), under <root>/sys/bus/i2c/devices/<bus-addr>/ whose `name`
contains "ina3221" (JetPack 5/6 `ina3221`, JetPack 4 `ina3221x`):
  JetPack 5/6 hwmon  hwmon/hwmonN/in{K}_label, in{K}_input (bus voltage, mV), curr{K}_input (mA)
                     (label "NC" = not connected, and channel 7 "sum of shunt voltages" are skipped)
  JetPack 4 iio      iio:deviceN/rail_name_{K}, in_voltage{K}_input (mV), in_current{K}_input (mA),
                     in_power{K}_input (mW, used when present)
Rail power = mV * mA / 1000 (mW, not truncated: jtop's int() differs by < 1 mW per rail).

Channels: power_total_mw and power_<domain>_mw as jetson_rails maps this board (its note, saying
which rail(s) make the total and whether that is the real board input, goes into the timeline),
and rail_<NAME>_mw per rail. No energy counter: the row integrates power_total_mw over its window.
A read that fails mid-run leaves NaN (never 0) and a note. The root directory is passed in.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from edgebench.telemetry.base import Channel, PollingSampler, Timeline
from edgebench.telemetry.jetson_rails import RailMap, rail_channel, rail_map

_HWMON_LABEL = re.compile(r"^in(\d+)_label$")
_IIO_LABEL = re.compile(r"^rail_name_(\d+)$")
SUM_OF_SHUNTS_CHANNEL = 7


@dataclass(frozen=True)
class Rail:
    name: str  # label as the driver writes it, e.g. "VDD_GPU_SOC"
    device: str  # i2c device dir name, e.g. "1-0040"
    volt_path: Path | None  # mV
    curr_path: Path | None  # mA
    power_path: Path | None = None  # mW (JetPack 4 iio only)

    def read_mw(self) -> float:
        if self.power_path is not None:
            return float(_read_int(self.power_path))
        assert self.volt_path is not None and self.curr_path is not None
        return _read_int(self.volt_path) * _read_int(self.curr_path) / 1000.0


def _read_int(path: Path) -> int:
    with open(path) as fh:
        text = fh.read().strip()
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        raise ValueError(f"{path}: not an integer: {text[:40]!r}") from None


def _read_text(path: Path) -> str:
    with open(path) as fh:
        return fh.read().strip()


def i2c_devices_dir(sysfs_root: str | Path) -> Path:
    return Path(sysfs_root) / "sys" / "bus" / "i2c" / "devices"


def discover_rails(sysfs_root: str | Path = "/") -> tuple[list[Rail], list[str]]:
    """Every INA3221 rail under the root, and notes on what was skipped or unreadable."""
    base = i2c_devices_dir(sysfs_root)
    notes: list[str] = []
    try:
        devices = sorted(base.iterdir())
    except FileNotFoundError:
        return [], [f"INA3221 not available: {base} does not exist (not a Jetson, or sysfs not mounted here)"]
    except OSError as exc:
        return [], [f"INA3221 not readable: {base}: {exc.strerror or exc}"]
    rails: list[Rail] = []
    found_chip = False
    for dev in devices:
        try:
            chip = _read_text(dev / "name").lower()
        except OSError:
            continue
        if "ina3221" not in chip:
            continue
        found_chip = True
        for sub in sorted(dev.iterdir()) if dev.is_dir() else []:
            if sub.name == "hwmon" and sub.is_dir():
                for hw in sorted(sub.iterdir()):
                    rails += _hwmon_rails(dev.name, hw, notes)
            elif sub.name.startswith("iio:device") and sub.is_dir():
                rails += _iio_rails(dev.name, sub, notes)
    if not found_chip:
        return [], [f"INA3221 not available: no device under {base} has a name containing 'ina3221'"]
    if not rails:
        notes.append(f"INA3221 found under {base} but no readable rail (no hwmon/ or iio:device with labels)")
    names = [r.name for r in rails]
    dups = {n for n in names if names.count(n) > 1}
    if dups:  # keep both, tell them apart by device
        rails = [Rail(f"{r.name}@{r.device}", r.device, r.volt_path, r.curr_path, r.power_path)
                 if r.name in dups else r for r in rails]
        notes.append(f"INA3221 rail label(s) {', '.join(sorted(dups))} appear on several devices: named NAME@<bus-addr>")
    return rails, notes


def _labelled_channels(folder: Path, pattern: re.Pattern[str], notes: list[str]) -> Iterator[tuple[int, str]]:
    """(channel number, label) of every label file in `folder` whose name matches `pattern`."""
    for item in sorted(folder.iterdir()):
        m = pattern.match(item.name)
        if not m:
            continue
        try:
            label = _read_text(item)
        except OSError as exc:
            notes.append(f"INA3221 {item}: unreadable label ({exc.strerror or exc}); rail skipped")
            continue
        yield int(m.group(1)), label


def _hwmon_rails(device: str, hw: Path, notes: list[str]) -> list[Rail]:
    rails = []
    for k, label in _labelled_channels(hw, _HWMON_LABEL, notes):
        if k == SUM_OF_SHUNTS_CHANNEL or label.upper() == "NC" or not label:
            continue  # not connected / the chip's "sum of shunt voltages" channel
        volt, curr = hw / f"in{k}_input", hw / f"curr{k}_input"
        if not (volt.is_file() and curr.is_file()):
            notes.append(f"INA3221 rail {label} ({hw}): {volt.name} or {curr.name} missing; rail skipped")
            continue
        rails.append(Rail(label, device, volt, curr))
    return rails


def _iio_rails(device: str, iio: Path, notes: list[str]) -> list[Rail]:
    rails = []
    for k, label in _labelled_channels(iio, _IIO_LABEL, notes):
        volt, curr, power = (iio / f"in_voltage{k}_input", iio / f"in_current{k}_input", iio / f"in_power{k}_input")
        if power.is_file():
            rails.append(Rail(label, device, volt if volt.is_file() else None, curr if curr.is_file() else None, power))
        elif volt.is_file() and curr.is_file():
            rails.append(Rail(label, device, volt, curr))
        else:
            notes.append(f"INA3221 rail {label} ({iio}): no in_power{k}_input nor voltage+current; rail skipped")
    return rails


def ina3221_status(sysfs_root: str | Path = "/") -> str | None:
    """None when at least one INA3221 rail can be read under the root, else why not."""
    rails, notes = discover_rails(sysfs_root)
    if not rails:
        return "; ".join(notes) or f"INA3221 not available under {sysfs_root}"
    try:
        rails[0].read_mw()
    except (OSError, ValueError) as exc:
        return f"INA3221 rail {rails[0].name} not readable: {exc}"
    return None


class Ina3221Sampler(PollingSampler):
    """Jetson rails from sysfs on the runner's clock (time.monotonic_ns), in a daemon thread.

    One-shot: start() once, stop() once. start() and stop() each take one sample synchronously.
    Process ids to watch are ignored: rails measure the whole board.
    """

    name = "ina3221"
    power_scope = "soc-total"  # the INA3221 total: the module input, or a sum of rails (the timeline's note says)

    @classmethod
    def missing(cls, sysfs_root: str | Path = "/") -> str | None:
        return ina3221_status(sysfs_root)

    def __init__(self, interval_s: float = 0.05, sysfs_root: str | Path = "/") -> None:
        super().__init__(interval_s)
        self.sysfs_root = Path(sysfs_root)
        self.rails: list[Rail] = []
        self.rail_map: RailMap | None = None
        self._failed: set[str] = set()

    def _begin(self) -> Timeline:
        tl = Timeline(self.name, interval_s=self.interval_s)
        self.rails, notes = discover_rails(self.sysfs_root)
        tl.notes.extend(notes)
        if self.rails:
            self.rail_map = rail_map([r.name for r in self.rails])
            tl.notes.append(f"ina3221 {self.rail_map.note}")
            if self.rail_map.total:
                tl.add_channel(Channel("power_total_mw", "mW"))
            for domain in self.rail_map.domains:
                tl.add_channel(Channel(f"power_{domain}_mw", "mW"))
            for r in self.rails:
                tl.add_channel(Channel(rail_channel(r.name), "mW"))
        return tl

    def _sample(self) -> None:
        tl = self._timeline
        assert tl is not None
        if not self.rails:
            tl.append(time.monotonic_ns(), {})
            return
        t_ns = time.monotonic_ns()
        rails_mw: dict[str, float] = {}
        for r in self.rails:
            try:
                rails_mw[r.name] = r.read_mw()
            except (OSError, ValueError) as exc:
                rails_mw[r.name] = math.nan
                if r.name not in self._failed:
                    self._failed.add(r.name)
                    tl.notes.append(f"INA3221 rail {r.name} read failed mid-run (samples left empty): {exc}")
        sample = {rail_channel(n): v for n, v in rails_mw.items()}
        assert self.rail_map is not None
        sample.update(self.rail_map.derive(rails_mw))
        tl.append(t_ns, sample)

