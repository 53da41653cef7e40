"""The report folder and its one summary page (Markdown and HTML) linking every figure and table.

    <out>/summary.md, summary.html
    <out>/tables/{results,speedup,scaling[,cross_run]}.{csv,md,tex}
    <out>/figures/<name>.{png,pdf}

The page lists the runs, their system info (device, versions), counts of ok/invalid/failed/skipped rows
and every non-ok reason, then links the tables and shows the figures. A figure that could not be drawn
is listed with the reason, so an absence is visible on the page instead of being a missing file.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from edgebench import __version__
from edgebench.answer.busy_rows import busy_notes
from edgebench.answer.comparability import summary_lines
from edgebench.answer.pareto import ParetoFront, pareto_fronts
from edgebench.report.anchors import load_anchors, match_anchors
from edgebench.report.answer_page import answer_blocks, draw_fronts, table_block
from edgebench.report.figure import slug
from edgebench.report.layers import write_layer_page
from edgebench.report.paper_figures import PaperFigure, paper_figures
from edgebench.report.pareto import pareto_table
from edgebench.report.plots import FORMATS, FigureData, all_figures, matplotlib_missing, render
from edgebench.report.setup_time import HEAD as SETUP_HEAD
from edgebench.report.setup_time import setup_table
from edgebench.report.tables import Table, all_tables
from edgebench.report.timeline_plots import grouped_absences
from edgebench.results.column_dictionary import write_dictionary
from edgebench.results.runs import Run, load_runs, profile_name
from edgebench.results.schema import STATUSES

Segment = str | tuple[str, str]  # text, or (text, relative link)
DEFAULT_MAX_TIMELINES = 40


@dataclass
class Report:
    out_dir: Path
    runs: list[Run]
    tables: list[Table]
    figures: list[FigureData]
    table_files: list[Path] = field(default_factory=list)
    summary_md: Path | None = None
    summary_html: Path | None = None
    figures_note: str | None = None  # why no figure was drawn at all (e.g. matplotlib missing)
    layers_page: Path | None = None  # layers.md: per-layer TensorRT profiles (rows with layers.csv)
    fronts: list[ParetoFront] = field(default_factory=list)
    front_figures: list[PaperFigure] = field(default_factory=list)  # paper/pareto_*
    paper_figures: list[PaperFigure] = field(default_factory=list)  # paper/: medians with intervals, speedup, CDF
    dictionary: list[Path] = field(default_factory=list)  # columns.csv/.md

    def figure_files(self) -> list[Path]:
        return [p for f in self.figures for p in f.files]


def build_report(run_dirs: Sequence[Path | str], out_dir: Path | str, max_timelines: int | None = DEFAULT_MAX_TIMELINES,
                 formats: tuple[str, ...] = FORMATS) -> Report:
    runs = load_runs(list(run_dirs))
    out = Path(out_dir)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    report = Report(out, runs, all_tables(runs), all_figures(runs, max_timelines))
    report.fronts = pareto_fronts(runs)
    if any(f.members() for f in report.fronts):  # none: no ok row, or throughput alone (no energy, no latency)
        report.tables.append(pareto_table(report.fronts))
    report.dictionary = write_dictionary(out)
    unique = slug(*[r.run_id for r in runs])[:60]  # LaTeX labels unique per run: two reports in one paper
    for table in report.tables:
        table.label = unique
    for table in report.tables:
        report.table_files += table.write(out / "tables")
    for fig in report.figures:  # a figure of only invalid/failed points shows nothing a reader can use
        if fig.absent_reason is None and only_unusable_points(fig):
            fig.absent_reason = ("every point is invalid or failed: nothing to draw a reader can use (the rows and "
                                 "their reasons are in the results table)")
    report.figures_note = matplotlib_missing()
    if report.figures_note is None:
        for fig in report.figures:
            if fig.absent_reason is None:
                render(fig, out / "figures", formats)

        report.layers_page = write_layer_page([r.path for r in runs], out, formats)
        report.front_figures = draw_fronts(report.fronts, out / "paper", formats)
        report.paper_figures = paper_figures(runs, out / "paper", formats)
    blocks = summary_blocks(report)
    report.summary_md = out / "summary.md"
    report.summary_md.write_text(to_markdown(blocks))
    report.summary_html = out / "summary.html"
    report.summary_html.write_text(to_html(blocks, base=out))
    return report


def only_unusable_points(fig: FigureData) -> bool:
    """True when the figure has row points, none of them ok, and no telemetry trace."""
    points = [p for s in fig.series if s.kind == "points" for p in s.points]
    traces = [s for s in fig.series if s.kind == "trace"]
    return bool(points) and not traces and not any(p.status == "ok" for p in points)


# ------------------------------------------------------------------------------------ content


def _system_lines(run: Run) -> list[str]:
    s = run.system
    if not s:
        return ["system.json absent: device and versions not recorded"]
    board = s.get("board") or {}
    cpu = s.get("cpu") or {}
    os_rel = (s.get("os_release") or {}).get("PRETTY_NAME", "")
    git = s.get("git") or {}
    lines = [
        f"device: {run.device()}",
        f"host: {s.get('hostname') or ''} ({s.get('machine') or ''}), OS: {os_rel}, kernel: {s.get('kernel') or ''}",
        "board: " + (", ".join(f"{k}={v}" for k, v in board.items()) if board else
                     f"not recorded ({(s.get('unavailable') or {}).get('board', 'unknown why')})"),
        f"CPU: {cpu.get('model') or ''}, {cpu.get('usable_cores', '?')} usable cores, "
        f"governor {cpu.get('governor') or 'not readable'}",
        f"memory: {(s.get('memory') or {}).get('total_mib', '?')} MiB",
        f"edgebench {s.get('edgebench_version', '?')}, git {str(git.get('commit') or '')[:12]}"
        + (" (dirty)" if git.get("dirty") else "") + f", Python {(s.get('python') or {}).get('version', '?')}",
        "packages: " + ", ".join(f"{k} {v}" for k, v in sorted((s.get("packages") or {}).items()) if v),
        "ONNX Runtime providers: " + ", ".join(s.get("onnxruntime_providers") or []),
    ]
    mps = s.get("cuda_mps") or {}
    if mps.get("active"):
        lines.append("CUDA MPS: active")
    return lines


def _reasons(run: Run) -> list[tuple[str, str, int, list[str]]]:
    """(status, reason, count, row indexes) for every non-ok row, grouped by identical reason."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in run.rows:
        if row.get("status") != "ok":
            groups[(row.get("status") or "", row.get("reason") or "(no reason given)")].append(str(row.get("row_index", "")))
    order = {s: i for i, s in enumerate(STATUSES)}
    return [(st, reason, len(idx), idx) for (st, reason), idx in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][1]))]


