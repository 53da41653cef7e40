"""Whether a results row was measured on a busy host, read from the row (issue 54, build item 7).

The row's busy_host step (telemetry/host_share.py) writes host_busy and cpu_taken_by_others_pct from the window's
samples; this reads them back for the answer layer (which reads rows, not timelines). A row written before those
columns is read from its window means, cpu_util_pct_mean and proc_cpu_pct_mean, with the cores system.json records
(cpu.logical_cores) and the same rule: the CPU the instances could use (`demand`: threads_per_instance per CPU
instance, one per GPU/DLA instance, at most the cores), others' cores beyond what the instances leave free, as a
share of `demand`, busy at BUSY_SHARE_PCT. From the means it is a lower bound of the per-sample reading (the mean of
max(0, x) is at least max(0, mean x)). tests/answer/test_busy_rows.py holds both readings to one another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edgebench.telemetry.host_share import BUSY_SHARE_PCT, demand_cores
from edgebench.telemetry.host_share import busy_notes as busy_notes  # for the report, which reads rows only


def row_taken_pct(row: Mapping[str, Any], cores: int | None) -> float | None:
    """cpu_taken_by_others_pct of a typed results row; for a row written before it, the same share from the window's
    cpu_util_pct_mean and proc_cpu_pct_mean over `cores`; None when neither is there."""
    if row.get("cpu_taken_by_others_pct") is not None:
        return float(row["cpu_taken_by_others_pct"])
    host, proc = row.get("cpu_util_pct_mean"), row.get("proc_cpu_pct_mean")
    if host is None or proc is None or not cores or row.get("host_busy") is not None:
        return None
    demand = demand_cores(str(row.get("placement") or "cpu").split("+"), row.get("threads_per_instance"), cores)
    others = max(0.0, float(host) / 100.0 * cores - float(proc) / 100.0)
    return 100.0 * max(0.0, others - (cores - demand)) / demand


def row_busy(row: Mapping[str, Any], cores: int | None) -> tuple[bool | None, str]:
    """(busy, the figure in words) of a typed results row: its host_busy column; for a row written before it, the
    CPU share from its CPU means (row_taken_pct). (None, why) when neither can be read."""
    taken = row_taken_pct(row, cores)
    if row.get("host_busy") is not None:
        parts = [f"others took {taken:.0f}% of the CPU its instances could use"] if taken is not None else []
        if (gpu := row.get("others_gpu_pct_mean")) is not None:
            parts.append(f"{gpu:.0f}% of its GPU's SM time")
        return bool(row["host_busy"]), ", ".join(parts) or "host_busy"
    if taken is None:
        return None, ("others' share of the host not recorded (no host_busy, and no cpu_util_pct_mean/"
                      "proc_cpu_pct_mean with the cores in system.json)")
    return taken >= BUSY_SHARE_PCT, (f"others took {taken:.0f}% of the CPU its instances could use, from the "
                                     "window's means (a row written before host_busy)")
