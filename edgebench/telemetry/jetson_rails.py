"""Jetson INA3221 rail names -> what they measure, per board, and which rail(s) make "the total".

Every Jetson carries one or two INA3221 three-channel monitors; the rail labels differ by board
(NVIDIA's "Software-Based Power Consumption Modeling" tables per L4T release). What "total" means
differs too, and that is the usual source of confusion when power figures are compared:

  board (rail set)                      power_total_mw                          real board input?
  Orin NX / Orin Nano / Xavier NX       VDD_IN                                  yes (module input)
  AGX Orin                              VDD_GPU_SOC + VDD_CPU_CV + VIN_SYS_5V0   no: a sum of rails; the
                                        (+ VDDQ_VDD2_1V8AO on the 2nd INA3221)   module input is not
                                                                                 monitored (jtop sums too)
  AGX Xavier                            GPU + CPU + SOC + CV + VDDRQ + SYS5V     no: a sum of rails
  Nano / TX1 (POM_5V_IN), TX2 (VDD_IN)  POM_5V_IN / VDD_IN                      yes
  unknown rail set                      VIN / POM_5V_IN / VDD_IN if present,    yes if such a rail
                                        else the sum of all rails               exists, else no

Only power monitors count (INA3221 rails; Thor's INA238 "VIN"): jetson-stats 4.2+ also lists the sensors of
/sys/class/power_supply (e.g. a USB-C supply) among its rails and, lacking an input rail, in its summed `tot`;
those are kept as rail_*_mw channels but never enter power_total_mw (power_supply_rails() names them).
jtop's own `tot` is the first of POM_5V_IN / VDD_IN among its sorted rails (jetson-stats 4.2.x to 7.2.0,
jtop/core/power.py total_power); 7.2.2 looks for VIN (Thor's INA238) before those.

Domain channels are named for what the rail really feeds: AGX Orin's VDD_GPU_SOC is GPU *and* SOC,
so it becomes power_gpu_soc_mw, never power_gpu_mw. Unknown rails stay per-rail channels only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

INPUT_RAILS = ("VIN", "POM_5V_IN", "VDD_IN")  # board/module input rails; a carrier-board input (VIN) first
POWER_SUPPLY_DIR = "sys/class/power_supply"
UCSI_PREFIX = "ucsi-source-psy-"  # jetson-stats 4.2-7.2.0 strips it from the rail name; 7.2.2 skips UCSI entries


def power_supply_rails(root: str | Path = "/") -> frozenset[str]:
    """The rail names jtop gives the /sys/class/power_supply sensors it adds to its power dict (the folder
    name, and the name without UCSI_PREFIX): not power monitors, so never part of a total."""
    try:
        names = [p.name for p in (Path(root) / POWER_SUPPLY_DIR).iterdir()]
    except OSError:
        return frozenset()
    return frozenset(names) | frozenset(n.removeprefix(UCSI_PREFIX) for n in names)


@dataclass(frozen=True)
class BoardRails:
    board: str
    rails: frozenset[str]  # the rail set that identifies the board (all must be present)
    total: tuple[str, ...]  # rails summed into power_total_mw
    total_is_input: bool  # True: the total is the measured board/module input
    domains: dict[str, tuple[str, ...]] = field(default_factory=dict)  # "gpu_soc" -> ("VDD_GPU_SOC",)

    def describe(self) -> str:
        what = "the measured module/board input" if self.total_is_input else (
            "a SUM OF RAILS, not the board input (this board has no input-power monitor; the wall/module "
            "input is higher by regulator and carrier losses)")
        return f"{self.board}: power_total_mw = {' + '.join(self.total)} ({what})"


# Most specific first: the first board whose rail set is fully present wins.
BOARDS: tuple[BoardRails, ...] = (
    BoardRails("Jetson AGX Orin", frozenset({"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"}),
               ("VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"), False,
               {"gpu_soc": ("VDD_GPU_SOC",), "cpu_cv": ("VDD_CPU_CV",), "sys_5v0": ("VIN_SYS_5V0",),
                "ddr": ("VDDQ_VDD2_1V8AO",)}),
    BoardRails("Jetson AGX Orin (second INA3221 not found)", frozenset({"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"}),
               ("VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"), False,
               {"gpu_soc": ("VDD_GPU_SOC",), "cpu_cv": ("VDD_CPU_CV",), "sys_5v0": ("VIN_SYS_5V0",)}),
    BoardRails("Jetson Orin NX / Orin Nano / Xavier NX", frozenset({"VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"}),
               ("VDD_IN",), True, {"cpu_gpu_cv": ("VDD_CPU_GPU_CV",), "soc": ("VDD_SOC",)}),
    BoardRails("Jetson AGX Xavier", frozenset({"GPU", "CPU", "SOC", "CV", "VDDRQ", "SYS5V"}),
               ("GPU", "CPU", "SOC", "CV", "VDDRQ", "SYS5V"), False,
               {"gpu": ("GPU",), "cpu": ("CPU",), "soc": ("SOC",), "cv": ("CV",), "ddr": ("VDDRQ",)}),
    BoardRails("Jetson TX2", frozenset({"VDD_IN", "VDD_SYS_GPU", "VDD_SYS_SOC", "VDD_SYS_CPU", "VDD_SYS_DDR"}),
               ("VDD_IN",), True, {"gpu": ("VDD_SYS_GPU",), "cpu": ("VDD_SYS_CPU",), "soc": ("VDD_SYS_SOC",),
                                   "ddr": ("VDD_SYS_DDR",)}),
    BoardRails("Jetson Nano", frozenset({"POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU"}),
               ("POM_5V_IN",), True, {"gpu": ("POM_5V_GPU",), "cpu": ("POM_5V_CPU",)}),
    BoardRails("Jetson TX1", frozenset({"VDD_IN", "VDD_GPU", "VDD_CPU"}),
               ("VDD_IN",), True, {"gpu": ("VDD_GPU",), "cpu": ("VDD_CPU",)}),
)


@dataclass(frozen=True)
class RailMap:
    """How one board's rails become channels. `note` says which rail(s) make the total."""

    board: str | None  # None: rail set not recognised
    total: tuple[str, ...]
    total_is_input: bool
    domains: dict[str, tuple[str, ...]]
    note: str

    def derive(self, rails_mw: dict[str, float]) -> dict[str, float]:
        """power_total_mw and power_<domain>_mw from per-rail mW; NaN where a needed rail is missing."""
        out = {"power_total_mw": _sum(rails_mw, self.total)}
        for domain, names in self.domains.items():
            out[f"power_{domain}_mw"] = _sum(rails_mw, names)
        return out


