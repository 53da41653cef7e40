"""Time outside measurement windows: what a run spent per row on everything but its window and warm-up.

Read from every row's row.json "phases" (pipeline/phases.py). A grid of short windows is mostly set-up unless
artifacts, the FP32 reference and probe results are reused; this table shows how much, run by run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from edgebench.results.runs import Run

HEAD = ["run", "rows", "total s", "windows s", "warm-up s", "outside s", "outside %", "per row s (mean / max)",
        "largest outside phases (s, all rows)"]
NOT_SETUP = {"total", "setup", "window", "warmup"}


@dataclass
class SetupTime:
    rows: int = 0
    total_s: float = 0.0
    window_s: float = 0.0
    warmup_s: float = 0.0
    setup_s: list[float] = field(default_factory=list)
    by_phase_s: dict[str, float] = field(default_factory=dict)

    @property
    def outside_s(self) -> float:
        return sum(self.setup_s)


def row_phases(run_dir: Path) -> list[dict[str, float]]:
    """The phases of every row folder that recorded them (rows written before phases existed are left out)."""
    out = []
    for path in sorted((run_dir / "rows").glob("*/row.json")):
        try:
            phases = json.loads(path.read_text()).get("phases")
        except (OSError, ValueError):
            continue
        if isinstance(phases, dict) and "total" in phases:
            out.append({k: float(v) for k, v in phases.items() if isinstance(v, (int, float))})
    return out


def setup_time(run_dir: Path) -> SetupTime:
    st = SetupTime()
    for phases in row_phases(run_dir):
        st.rows += 1
        st.total_s += phases["total"]
        st.window_s += phases.get("window", 0.0)
        st.warmup_s += phases.get("warmup", 0.0)
        st.setup_s.append(phases.get("setup", 0.0))
        for name, value in phases.items():
            if name not in NOT_SETUP:
                st.by_phase_s[name] = st.by_phase_s.get(name, 0.0) + value
    return st


def setup_table(runs: list[Run]) -> list[list[str]]:
    rows = []
    for run in runs:
        st = setup_time(run.path)
        if not st.rows:
            rows.append([run.label, "0", *["-"] * (len(HEAD) - 2)])
            continue
        top = sorted(st.by_phase_s.items(), key=lambda kv: -kv[1])[:4]
        rows.append([run.label, str(st.rows), f"{st.total_s:.1f}", f"{st.window_s:.1f}", f"{st.warmup_s:.1f}",
                     f"{st.outside_s:.1f}", f"{100 * st.outside_s / st.total_s:.0f}" if st.total_s else "-",
                     f"{st.outside_s / st.rows:.2f} / {max(st.setup_s):.2f}",
                     ", ".join(f"{name} {s:.1f}" for name, s in top)])
    return rows
