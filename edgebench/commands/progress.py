"""What a running sweep shows: rows done and left with an ETA, and the row in flight with its phase and elapsed time.

On a terminal with rich installed (the `progress` extra) a live display at the bottom redraws four times a second
while the finished rows' lines scroll above it. Otherwise (a pipe, a log, `edgebench remote` following a board, no
rich) it is plain lines: the row's start line, then one line when it ends, with its time and the sweep's ETA.

The ETA is the sweep estimate (pipeline/estimate.py, given as `estimate`: anything with `remaining_s(done,
elapsed_in_row_s)` and `rows`) for the rows left, scaled by how the rows so far compared with their estimate.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from edgebench.commands.console import config_label, progress_line, start_line
from edgebench.commands.table_fit import terminal_width


def duration_text(seconds: float) -> str:
    """'45 s', '3 min 20 s', '1 h 05 min'."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def fitted(text: str) -> str:
    """`text` wrapped at spaces to the terminal's width when stdout is one (a word is never split; continuation
    lines indented); as it is on a pipe or in a log."""
    import textwrap

    width = terminal_width()
    if width is None:
        return text
    out = []
    for line in text.splitlines():
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                             break_on_hyphens=False) or [""]
    return "\n".join(out)


def estimate_range(est: Any) -> str:
    """'about 2 min 10 s', or '1 min 05 s to 4 min 00 s' where some rows' speed is unknown."""
    if all(r.inferences_per_s is not None for r in est.rows):
        return f"about {duration_text(est.total_s)}"
    return f"{duration_text(est.total_min_s)} to {duration_text(est.total_s)}"


CALIBRATION_BASIS = {"cached": "its int8 file cached", "measured": "from an earlier build of it",
                     "rule": "by the per-sample x activations rule",
                     "default": "no file to size it: a mid-size CNN's"}


def calibration_words(rows: list[Any]) -> str:
    """', including int8 calibration + quantization about 40 s (resnet18: by the per-sample x model-size rule)' for
    the rows whose set-up builds an int8 file (pipeline/calibration_estimate.py); '' when none does."""
    builds = [r for r in rows if getattr(r, "calibration", None) is not None]
    if not builds:
        return ""
    which = "; ".join(f"{r.cfg.model}: {CALIBRATION_BASIS.get(r.calibration.basis, r.calibration.basis)}"
                      for r in builds[:3]) + ("; ..." if len(builds) > 3 else "")
    return (f", including int8 calibration + quantization about "
            f"{duration_text(sum(r.calibration.seconds for r in builds))} ({which})")


def describe_estimate(est: Any) -> str:
    """The lines --dry-run and the start of bench print for a pipeline.estimate.SweepEstimate: the wall time, what
    it is made of, and the rows whose window cannot back a p99 within max_duration_s (and what would)."""
    n = len(est.rows)
    if n == 0:
        return "estimate: nothing to measure"
    known = [r for r in est.rows if r.inferences_per_s is not None]
    windows = sum(r.window_s for r in est.rows)
    setup = sum(r.setup_s for r in est.rows)
    warmups = sum(r.cfg.warmup_s for r in est.rows)
    lines = [f"estimate: {estimate_range(est)} for {n} row(s): windows {duration_text(windows)}"
             + (" at most" if len(known) < n else "") + f", warm-ups {duration_text(warmups)}, set-up about "
             f"{duration_text(setup)}" + calibration_words(est.rows)
             + (f", idle baseline {duration_text(est.fixed_s)}" if est.fixed_s else "")]
    sources = sorted({r.speed_from for r in known})
    if known:
        lines.append(f"  speed known from earlier runs for {len(known)} of {n} row(s) "
                     f"({', '.join(sources[:3])}{' ...' if len(sources) > 3 else ''})")
    if len(known) < n:
        lines.append(f"  speed unknown for {n - len(known)} row(s) (no earlier row of the same model/backend/precision"
                     f"/batch/instances here): each window between its duration_s and max_duration_s")
    short = [r for r in est.rows if r.p99_backed is False]
    if short:
        lines.append(f"  {len(short)} row(s) cannot back a p99 ({est.p99_inferences} inferences) within max_duration_s; they stay "
                     "valid, the p99 empty with its reason:")
        for r in short:
            need = r.p99_needs_s or 0.0
            lines.append(f"    {config_label(r.cfg)}: ~{r.inferences_per_s:.3g} inferences/s, a p99 needs about "
                         f"{duration_text(need)} (--max-duration {int(need) + 1} would back it)")
    return "\n".join(lines)


