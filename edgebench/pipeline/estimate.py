"""How long a planned sweep will take and how far its windows will get, before it runs (issue 28).

Per configuration to run: its set-up (export, prepare, probe, spawn: from the `setup_s` of earlier rows of the same
model/backend/precision in the runs folder, their median for the first such row of the plan and their least for the
later ones, which reuse its artifacts and probe; else the median of any earlier row, else DEFAULT_SETUP_S), its warm-up, and its
window. The window follows the orchestrator's stop rule (runner.metrics.window_needed_s: at least duration_s, on until
min_inferences, at most max_duration_s), so it is known when the model's speed is: inferences per second from an
earlier row of the same model/backend/precision/batch/instances/options (the closest match wins). Without one the
window lies between duration_s and max_duration_s and the estimate says so. A speed also says whether the window can
back a p99 (662 inferences) within max_duration_s; a row that cannot is still valid, its p99 empty with the reason.
The plan's first int8 row of a model with no earlier int8 row of that model/backend adds the calibration and
quantization that builds its int8 file (pipeline/calibration_estimate.py: from the artifact cache's sidecars, else a
stated rule); the estimate line says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.config.profile import Profile
from edgebench.config.run_config import RunConfig
from edgebench.pipeline.calibration_estimate import CalibrationBook, CalibrationEstimate
from edgebench.pipeline.plan import PlannedRun
from edgebench.results.reader import read_table
from edgebench.runner.metrics import MIN_INFERENCES_FOR, window_needed_s

DEFAULT_SETUP_S = 5.0  # a row's set-up when no earlier row says (spawn, load, probe of a small model on a CPU)
MAX_RUN_FOLDERS = 200  # the most recent run folders read for speeds
P99 = MIN_INFERENCES_FOR["p99"]


@dataclass
class RowEstimate:
    cfg: RunConfig
    setup_s: float
    window_s: float  # the expected window (max_duration_s when the speed is unknown: the upper bound)
    window_min_s: float  # duration_s when the speed is unknown, else window_s
    inferences_per_s: float | None  # all instances together, from an earlier row; None: unknown
    speed_from: str = ""  # the run folder the speed comes from
    calibration: CalibrationEstimate | None = None  # int8: building its file (calibration + quantization), in setup_s

    @property
    def calibration_s(self) -> float:
        return self.calibration.seconds if self.calibration is not None else 0.0

    @property
    def total_s(self) -> float:
        return self.setup_s + self.cfg.warmup_s + self.window_s

    @property
    def total_min_s(self) -> float:
        return self.setup_s + self.cfg.warmup_s + self.window_min_s

    @property
    def p99_backed(self) -> bool | None:
        """Whether the window reaches the inferences a p99 needs within max_duration_s (None: speed unknown)."""
        if self.inferences_per_s is None:
            return None
        return self.inferences_per_s * self.cfg.max_duration_s >= P99 + 2 * self.cfg.instances

    @property
    def p99_needs_s(self) -> float | None:
        return None if not self.inferences_per_s else (P99 + 2 * self.cfg.instances) / self.inferences_per_s


@dataclass
class SweepEstimate:
    rows: list[RowEstimate] = field(default_factory=list)
    fixed_s: float = 0.0  # once per sweep: the idle baseline
    skipped: int = 0
    runs_read: int = 0
    p99_inferences: int = P99

    @property
    def total_s(self) -> float:
        return self.fixed_s + sum(r.total_s for r in self.rows)

    @property
    def total_min_s(self) -> float:
        return self.fixed_s + sum(r.total_min_s for r in self.rows)

    def remaining_s(self, done: int, elapsed_in_row_s: float = 0.0) -> float:
        """The estimate for rows `done`.. (the row in flight counted from `elapsed_in_row_s`)."""
        left = self.rows[done:]
        if not left:
            return 0.0
        return max(0.0, left[0].total_s - elapsed_in_row_s) + sum(r.total_s for r in left[1:])


def _keys(model: Any, backend: Any, precision: Any, batch: Any, instances: Any, options: Any,
          threads: Any, placement: Any) -> list[tuple]:
    """Lookup keys, closest first: everything, then without threads/placement, then without options."""
    base = (model, backend, precision, batch)
    return [(*base, instances, options or "", threads, placement), (*base, instances, options or ""),
            (*base, instances)]


def past_rows(runs_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """Measured rows (ok or invalid, with a window) of the most recent run folders under `runs_dir`, newest first;
    unreadable files are passed over."""
    if not runs_dir.is_dir():
        return [], 0
    folders = sorted((d for d in runs_dir.iterdir() if (d / "results.csv").is_file()), key=lambda d: d.name,
                     reverse=True)[:MAX_RUN_FOLDERS]
    rows: list[dict[str, Any]] = []
    for d in folders:
        try:
            table = read_table(d / "results.csv")
        except Exception:  # noqa: BLE001 - a damaged or foreign folder only costs its speeds
            continue
        for r in table:
            if r.get("status") in ("ok", "invalid") and r.get("inferences") and r.get("window_s"):
                rows.append({**r, "_run": d.name})
    return rows, len(folders)


class SpeedBook:
    """Earlier rows' speeds and set-up times, looked up by configuration."""

    def __init__(self, rows: Iterable[dict[str, Any]]) -> None:
        self.speed: dict[tuple, tuple[float, str]] = {}
        self.setup: dict[tuple, list[float]] = {}
        self.all_setup: list[float] = []
        for r in rows:
            rate = float(r["inferences"]) / float(r["window_s"])
            for key in _keys(r.get("model"), r.get("backend"), r.get("precision"), r.get("batch"), r.get("instances"),
                             r.get("options"), r.get("threads_per_instance"), r.get("placement")):
                self.speed.setdefault(key, (rate, r["_run"]))  # newest first: the newest row wins
            if r.get("setup_s") is not None:
                self.setup.setdefault((r.get("model"), r.get("backend"), r.get("precision")), []).append(
                    float(r["setup_s"]))
                self.all_setup.append(float(r["setup_s"]))

    def rate(self, cfg: RunConfig) -> tuple[float | None, str]:
        for key in _keys(cfg.model, cfg.backend, cfg.precision, cfg.batch, cfg.instances, cfg.options_cell,
                         cfg.threads_per_instance, cfg.placement):
            if key in self.speed:
                return self.speed[key]
        return None, ""

    def has_setup(self, cfg: RunConfig) -> bool:
        """Whether an earlier row of cfg's model/backend/precision timed its set-up."""
        return bool(self.setup.get((cfg.model, cfg.backend, cfg.precision)))

    def setup_s(self, cfg: RunConfig, first: bool) -> float:
        """The set-up of a row of cfg's model/backend/precision: the `first` of them in a plan pays what rows of
        that key share (export, precision variant, probe: the median of earlier set-ups), the later ones reuse
        it (the least an earlier row of the key took)."""
        own = self.setup.get((cfg.model, cfg.backend, cfg.precision))
        if own:
            return statistics.median(own) if first else min(own)
        return statistics.median(self.all_setup) if self.all_setup else DEFAULT_SETUP_S