def busy_host_blocks(runs: list[Run]) -> list[tuple]:
    """The rows measured while other processes took a material share of the CPU or GPU (host_busy), with the
    figure each row's reason gives; nothing when there is none."""
    b: list[tuple] = []
    for run in runs:
        busy = [r for r in run.rows if r.get("host_busy") is True]
        if busy:
            notes = [n for r in busy for n in busy_notes(r.get("reason"))]
            b.append(("h3", run.label))
            b.append(("p", [f"{len(busy)} row(s) (row_index {', '.join(str(r.get('row_index')) for r in busy[:20])}"
                            f"{' ...' if len(busy) > 20 else ''}) ran while other processes took a material share "
                            "(10% or more) of what the instances could use; their throughput may be cut, and no "
                            "int8 cause is named from them:"]))
            b.append(("ul", [[n] for n in dict.fromkeys(notes)][:20]))
    return [("h2", "Rows measured on a busy host"), *b] if b else []


def comparability_blocks(runs: list[Run]) -> list[tuple]:
    """The report's top: what differs between the runs that can move a number (only with 2+ runs)."""
    if len(runs) < 2:
        return []
    intro, rows, same = summary_lines(runs)
    b: list[tuple] = [("h2", "Comparability of the runs"), ("p", [". ".join(intro) + "."])]
    if rows:
        b.append(("table", ["fact", *[r.label for r in runs]], rows))
    if same:
        b.append(("p", ["Same in every run: " + "; ".join(same)]))
    return b


def anchor_blocks(runs: list[Run]) -> list[tuple]:
    """Published results (references/*.yaml) beside matching rows, or why no row matches one."""
    anchors = load_anchors()
    if not anchors:
        return []
    matches, unmatched = match_anchors(runs, anchors)
    b: list[tuple] = [("h2", "Reference anchors (published results)")]
    for m in matches:
        a = m.anchor
        b.append(("p", [f"{a.benchmark}, {a.system}, {a.scenario}: {a.metric} {a.value:g} {a.unit} published; "
                        f"row {m.row.get('row_index')} of {m.run.label}: {m.measured:.4g} ({m.ratio:.3g}x). "
                        f"Source: {a.provenance.get('repository')}@{a.provenance.get('commit', '')[:12]} "
                        f"{a.provenance.get('result_file')}"]))
        b.append(("ul", [[f"differs: {d}"] for d in m.differences] or [["no setup difference recorded"]]))
    if unmatched:
        b.append(("p", ["Not compared (only matching setups are):"]))
        b.append(("ul", [[line] for line in unmatched]))
    return b


