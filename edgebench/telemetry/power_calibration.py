"""Power calibration: an on-board sensor against a wall meter, per board (profile power.calibration[_file]).

MLPerf Power measures at the wall, where the whole board draws more than its INA3221 rails show (a third
party reproducing NVIDIA's Orin result measured 6-7 W more than was submitted). A calibration is a linear
fit, wall_w = sensor_w * scale + offset_w, with the source it was fitted against (meter, setup, date). It
is applied to separate columns (power_w_mean_calibrated, energy_per_inference_calibrated_mj) and named in
power_calibration, so the raw readings stay what the sensor said.

Where it comes from: `power.calibration: {scale, offset_w, source[, power_scope]}` in the profile (one
board), or `power.calibration_file:` a YAML `{boards: {<board model>: {...}}}` chosen by the board's
device-tree model / DMI product name (exact match first, then the longest key contained in it).
A calibration with `power_scope` only applies to rows whose power_scope matches (a wall fit of the
INA3221 total says nothing about an NVML reading).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebench.errors import ConfigError

KEYS = ("scale", "offset_w", "source", "power_scope")


@dataclass(frozen=True)
class PowerCalibration:
    scale: float
    offset_w: float
    source: str
    power_scope: str | None = None
    origin: str = ""  # where edgebench found it: the profile or file:board

    def apply_w(self, sensor_w: float) -> float:
        return sensor_w * self.scale + self.offset_w

    def label(self) -> str:
        scope = f", for power_scope {self.power_scope}" if self.power_scope else ""
        return f"scale {self.scale:g}, offset {self.offset_w:+g} W{scope}; source: {self.source} ({self.origin})"


def parse_calibration(entry: Any, where: str, field: str, origin: str = "") -> PowerCalibration:
    """One calibration mapping; ConfigError names the file and field of any mistake."""
    if not isinstance(entry, Mapping):
        raise ConfigError(where, field, f"expected a mapping {{scale, offset_w, source}}, got {entry!r}")
    unknown = [k for k in entry if k not in KEYS]
    if unknown:
        raise ConfigError(where, field, f"unknown key(s) {', '.join(map(str, unknown))} (known: {', '.join(KEYS)})")
    values = {}
    for key, default in (("scale", 1.0), ("offset_w", 0.0)):
        v = entry.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ConfigError(where, f"{field}.{key}", f"expected a finite number, got {v!r}")
        values[key] = float(v)
    if values["scale"] <= 0:
        raise ConfigError(where, f"{field}.scale", f"{values['scale']:g} must be > 0")
    source = entry.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(where, f"{field}.source", "say what the fit was measured against (meter, setup, date): "
                                                    "a calibration without its source cannot be cited")
    scope = entry.get("power_scope")
    if scope is not None and not isinstance(scope, str):
        raise ConfigError(where, f"{field}.power_scope", f"expected a text like soc-total, got {scope!r}")
    return PowerCalibration(values["scale"], values["offset_w"], source.strip(), scope, origin or where)


def read_calibration_file(path: str | Path) -> dict[str, PowerCalibration]:
    """Board model -> calibration, every entry checked."""
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except OSError as exc:
        raise ConfigError(str(p), "power.calibration_file", f"cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(str(p), "power.calibration_file", f"not valid YAML: {exc}") from None
    boards = (data or {}).get("boards") if isinstance(data, Mapping) else None
    if not isinstance(boards, Mapping) or not boards:
        raise ConfigError(str(p), "boards", "expected a mapping {<board model>: {scale, offset_w, source}}")
    return {str(b): parse_calibration(e, str(p), f"boards.{b}", f"{p.name}: {b}") for b, e in boards.items()}


def for_board(boards: Mapping[str, PowerCalibration], board: str) -> PowerCalibration | None:
    if board in boards:
        return boards[board]
    matches = [k for k in boards if k and k in board]
    return boards[max(matches, key=len)] if matches else None


def calibrated_fields(row: Mapping[str, Any], cal: PowerCalibration | None, why_none: str = "") -> dict[str, Any]:
    """power_w_mean_calibrated, energy_per_inference_calibrated_mj, power_calibration for one measured row."""
    if cal is None:
        return {"power_calibration": why_none or None}
    raw = row.get("power_w_mean")
    if cal.power_scope and row.get("power_scope") and row.get("power_scope") != cal.power_scope:
        return {"power_calibration": f"not applied: fitted for power_scope {cal.power_scope}, the row's is "
                                     f"{row.get('power_scope')} ({cal.label()})"}
    if raw is None:
        return {"power_calibration": f"not applied: the row has no power reading ({cal.label()})"}
    fields: dict[str, Any] = {"power_w_mean_calibrated": cal.apply_w(float(raw)), "power_calibration": cal.label()}
    window_s, samples = row.get("window_s"), row.get("samples")
    if window_s and samples:
        fields["energy_per_inference_calibrated_mj"] = fields["power_w_mean_calibrated"] * window_s * 1000.0 / samples
    return fields
