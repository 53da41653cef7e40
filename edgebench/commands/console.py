"""Terminal output: progress lines while a sweep runs, a summary table at the end.

Uses rich when it is installed, plain text otherwise (so a bare install still reports). Placements print
compactly everywhere on the console (`2x cpu`, `31x cuda:0`, `cuda:0+dla0`: placement.compact_placement, the one
naming the dry-run plan and `edgebench best` use too); results.csv keeps the full placement cell. The table fits the terminal (commands/table_fit.py): no word is ever split across lines.
"""

from __future__ import annotations

import sys
from typing import Any

from edgebench.commands.table_fit import DROP_BEFORE_WRAP, TextColumn, render, terminal_width
from edgebench.placement import compact_placement
from edgebench.results.reader import typed_row
from edgebench.results.sample_unit import rate_unit, sample_noun  # noqa: F401 - rate_unit: used via this module

# (column, header, priority): priority 0 is never dropped; to fit a narrow terminal the highest goes first (a column
# empty in every row before any other: commands/table_fit.py)
SUMMARY_COLUMNS = [
    ("model", "model", 0), ("precision", "prec", 0), ("batch", "b", 0), ("instances", "n", 0),
    ("placement", "placement", 2), ("mode", "mode", 6), ("repeat", "rep", 1), ("throughput_ips", "img/s", 0),
    ("latency_ms_p50", "p50 ms", 4), ("latency_ms_p99", "p99 ms", 1), ("power_w_mean", "W", 3),
    ("energy_per_inference_mj", "mJ/img", 2), ("accuracy_top1_agreement_pct", "top1 vs fp32 %", 5),
    ("status", "status", 0),
]
EMPTY_EVERYWHERE = DROP_BEFORE_WRAP  # the priority of a column with no value in any row: dropped first


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


def config_label(cfg: Any) -> str:
    """cfg.label() with the placement as the console names it everywhere (`2x cpu`, compact_placement)."""
    return cfg.label().replace(f"/{cfg.placement}/", f"/{compact_placement(cfg.placement)}/", 1)


def start_line(i: int, total: int, cfg: Any) -> None:
    """Printed before a config starts (export, calibration and the window can take a while)."""
    print(f"[{i + 1}/{total}] {config_label(cfg)}: running (window >= {cfg.duration_s:g} s, "
          f">= {cfg.min_inferences} inferences, <= {cfg.max_duration_s:g} s)", flush=True)


STATUS_STYLE = {"ok": "green", "invalid": "yellow", "failed": "red", "skipped": "dim"}


def row_line(i: int, total: int, row: dict[str, Any], suffix: str = "") -> str:
    """The line of a finished config: what ran and how it ended (`suffix`: its time and the sweep's ETA)."""
    status = row.get("status", "")
    if status == "resumed":
        label = str(row["label"])
        if row.get("placement"):
            label = label.replace(f"/{row['placement']}/", f"/{compact_placement(str(row['placement']))}/", 1)
        text = f"[{i + 1}/{total}] {label}: already done (resume)"
    else:
        repeat = typed_row(row).get("repeat")
        label = (f"{row.get('model')}/{row.get('backend')}/{row.get('precision')}/b{row.get('batch')}/"
                 f"{compact_placement(str(row.get('placement') or ''))}/{row.get('mode')}"
                 + (f"/r{repeat}" if repeat else ""))
        detail = f"{show(typed_row(row).get('throughput_ips'))} {rate_unit(row)}" if status in ("ok", "invalid") else ""
        reason = row.get("reason") or ""
        text = f"[{i + 1}/{total}] {label}: {status} {detail}" + (f" ({reason})" if reason else "")
    return f"{text} {suffix}" if suffix else text


def progress_line(i: int, total: int, row: dict[str, Any], suffix: str = "", console: Any = None) -> None:
    """Print row_line: through `console` (the live display's) or rich's on a terminal, coloured by status and
    wrapped at spaces; as one plain line on a pipe or in a log."""
    text = row_line(i, total, row, suffix)
    if console is None and sys.stdout.isatty():
        console = _rich_console()
    if console is not None:
        style = STATUS_STYLE.get(str(row.get("status", ""))) or None
        console.print(text, style=style, highlight=False, markup=False)
    else:
        print(text, flush=True)


def weights_short(weights: str | None) -> str:
    """The weights cell as the console names it: 'random init', 'IMAGENET1K_V2' (a torchvision enum member),
    'onnx weights', or a state_dict file's name."""
    text = str(weights or "").split(" sha256:")[0]
    if not text:
        return ""
    if text == "random-init":
        return "random init"
    if text == "from-onnx":
        return "onnx weights"
    if text.startswith("torchvision:"):
        return text.rsplit(".", 1)[-1]
    return text.rsplit("/", 1)[-1]