def estimate(planned: list[PlannedRun], profile: Profile, runs_dir: Path | str,
             done: set[str] | None = None, cache_root: Path | str | None = None,
             model_files: dict[str, str] | None = None) -> SweepEstimate:
    """The estimate of the rows of `planned` still to run (not skipped, not in `done`: config hashes a resumed run
    has), from the earlier runs under `runs_dir` and the int8 builds in the artifact cache at `cache_root` (None:
    none read); `model_files`: --onnx files by model name (their size)."""
    rows, n_runs = past_rows(Path(runs_dir))
    book = SpeedBook(rows)
    calibrations = CalibrationBook(cache_root, model_files)
    calibrated: set[str] = set()
    seen: set[tuple[str, str, str]] = set()
    out = SweepEstimate(fixed_s=float(profile.telemetry.idle_baseline_s or 0.0), runs_read=n_runs)
    for p in planned:
        if p.skip_reason is not None:
            out.skipped += 1
            continue
        cfg = p.cfg
        if done and cfg.config_hash() in done:
            continue
        rate, source = book.rate(cfg)
        if rate is None:
            window, window_min = cfg.max_duration_s, cfg.duration_s
        else:
            window = window_min = window_needed_s(rate, cfg)
        key = (cfg.model, cfg.backend, cfg.precision)
        setup = book.setup_s(cfg, first=key not in seen)
        calibration = None
        if cfg.precision == "int8" and cfg.model not in calibrated and not book.has_setup(cfg):
            calibration = calibrations.estimate(cfg.model, int(profile.calibration.samples))
            setup += calibration.seconds
        if cfg.precision == "int8":
            calibrated.add(cfg.model)
        out.rows.append(RowEstimate(cfg, setup, window, window_min, rate, source, calibration))
        seen.add(key)
    return out
