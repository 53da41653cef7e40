"""Terminal output: progress lines while a sweep runs, a summary table at the end.

Uses rich when it is installed, plain text otherwise (so a bare install still reports). Placements print
compactly (`31x cuda:0`, `cuda:0+dla0`); results.csv keeps the full placement cell.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from edgebench.results.reader import typed_row

SUMMARY_COLUMNS = [
    ("model", "model"), ("precision", "prec"), ("batch", "b"), ("instances", "n"), ("placement", "placement"),
    ("mode", "mode"), ("throughput_ips", "img/s"), ("latency_ms_p50", "p50 ms"), ("latency_ms_p99", "p99 ms"),
    ("power_w_mean", "W"), ("energy_per_inference_mj", "mJ/img"), ("accuracy_top1_agreement_pct", "top1 vs fp32 %"),
    ("status", "status"),
]


def compact_placement(placement: str) -> str:
    """'cuda:0+cuda:0+...' (31 of them) -> '31x cuda:0'; runs of one device are counted, different devices
    stay joined with '+' in their order: 'cuda:0+cuda:0+dla0' -> '2x cuda:0+dla0', 'cuda:0+dla0' unchanged."""
    if not placement:
        return placement
    runs: list[list[Any]] = []
    for device in placement.split("+"):
        if runs and runs[-1][0] == device:
            runs[-1][1] += 1
        else:
            runs.append([device, 1])
    return "+".join(f"{n}x {device}" if n > 1 else device for device, n in runs)


def show(value: Any) -> str:
    """A typed cell (results.reader) for the terminal: '-' when empty, floats to 4 significant digits."""
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


def _rich_console() -> Any:
    try:
        from rich.console import Console
    except ImportError:
        return None
    return Console(stderr=False)


def start_line(i: int, total: int, cfg: Any) -> None:
    """Printed before a config starts (export, calibration and the window can take a while)."""
    print(f"[{i + 1}/{total}] {cfg.label()}: running (window >= {cfg.duration_s:g} s, "
          f">= {cfg.min_inferences} inferences, <= {cfg.max_duration_s:g} s)", flush=True)


def progress_line(i: int, total: int, row: dict[str, Any]) -> None:
    """One line per finished config: what ran and how it ended."""
    status = row.get("status", "")
    if status == "resumed":
        text = f"[{i + 1}/{total}] {row['label']}: already done (resume)"
    else:
        label = (f"{row.get('model')}/{row.get('backend')}/{row.get('precision')}/b{row.get('batch')}/"
                 f"{compact_placement(str(row.get('placement') or ''))}/{row.get('mode')}")
        detail = f"{show(typed_row(row).get('throughput_ips'))} {rate_unit(row)}" if status in ("ok", "invalid") else ""
        reason = row.get("reason") or ""
        text = f"[{i + 1}/{total}] {label}: {status} {detail}" + (f" ({reason})" if reason else "")
    console = _rich_console()
    if console is not None:
        color = {"ok": "green", "invalid": "yellow", "failed": "red", "skipped": "dim"}.get(status, "")
        console.print(text, style=color or None, highlight=False, markup=False)
    else:
        print(text, flush=True)


IMAGE_SHAPE = re.compile(r"^[^:;]+:float(?:16|32)\[\d+x[13]x\d+x\d+\]$")


def rate_unit(row: dict[str, Any]) -> str:
    """'img/s' when the row's one input is an image ([N, 1|3, H, W] float), else 'samples/s' (audio, text, state).
    A row without input_shapes (older runs) keeps 'img/s'."""
    shapes = str(row.get("input_shapes") or "")
    if not shapes:
        return "img/s"
    return "img/s" if IMAGE_SHAPE.match(shapes) else "samples/s"


def summary_table(rows: list[dict[str, Any]], title: str = "edgebench results") -> str:
    """The end-of-run table of result rows, typed or as text (results.reader.typed_row reads both), e.g.
    ResultsStore.records() (also returned as plain text so callers can log it). The throughput and energy columns
    say img when every row's input is an image, samples otherwise (the CSV keeps throughput_ips)."""
    unit = "img" if all(rate_unit(r) == "img/s" for r in rows) else "samples"
    header = [{"img/s": f"{unit}/s", "mJ/img": f"mJ/{unit[:-1] if unit == 'samples' else unit}"}.get(h, h)
              for _, h in SUMMARY_COLUMNS]
    body = [[show(compact_placement(str(r.get(k) or "")) if k == "placement" else r.get(k)) for k, _ in SUMMARY_COLUMNS]
            for r in map(typed_row, rows)]
    return _print_table(title, header, body)


def _print_table(title: str, header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(header)]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    text = "\n".join(lines)
    console = _rich_console()
    if console is not None and sys.stdout.isatty():
        from rich.table import Table

        table = Table(title=title)
        for h in header:
            table.add_column(h, overflow="fold")
        for b in body:
            table.add_row(*b)
        console.print(table)
    else:
        print(text, flush=True)
    return text


SLO_COLUMNS = [
    ("options", "options"), ("gpu_sharing", "sharing"), ("answer", "max streams"), ("p99_ms_at_max", "p99 ms at max"),
    ("first_missed_streams", "first miss"), ("p99_ms_at_first_miss", "p99 ms there"), ("monotonic", "monotonic"),
    ("arrival", "arrival"), ("p99_ms_repeats_at_max", "p99 ms per repeat at max"),
    ("p99_ms_repeats_at_first_miss", "per repeat at first miss"),
]  # p99 at max / there: the worst repeat's


def slo_table(records: list[dict[str, Any]]) -> str:
    """The SLO searches side by side, one line per option set x GPU sharing mode (slo_search.csv's lines), a
    title per model/backend/precision/batch/device/rate/SLO; each search's probes and notes (unmeasured
    probes, a p99 that fell as streams were added) follow the table."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        key = (r.get("model"), r.get("backend"), r.get("precision"), r.get("batch"), r.get("device"),
               r.get("mode"), r.get("rate_per_stream_hz"), r.get("slo_ms"))
        groups.setdefault(key, []).append(r)
    texts = []
    for (model, backend, precision, batch, device, mode, rate, slo), members in groups.items():
        title = (f"SLO search: {model}/{backend}/{precision}/b{batch} on {device} ({mode}), streams of "
                 f"{show(rate)}/s, p99 <= {show(slo)} ms")
        body = [["default" if k == "options" and not r.get(k) else show(r.get(k)) for k, _ in SLO_COLUMNS]
                for r in members]
        text = _print_table(title, [h for _, h in SLO_COLUMNS], body)
        lines = []
        for r in members:
            name = f"  {r.get('options') or 'default'} / {r.get('gpu_sharing')}"
            lines.append(f"{name}: probes {r.get('probes') or '-'}")
            if r.get("notes"):
                lines.append(f"{name}: {r['notes']}")
        print("\n".join(lines), flush=True)
        texts.append("\n".join([text, *lines]))
    return "\n\n".join(texts)
