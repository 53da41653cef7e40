"""Latency over the window of an SLO search's probes at its answer N and at N+1 (issue 35): p50 and p99 per second
of arrival time, so a reader sees whether the backlog grows, which the probes' percentiles alone hide (a 1%
overload's p99 looks fine for seconds while its latency climbs for the whole window).

One figure per search (a line of the run's slo_search.csv): for N and for N+1 the probe row with the longest window
(a window run longer for the horizon, else the worst repeat by p99), its latencies.npz read back
(results.latency_file): the inferences inside the row's window up to the earliest of its streams' last served
arrivals (as runner.backlog's trend: past it the streams furthest behind record nothing), binned by arrival
second, p50 (solid) and p99 (dashed) of each bin of at least MIN_PER_SECOND inferences; the SLO a dotted line.
The caption gives each probe's verdict, latency trend and served / offered rate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.report.figure import FigureData, Series, slug
from edgebench.report.slo_table import slo_records
from edgebench.results.confine import link_problem
from edgebench.results.latency_file import latency_path, read_latencies
from edgebench.results.runs import Run

BIN_S = 1.0  # p50 / p99 per second of arrival time
MIN_PER_SECOND = 5  # a bin with fewer inferences is left out (a p99 of 2 values says nothing)
SEARCH_KEYS = ("model", "backend", "precision", "batch", "rate_per_stream_hz", "arrival")


def latency_over_window(runs: list[Run]) -> list[FigureData]:
    """A figure per SLO search of each run (none for runs without slo_search.csv)."""
    figures = []
    for i, run in enumerate(runs):
        for rec in slo_records(run):
            figures.append(search_window_figure(run, rec, f"run{i + 1}" if len(runs) > 1 else ""))
    return figures


def probe_rows(run: Run, rec: dict[str, Any]) -> list[dict[str, Any]]:
    """The slo-search rows of one search (slo_search.csv line `rec`): same model, backend, precision, batch, rate,
    arrival, options and sharing mode, and a repeat of its block (search k's probes carry k*R .. k*R+R-1)."""
    repeats = int(rec.get("repeats_per_count") or 1)
    search = int(rec.get("search") or 0)
    out = []
    for row in run.rows:
        if row.get("scenario") != "slo-search":
            continue
        if any(_same(row.get(k), rec.get(k)) is False for k in SEARCH_KEYS):
            continue
        if (row.get("options") or "default") != rec.get("options") or \
                (row.get("gpu_sharing") or "time-slicing") != rec.get("gpu_sharing"):
            continue
        if not search * repeats <= int(row.get("repeat") or 0) < (search + 1) * repeats:
            continue
        out.append(row)
    return out


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None or a == "" or b == "":
        return a in (None, "") and b in (None, "")
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def shown_probe(rows: list[dict[str, Any]], streams: int) -> dict[str, Any] | None:
    """The row drawn for a count: the longest window (the last one run for the horizon), then the worst p99."""
    mine = [r for r in rows if r.get("instances") == streams and r.get("status") in ("ok", "invalid")]
    return max(mine, key=lambda r: (r.get("window_s") or 0.0, r.get("latency_ms_p99") or 0.0), default=None)


def per_second(run: Run, row: dict[str, Any]) -> tuple[list[float], list[float], list[float]] | str:
    """(t_s, p50_ms, p99_ms) per second of arrival time from the row's latencies.npz, or why there are none."""
    import numpy as np

    art = row.get("artifact_dir") or ""
    row_dir = run.path / art if art else None
    if row_dir is None or not row_dir.is_dir():
        return f"no row folder ({art or 'artifact_dir empty'})"
    if (problem := link_problem(run.path, row_dir)) is not None:
        return problem
    path = latency_path(row_dir)
    if path is None or path.is_symlink():
        return f"no latencies file in {row_dir}"
    lat = read_latencies(Path(path))
    spans = lat.spans_ns()
    if not spans or lat.issued_ns is None:
        return "no fixed-rate latencies"
    w0, w1 = max(s for s, _e in spans.values()), min(e for _s, e in spans.values())
    inside = (lat.start_ns >= w0) & (lat.end_ns <= w1)
    arrival, end, stream = lat.start_ns[inside], lat.end_ns[inside], lat.instance[inside]
    if not len(arrival):
        return "no inference inside the window"
    keep = arrival <= min(int(arrival[stream == i].max()) for i in np.unique(stream).tolist())
    arrival, end = arrival[keep], end[keep]
    t_s = (arrival - arrival.min()) / 1e9
    latency_ms = (end - arrival) / 1e6
    which = np.floor(t_s / BIN_S).astype(np.int64)
    xs, p50, p99 = [], [], []
    for b in np.unique(which).tolist():
        values = latency_ms[which == b]
        if len(values) >= MIN_PER_SECOND:
            xs.append((b + 0.5) * BIN_S)
            p50.append(float(np.percentile(values, 50)))
            p99.append(float(np.percentile(values, 99)))
    return xs, p50, p99


def search_window_figure(run: Run, rec: dict[str, Any], tag: str = "") -> FigureData:
    """Latency per second over the window of the probes at N and N+1 of one search."""
    answer = rec.get("max_streams_under_slo")
    n = int(answer) if answer not in (None, "") else 0
    rate = float(rec.get("rate_per_stream_hz") or 0)
    title = (f"Latency over the window at N={n} and N+1={n + 1}: {rec.get('model')} {rec.get('backend')} "
             f"{rec.get('precision')} b{rec.get('batch')}, {rec.get('options')}, {rec.get('gpu_sharing')}, "
             f"streams of {rate:g}/s, {rec.get('arrival')} arrivals")
    fig = FigureData(slug("slo_window", tag, rec.get("model"), rec.get("backend"), rec.get("precision"),
                          f"b{rec.get('batch')}", rec.get("options"), rec.get("gpu_sharing"), rec.get("arrival"),
                          f"search{rec.get('search') or 0}"),
                     title, "arrival time in the window (s)", ["latency incl. queueing (ms), per second"])
    rows = probe_rows(run, rec)
    fig.counts = {"ok": sum(r.get("status") == "ok" for r in rows),
                  "invalid": sum(r.get("status") == "invalid" for r in rows)}
    missing = []
    for streams in (n, n + 1):
        if streams < 1:
            continue
        row = shown_probe(rows, streams)
        if row is None:
            missing.append(f"{streams} streams: no measured probe")
            continue
        data = per_second(run, row)
        if isinstance(data, str):
            missing.append(f"{streams} streams (row {row.get('row_index')}): {data}")
            continue
        xs, p50, p99 = data
        for label, ys, style in (("p50", p50, "-"), ("p99", p99, "--")):
            s = Series(f"{streams} streams {label}", kind="trace", color_key=f"streams:{streams}", linestyle=style,
                       marker="")
            s.line_x, s.line_y = xs, ys
            fig.series.append(s)
        trend = row.get("latency_trend_ms_per_s")
        fig.caption.append(
            f"{streams} streams (row {row.get('row_index')}, {row.get('window_s') or 0:.3g} s window): "
            f"{row.get('slo_verdict') or row.get('status')}, p99 {row.get('latency_ms_p99') or 0:.4g} ms, "
            + (f"latency trend {trend:.3g} ms/s [{row.get('latency_trend_lo_ms_per_s'):.3g}, "
               f"{row.get('latency_trend_hi_ms_per_s'):.3g}] (95%), " if trend is not None else "no latency trend, ")
            + f"{row.get('achieved_rate_hz') or 0:.4g}/s served of {row.get('offered_rate_hz') or 0:.4g}/s offered")
    fig.caption.extend(missing)
    slo = rec.get("slo_ms")
    if slo is not None and fig.series:
        ref = Series(f"SLO p99 <= {float(slo):g} ms", color_key="slo", linestyle=":", marker="")
        xs_all = [x for s in fig.series for x in s.line_x]
        ref.line_x, ref.line_y = [min(xs_all), max(xs_all)], [float(slo)] * 2
        fig.references.append(ref)
    if rec.get("holds_at_max"):
        fig.caption.append(f"N={n}: {rec['holds_at_max']}")
    if not fig.series:
        fig.absent_reason = "; ".join(missing) or "no probe at N or N+1"
    ys = [y for s in fig.series for y in s.line_y if y > 0]
    fig.y_log = bool(ys and max(ys) / min(ys) > 20)
    return fig
