"""Thermal steady state between rows (profile section `cooldown`, opt-in).

On a long Jetson grid later rows run hotter than earlier ones. With cooldown.enabled the sweep reads the
accelerator's temperature and clock once before the first row (the idle baseline), and before every later
row waits until the temperature is within cooldown.temp_margin_c of it and the clock within
cooldown.clock_margin_pct, or until cooldown.timeout_s; the row records how long it waited and how it
ended (cooldown_s, cooldown_note: 'settled' or 'timeout'). Every row gets temp_c_start / temp_c_end
whenever the probe reads a temperature, cooldown on or off.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from edgebench.errors import EdgebenchError
from edgebench.telemetry.thermal_probe import SysfsProbe, ThermalProbe, make_probe


@dataclass(frozen=True)
class Baseline:
    temp_c: float | None
    clock_mhz: float | None


@dataclass(frozen=True)
class CooldownResult:
    waited_s: float
    settled: bool
    temp_c: float | None
    clock_mhz: float | None
    note: str


def near(value: float | None, base: float | None, margin: float) -> bool | None:
    """None when either side is unknown (not compared)."""
    if value is None or base is None:
        return None
    return abs(value - base) <= margin


def _state(temp: float | None, clock: float | None, base: Baseline) -> str:
    parts = []
    if temp is not None:
        parts.append(f"{temp:.1f} C (idle {base.temp_c:.1f} C)" if base.temp_c is not None else f"{temp:.1f} C")
    if clock is not None:
        parts.append(f"{clock:.0f} MHz (idle {base.clock_mhz:.0f} MHz)" if base.clock_mhz is not None
                     else f"{clock:.0f} MHz")
    return ", ".join(parts) or "nothing readable"


def wait_cooldown(probe: ThermalProbe, base: Baseline, temp_margin_c: float, clock_margin_pct: float,
                  timeout_s: float, poll_s: float, now: Callable[[], float] = time.monotonic,
                  sleep: Callable[[float], None] = time.sleep) -> CooldownResult:
    """Poll until temperature and clock are near the baseline (what cannot be read is not waited on)."""
    start = now()
    while True:
        temp, clock = probe.read()
        t_ok = near(temp, base.temp_c, temp_margin_c)
        c_margin = (base.clock_mhz or 0.0) * clock_margin_pct / 100.0
        c_ok = near(clock, base.clock_mhz, c_margin)
        waited = now() - start
        if t_ok is None and c_ok is None:
            return CooldownResult(waited, False, temp, clock,
                                  f"not waited: temperature and clock unreadable ({probe.note or probe.name})")
        if t_ok is not False and c_ok is not False:
            unread = "" if t_ok is not None and c_ok is not None else \
                f"; {'temperature' if t_ok is None else 'clock'} not compared ({probe.note or 'unreadable'})"
            return CooldownResult(waited, True, temp, clock, f"settled after {waited:.1f} s: "
                                  f"{_state(temp, clock, base)}{unread}")
        if waited >= timeout_s:
            return CooldownResult(waited, False, temp, clock, f"timeout after {waited:.1f} s: still "
                                  f"{_state(temp, clock, base)} (margins {temp_margin_c:g} C, {clock_margin_pct:g}%)")
        sleep(min(poll_s, max(0.0, timeout_s - waited)))


class Thermal:
    """The sweep's view: a probe (or why there is none), the idle baseline and the cooldown settings."""

    def __init__(self, settings: Mapping[str, Any], gpu: bool, nvml: Any = None) -> None:
        self.settings = dict(settings)
        self.enabled = bool(settings.get("enabled"))
        self.probe: ThermalProbe | None = None
        self.why_none = ""
        source = str(settings.get("source", "auto"))
        try:
            self.probe = make_probe(source, settings.get("sysfs_root") or "/", gpu, nvml)
        except EdgebenchError as exc:
            if source == "auto":  # e.g. no pynvml: the SoC's thermal zones may still say something
                self.probe = SysfsProbe(settings.get("sysfs_root") or "/")
                self.probe.note = f"{exc}; {self.probe.note}".strip("; ")
            else:
                self.why_none = str(exc)
        self.baseline = Baseline(*self.probe.read()) if self.probe is not None else Baseline(None, None)
        self.rows_done = 0

    def temperature(self) -> float | None:
        return self.probe.read()[0] if self.probe is not None else None

    def before_row(self, sleep: Callable[[float], None] = time.sleep,
                   now: Callable[[], float] = time.monotonic) -> dict[str, Any]:
        """Row fields: cooldown_s/cooldown_note (when enabled and a row ran before) and temp_c_start."""
        fields: dict[str, Any] = {}
        if self.enabled:
            if self.probe is None:
                fields.update(cooldown_s=0.0, cooldown_note=f"not waited: no thermal probe ({self.why_none})")
            elif self.rows_done == 0:
                known = self.baseline.temp_c is not None or self.baseline.clock_mhz is not None
                fields.update(cooldown_s=0.0, cooldown_note="first row: nothing ran before it; " + (
                    "idle baseline " + _state(self.baseline.temp_c, self.baseline.clock_mhz, Baseline(None, None))
                    if known else f"no idle baseline readable ({self.probe.note or self.probe.name})"))
            else:
                s = self.settings
                res = wait_cooldown(self.probe, self.baseline, float(s.get("temp_margin_c", 3.0)),
                                    float(s.get("clock_margin_pct", 10.0)), float(s.get("timeout_s", 120.0)),
                                    float(s.get("poll_s", 1.0)), now=now, sleep=sleep)
                fields.update(cooldown_s=res.waited_s, cooldown_note=res.note)
        fields["temp_c_start"] = self.temperature()
        return fields

    def after_row(self) -> dict[str, Any]:
        self.rows_done += 1
        return {"temp_c_end": self.temperature()}