def p99_note(rows: list[dict[str, Any]], p99_inferences: int = 662) -> str | None:
    """After a sweep: how many measured rows have no p99 and the --max-duration that would back them all (from
    their speeds), or None when every measured row has one."""
    measured = [r for r in rows if r.get("status") in ("ok", "invalid")]
    empty = [r for r in measured if r.get("latency_ms_p99") is None and r.get("inferences") and r.get("window_s")]
    if not empty:
        return None
    need = max((p99_inferences + 2 * int(r.get("instances") or 1)) / (r["inferences"] / r["window_s"]) for r in empty)
    return (f"p99 empty in {len(empty)} of {len(measured)} measured row(s): too few inferences in their windows "
            f"(empty_reasons says so per row); --max-duration {int(need) + 1} would back all of them")


class SweepProgress:
    """on_start / on_row / on_phase for pipeline.sweep.run_sweep (and the SLO search); a context manager that
    starts and stops the live display."""

    def __init__(self, estimate: Any, live: bool | None = None) -> None:
        self.estimate = estimate
        self.to_run = len(estimate.rows) if estimate is not None else 0
        self.done = 0
        self.t0 = time.monotonic()
        self.row_t0: float | None = None
        self.row_label = ""
        self.row_index = ""
        self.phase = ""
        self.spent_s = 0.0  # wall time of the rows done
        self.estimated_done_s = 0.0  # their estimate
        self._live: Any = None
        self.use_live = (sys.stdout.isatty() and _rich_available()) if live is None else live

    # ------------------------------------------------------------ the sweep's callbacks

    def on_start(self, i: int, total: int, cfg: Any) -> None:
        self.row_t0 = time.monotonic()
        self.row_label = config_label(cfg)
        self.row_index = f"[{i + 1}/{total}]"
        self.phase = "starting"
        if not self.use_live:
            start_line(i, total, cfg)

    def on_phase(self, name: str) -> None:
        self.phase = name

    def on_row(self, i: int, total: int, row: dict[str, Any]) -> None:
        measured = row.get("status") not in ("resumed", "skipped")
        suffix = ""
        if measured and self.row_t0 is not None:
            took = time.monotonic() - self.row_t0
            if self.estimate is not None and self.done < len(self.estimate.rows):
                self.estimated_done_s += self.estimate.rows[self.done].total_s
            self.spent_s += took
            self.done += 1
            self.row_t0 = None
            left = self.to_run - self.done
            suffix = f"[{duration_text(took)}; {left} left" + (f", ETA {duration_text(self.eta_s())}]" if left else "]")
        progress_line(i, total, row, suffix=suffix, console=self._live.console if self._live is not None else None)

    # ------------------------------------------------------------ numbers

    def eta_s(self) -> float:
        """The estimate for the rows left, scaled by actual / estimated time of the rows done (0.25x .. 4x)."""
        if self.estimate is None:
            return 0.0
        in_row = time.monotonic() - self.row_t0 if self.row_t0 is not None else 0.0
        scale = 1.0
        if self.estimated_done_s > 0 and self.spent_s > 0:
            scale = min(4.0, max(0.25, self.spent_s / self.estimated_done_s))
        return float(self.estimate.remaining_s(self.done, in_row / scale)) * scale

    def status_lines(self) -> list[str]:
        elapsed = time.monotonic() - self.t0
        lines = [f"{self.done}/{self.to_run} rows, {self.to_run - self.done} left, {duration_text(elapsed)}, "
                 f"ETA {duration_text(self.eta_s())}"]
        if self.row_t0 is not None:
            lines.append(f"{self.row_index} {self.row_label}: {self.phase} "
                         f"{duration_text(time.monotonic() - self.row_t0)}")
        return lines

    # ------------------------------------------------------------ the live display

    def _renderable(self) -> Any:
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(no_wrap=True, overflow="ellipsis")
        lines = self.status_lines()
        grid.add_row(ProgressBar(total=max(1, self.to_run), completed=self.done, width=20), lines[0])
        for line in lines[1:]:
            grid.add_row("", line)
        return grid

    def __enter__(self) -> SweepProgress:
        if self.use_live:
            from rich.live import Live

            self._live = Live(get_renderable=self._renderable, refresh_per_second=4, transient=True,
                              redirect_stdout=True, redirect_stderr=True)
            self._live.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


def _rich_available() -> bool:
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True