def _rel(report: Report, path: Path) -> str:
    return path.relative_to(report.out_dir).as_posix()


def summary_blocks(report: Report) -> list[tuple]:
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    b: list[tuple] = [("h1", "edgebench report"),
                      ("p", [f"Written {now} by edgebench {__version__} from {len(report.runs)} run folder(s)."])]
    b += answer_blocks(report.runs, report.fronts, report.front_figures, lambda p: _rel(report, p))
    b += comparability_blocks(report.runs)
    b.append(("h2", "Runs"))
    head = ["#", "run", "run id", "folder", "profile", "device", "written by edgebench", *STATUSES]
    rows = []
    for i, run in enumerate(report.runs):
        counts = run.status_counts()
        rows.append([str(i + 1), run.label, run.run_id, str(run.path), profile_name(run) or "-", run.device(),
                     run.written_by, *[str(counts.get(s, 0)) for s in STATUSES]])
    b.append(("table", head, rows))
    for run in report.runs:
        b.append(("h3", f"System: {run.label}"))
        b.append(("ul", [[line] for line in _system_lines(run)] + [[f"note: {n}"] for n in run.notes]))
    b.append(("h2", "Time outside measurement windows"))
    b.append(("p", ["Wall time of the rows (row.json phases) and how much of it was not a measured window or "
                    "warm-up: export, precision, prepare, probe, spawn, load, collect, accuracy, write."]))
    b.append(("table", SETUP_HEAD, setup_table(report.runs)))
    b.append(("h2", "Rows that are not ok"))
    any_reason = False
    for run in report.runs:
        reasons = _reasons(run)
        if not reasons:
            continue
        any_reason = True
        b.append(("h3", run.label))
        b.append(("ul", [[f"{status} ({n} row(s): {', '.join(idx[:12])}{' ...' if len(idx) > 12 else ''}): {reason}"]
                         for status, reason, n, idx in reasons]))
    if not any_reason:
        b.append(("p", ["every row is ok"]))
    b += busy_host_blocks(report.runs)
    b += anchor_blocks(report.runs)
    b.append(("h2", "Tables"))
    items = []
    for table in report.tables:
        items.append([f"{table.title} ({len(table.records)} lines): ",
                      *[x for ext in ("csv", "md", "tex") for x in ((ext, f"tables/{table.name}.{ext}"), " ")]])
    if report.dictionary:
        items.append(["Column dictionary (name, unit, per sample or per batch, meaning): ",
                      *[x for p in report.dictionary for x in ((p.suffix[1:], _rel(report, p)), " ")]])
    b.append(("ul", items))
    for table in report.tables:  # inline, so the page reads without opening a file
        b.append(("h3", table.title))
        b.append(table_block(table))
        if table.notes:
            b.append(("ul", [[n] for n in table.notes]))
    b += paper_blocks(report)
    b.append(("h2", "Figures"))
    if report.figures_note:
        b.append(("p", [f"No figure drawn: {report.figures_note}"]))
    main = [f for f in report.figures if not f.name.startswith("power_timeline")]
    timelines = [f for f in report.figures if f.name.startswith("power_timeline")]
    for fig in main:
        if fig.files:
            png = next((p for p in fig.files if p.suffix == ".png"), fig.files[0])
            b.append(("h3", fig.title))
            b.append(("img", _rel(report, png), fig.title))
            b.append(("p", [*[x for p in fig.files for x in ((p.suffix[1:], _rel(report, p)), " ")],
                            " — " + " · ".join(fig.caption)]))
        elif fig.absent_reason:
            b.append(("p", [f"{fig.title}: not drawn — {fig.absent_reason}"]))
    b.append(("h3", "Power timelines (measured window shaded)"))
    drawn = [f for f in timelines if f.files]
    if drawn:
        b.append(("ul", [[f"{f.title}: ", *[x for p in f.files for x in ((p.suffix[1:], _rel(report, p)), " ")],
                          "— " + " · ".join(f.caption)] for f in drawn]))
    grouped, absent = grouped_absences(timelines)  # rows without power, skipped rows: one line each
    b += [("p", [line]) for line in grouped]
    if absent:
        b.append(("p", ["Not drawn:"]))
        b.append(("ul", [[f.absent_reason or ""] for f in absent]))
    if not timelines:
        b.append(("p", ["no rows"]))
    if report.layers_page is not None:
        b.append(("h3", "Per-layer time"))
        b.append(("p", ["Top layers of every row profiled with layer_profile: ",
                        ("layers.md", _rel(report, report.layers_page))]))
    return b