def accuracy_cell(row: dict[str, Any]) -> str:
    """'81.2 (n=16, random init)': the agreement with FP32 with the inputs it rests on and the weights."""
    value = row.get("accuracy_top1_agreement_pct")
    if value is None:
        return "-"
    basis = [f"n={row['accuracy_samples']}" if row.get("accuracy_samples") is not None else "",
             weights_short(row.get("weights"))]
    basis = [b for b in basis if b]
    return f"{show(value)} ({', '.join(basis)})" if basis else show(value)


def summary_cell(row: dict[str, Any], column: str) -> str:
    if column == "placement":
        return show(compact_placement(str(row.get(column) or "")))
    if column == "accuracy_top1_agreement_pct":
        return accuracy_cell(row)
    return show(row.get(column))


def summary_table(rows: list[dict[str, Any]], title: str = "edgebench results", width: int | None = None) -> str:
    """The end-of-run table of result rows, typed or as text (results.reader.typed_row reads both), e.g.
    ResultsStore.records() (also returned as plain text so callers can log it). The throughput and energy columns
    say img when every row's input is an image, samples otherwise (the CSV keeps throughput_ips).

    It fits `width` (default: the terminal's when stdout is one; a pipe or a log gets every column): cells wrap at
    spaces, never inside a word, then low-priority columns are left out and a last line names them."""
    noun = sample_noun(rows)
    typed = [typed_row(r) for r in rows]
    columns = []
    for key, header, priority in SUMMARY_COLUMNS:
        header = {"img/s": "img/s" if noun == "img" else "samples/s", "mJ/img": f"mJ/{noun}"}.get(header, header)
        cells = [summary_cell(r, key) for r in typed]
        empty = bool(cells) and all(c == "-" for c in cells)
        columns.append(TextColumn(header, cells, EMPTY_EVERYWHERE if empty and priority else priority))
    text = render(title, columns, width if width is not None else terminal_width())
    if (busy := busy_host_line(typed)) is not None:
        text += "\n" + busy
    _print_text(text)
    return text


def busy_host_line(rows: list[dict[str, Any]]) -> str | None:
    """'busy host: 3 of 12 measured rows ...': the rows measured while other processes took a material share of the
    CPU or GPU (host_busy, telemetry/host_share.py), or None when there is none."""
    measured = [r for r in rows if r.get("status") in ("ok", "invalid")]
    busy = [r for r in measured if r.get("host_busy") is True]
    if not busy:
        return None
    taken = [v for r in busy if (v := r.get("cpu_taken_by_others_pct")) is not None]
    gpu = [v for r in busy if (v := r.get("others_gpu_pct_mean")) is not None]
    figures = ([f"{min(taken):.0f}-{max(taken):.0f}% of the CPU the instances could use"] if taken else []) + (
        [f"up to {max(gpu):.0f}% of the GPU's SM time"] if gpu else [])
    shown = ", ".join(str(r.get("row_index")) for r in busy[:12]) + (" ..." if len(busy) > 12 else "")
    return (f"busy host: {len(busy)} of {len(measured)} measured rows ran while other processes took "
            f"{' and '.join(figures) or 'a material share'} (row_index {shown}): their throughput may be cut (each "
            "row's reason has its figure), and no int8 cause is named from them")


def _print_text(text: str) -> None:
    console = _rich_console()
    if console is not None and sys.stdout.isatty():
        console.print(text, highlight=False, markup=False, soft_wrap=True)
    else:
        print(text, flush=True)


def _print_table(title: str, header: list[str], body: list[list[str]]) -> str:
    columns = [TextColumn(h, [b[i] for b in body]) for i, h in enumerate(header)]
    text = render(title, columns, terminal_width())
    _print_text(text)
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
            if r.get("holds_at_max"):
                lines.append(f"{name}: at {r.get('max_streams_under_slo')} streams: {r['holds_at_max']}")
            if r.get("capacity_per_s") is not None:
                lines.append(f"{name}: capacity {show(r['capacity_per_s'])}/s ({r.get('capacity_source')}): "
                             f"{r.get('capacity_max_streams')} streams admitted")
            if r.get("notes"):
                lines.append(f"{name}: {r['notes']}")
        print("\n".join(lines), flush=True)
        texts.append("\n".join([text, *lines]))
    return "\n\n".join(texts)