def rail_channel(name: str) -> str:
    """rail_<NAME>_mw, the rail label kept as written (upper case), odd characters -> '_'."""
    return f"rail_{re.sub(r'[^A-Za-z0-9]+', '_', name).strip('_')}_mw"


def rail_map(rail_names: list[str] | tuple[str, ...] | set[str]) -> RailMap:
    """The board that these rail labels identify, or the documented fallback for an unknown set."""
    present = set(rail_names)
    for b in BOARDS:
        if b.rails <= present:
            extra = sorted(present - b.rails)
            note = b.describe()
            if extra:
                note += f"; other rails kept as rail_*_mw only: {', '.join(extra)}"
            return RailMap(b.board, b.total, b.total_is_input, dict(b.domains), note)
    if not present:
        return RailMap(None, (), False, {}, "no INA3221 rails found: no power_total_mw")
    for name in INPUT_RAILS:
        if name in present:
            return RailMap(None, (name,), True, {},
                           f"unknown Jetson rail set ({', '.join(sorted(present))}): power_total_mw = {name} "
                           "(an input rail); the other rails are kept as rail_*_mw only")
    names = tuple(sorted(present))
    return RailMap(None, names, False, {},
                   f"unknown Jetson rail set ({', '.join(names)}) with no input rail: power_total_mw = the SUM OF "
                   "ALL RAILS (what jtop shows as total), not a measured board input")


def _sum(rails_mw: dict[str, float], names: tuple[str, ...]) -> float:
    if not names:
        return math.nan
    total = 0.0
    for n in names:
        v = rails_mw.get(n)
        if v is None or math.isnan(v):
            return math.nan
        total += v
    return total