def paper_blocks(report: Report) -> list[tuple]:
    """The paper figures (paper/): medians with intervals, speedup, latency CDF; each with its caption."""
    b: list[tuple] = [("h2", "Paper figures (median and interval of repeats; each caption states the bars' coverage)")]
    if report.figures_note:
        return b + [("p", [f"No figure drawn: {report.figures_note}"])]
    for fig in report.paper_figures:
        if fig.absent_reason is not None:
            continue
        png = fig.png("single")
        b.append(("h3", fig.title))
        if png is not None:
            b.append(("img", _rel(report, png), fig.title))
        b.append(("p", [" · ".join(fig.caption) + " Files: ",
                        *[x for p in fig.files for x in ((p.name, _rel(report, p)), " ")]]))
    absent = [f for f in report.paper_figures if f.absent_reason is not None]
    if absent:
        b.append(("p", ["Not drawn:"]))
        b.append(("ul", [[f"{f.title}: {f.absent_reason}"] for f in absent]))
    return b


# ------------------------------------------------------------------------------------ output


def _md_text(segments: list[Segment]) -> str:
    return "".join(s if isinstance(s, str) else f"[{s[0]}]({s[1]})" for s in segments)


def _html_text(segments: list[Segment]) -> str:
    return "".join(html.escape(s) if isinstance(s, str) else
                   f'<a href="{html.escape(s[1])}">{html.escape(s[0])}</a>' for s in segments)


def to_markdown(blocks: list[tuple]) -> str:
    out: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            out += [f"{'#' * int(kind[1])} {block[1]}", ""]
        elif kind == "p":
            out += [_md_text(block[1]), ""]
        elif kind == "ul":
            out += [f"- {_md_text(item)}" for item in block[1]] + [""]
        elif kind == "table":
            head, rows = block[1], block[2]
            out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            out += ["| " + " | ".join(c.replace("|", r"\|") for c in r) + " |" for r in rows] + [""]
        elif kind == "img":
            out += [f"![{block[2]}]({block[1]})", ""]
    return "\n".join(out)


def _data_uri(base: Path | None, rel: str) -> str:
    """The image as a data: URI (one self-contained page), or the relative link when it cannot be read."""
    if base is None:
        return rel
    path = base / rel
    try:
        data = path.read_bytes()
    except OSError:
        return rel
    kind = {".png": "image/png", ".svg": "image/svg+xml"}.get(path.suffix, "application/octet-stream")
    return f"data:{kind};base64,{base64.b64encode(data).decode()}"


def to_html(blocks: list[tuple], base: Path | None = None) -> str:
    """The page; with `base` (the report folder) every image is embedded, so the file stands alone."""
    body: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            body.append(f"<{kind}>{html.escape(block[1])}</{kind}>")
        elif kind == "p":
            body.append(f"<p>{_html_text(block[1])}</p>")
        elif kind == "ul":
            body.append("<ul>" + "".join(f"<li>{_html_text(item)}</li>" for item in block[1]) + "</ul>")
        elif kind == "table":
            head = "".join(f"<th>{html.escape(h)}</th>" for h in block[1])
            rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in block[2])
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif kind == "img":
            body.append(f'<p><img src="{html.escape(_data_uri(base, block[1]))}" alt="{html.escape(block[2])}" '
                        f'data-file="{html.escape(block[1])}" style="max-width:100%"></p>')
    style = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}"
             "img{width:640px;max-width:100%}")
    return ("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>edgebench report</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def describe(report: Report) -> str:
    """Short text for the terminal: where things are and what was left out."""
    drawn = sum(1 for f in report.figures if f.files)
    absent = sum(1 for f in report.figures if f.absent_reason)
    lines = [f"report: {report.summary_md}", f"        {report.summary_html}",
             f"tables: {len(report.table_files)} files in {report.out_dir / 'tables'}",
             f"figures: {drawn} drawn in {report.out_dir / 'figures'}, {absent} not drawn (reasons in the summary)"]
    if report.figures_note:
        lines.append(f"figures: none drawn: {report.figures_note}")
    return "\n".join(lines)
