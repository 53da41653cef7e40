"""Figures a paper can use, drawn from configurations (medians of repeats with their intervals), not loose rows.

Per group of configurations that differ only in precision and batch (same setup, model, backend, instances,
placement, options, power mode, load):

- <metric>_vs_batch: throughput, energy per inference and p50 latency, the median of the ok repeats per
  precision with its order-statistic interval as bars (answer.intervals);
- speedup_vs_batch: every precision's throughput over fp32 at the same batch (ratio of medians, interval from
  the two sides' intervals, coverage their product, a lower bound), with the 1x line;

Every caption with bars states the coverage they really have (the least and the most over the points drawn:
'coverage 75%' at 3 repeats, 'coverage 50-75%' at 2 and 3; 95% needs >= 6 repeats).
- latency_cdf: the empirical CDF of every inference's latency (rows/<row>/latencies.npz), one curve per
  precision x batch, repeats pooled.

Only ok rows are drawn (a group without one is listed as not drawn, with why); a legend names only what is drawn;
the colour of a precision is the same everywhere (paper_style); titles and notes go to <stem>.caption.txt/.tex.
Every figure is written at single-column (3.5 in) and double-column (7.16 in) width.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.answer.candidates import Candidate, LeftOut, candidates, setups
from edgebench.answer.identity import workload_entries
from edgebench.answer.intervals import METHOD, Interval, ratio_ci
from edgebench.report.figure import coverage_words, short_placement, slug
from edgebench.report.paper_style import WIDTHS, new_figure, precision_color, save, style, write_caption
from edgebench.report.table_format import precision_rank
from edgebench.results.confine import link_problem
from edgebench.results.latency_file import latency_path, read_latencies
from edgebench.results.runs import Run

GROUP_KEYS = ("backend", "instances", "mode", "placement", "options", "power_mode", "scenario", "gpu_sharing",
              "rate_per_stream_hz", "arrival")
METRICS = (("throughput_ips", "throughput (samples/s)", "throughput"),
           ("energy_per_inference_mj", "energy per inference (mJ/sample)", "energy"),
           ("latency_ms_p50", "p50 latency (ms/batch)", "latency_p50"))
MAX_CDF_POINTS = 2000  # points per curve after thinning (the quantiles keep their place)


@dataclass
class PaperFigure:
    stem: str
    title: str
    caption: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # PNG/PDF, both widths
    absent_reason: str | None = None

    def png(self, width: str = "double") -> Path | None:
        return next((p for p in self.files if p.suffix == ".png" and p.stem.endswith(width)), None)


@dataclass
class Group:
    setup: str
    model: str
    key: dict[str, Any]
    members: list[Candidate]
    runs: list[Run]
    tag: str = ""  # tells apart the files of curves that differ only in their workload

    def words(self) -> str:
        k = self.key
        parts = [self.model, str(k.get("backend")), f"{k.get('instances')} inst.", short_placement(k.get("placement"))]
        for name in ("options", "power_mode", "gpu_sharing"):
            if k.get(name):
                parts.append(f"{name} {k[name]}")
        if k.get("scenario") and k.get("scenario") != "closed-loop":
            parts.append(str(k["scenario"]))
        entries = workload_entries(k.get("workload")) or {}
        parts += [f"{name} {entries[name]}" for name in ("inputs", "shapes") if name in entries]
        return ", ".join(parts) + f" on {self.setup}"

    def stem(self, kind: str) -> str:
        k = self.key
        return slug(kind, self.model, k.get("backend"), f"n{k.get('instances')}", short_placement(k.get("placement")),
                    k.get("options") or "", k.get("power_mode") or "", k.get("gpu_sharing") or "",
                    "" if k.get("scenario") in (None, "closed-loop") else k.get("scenario"), self.setup, self.tag)


def groups(runs: list[Run]) -> list[Group]:
    out = []
    for setup in setups(runs)[0]:
        by_key: dict[tuple, list[Candidate]] = defaultdict(list)
        for cand in candidates(setup.runs, setup.label, ("throughput_ips",), LeftOut()):
            key = (cand.model, *(cand.identity.get(k) for k in GROUP_KEYS), _workload_of_curve(cand))
            by_key[key].append(cand)
        for key, members in by_key.items():
            out.append(Group(setup.label, str(key[0]), {**dict(zip(GROUP_KEYS, key[1:-1])), "workload": key[-1]},
                             members, setup.runs))
    alike: dict[tuple, list[Group]] = defaultdict(list)
    for g in out:
        alike[(g.setup, g.model) + tuple(g.key.get(k) for k in GROUP_KEYS)].append(g)  # 3.10: no * in []
    for same in alike.values():
        if len(same) > 1:
            for g in same:
                g.tag = "w" + hashlib.sha256(str(g.key.get("workload")).encode()).hexdigest()[:8]
    return out


def _workload_of_curve(cand: Candidate) -> str | None:
    """What a curve across batches and precisions shares of its configurations' workload (answer.identity): every
    entry but the int8 calibration (a precision's own); None when the rows do not record one. Configurations that
    ran on other inputs (shapes, files, data) draw curves of their own, never points of one curve."""
    entries = workload_entries(cand.identity.get("workload"))
    if entries is None:
        return None
    return "; ".join(f"{k}={v}" for k, v in sorted(entries.items()) if k != "calibration")


def _precisions(members: list[Candidate]) -> list[str]:
    return sorted({str(c.identity.get("precision")) for c in members}, key=precision_rank)


def _batch_axis(ax: Any, batches: list[int]) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    if batches and min(batches) > 0 and max(batches) / min(batches) >= 8:
        ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(batches))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("batch (samples per inference)")


def _errbar(ax: Any, xs: list[float], ivs: list[Interval], color: str, label: str) -> None:
    ys = [iv.median for iv in ivs]
    lo = [(iv.median - iv.lo) if iv.lo is not None and iv.median is not None else 0.0 for iv in ivs]
    hi = [(iv.hi - iv.median) if iv.hi is not None and iv.median is not None else 0.0 for iv in ivs]
    ax.errorbar(xs, ys, yerr=[lo, hi], color=color, marker="o", markersize=3, linewidth=1.0, capsize=2,
                elinewidth=0.8, label=label)


def _both_widths(stem: str, out_dir: Path, formats: tuple[str, ...], draw: Any) -> list[Path]:
    files = []
    for width in WIDTHS:
        with style():
            fig, ax = new_figure(width)
            draw(ax)
            files += save(fig, out_dir, f"{stem}_{width}", formats)
    return files


def metric_vs_batch(group: Group, column: str, y_label: str, kind: str, out_dir: Path,
                    formats: tuple[str, ...]) -> PaperFigure:
    fig = PaperFigure(group.stem(f"{kind}_vs_batch"), f"{y_label.split(' (')[0].capitalize()} vs batch: "
                      f"{group.words()}")
    series = []
    for prec in _precisions(group.members):
        pts = sorted(((c.identity["batch"], c.interval(column)) for c in group.members
                      if c.identity.get("precision") == prec and c.values(column)), key=lambda bi: bi[0])
        if pts:
            series.append((prec, pts))
    if not series:
        fig.absent_reason = f"no ok row has {column}"
        return fig
    batches = sorted({b for _p, pts in series for b, _iv in pts})

    def draw(ax: Any) -> None:
        for prec, pts in series:
            _errbar(ax, [b for b, _ in pts], [iv for _, iv in pts], precision_color(prec), prec)
        _batch_axis(ax, batches)
        ax.set_ylabel(y_label)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(frameon=False)

    fig.files = _both_widths(fig.stem, out_dir, formats, draw)
    ns = sorted({iv.n for _p, pts in series for _b, iv in pts})
    covs = coverage_words(iv.coverage for _p, pts in series for _b, iv in pts if iv.lo is not None)
    fig.caption = [f"median of the ok repeats per configuration; bars: interval of the median"
                   f"{', ' + covs if covs else ''} ({METHOD}); repeats per point: {', '.join(map(str, ns))} "
                   "(n=1: no bar)",
                   "per sample" if column in ("throughput_ips", "energy_per_inference_mj") else "per batch"]
    return fig


def speedup_vs_batch(group: Group, out_dir: Path, formats: tuple[str, ...]) -> PaperFigure:
    fig = PaperFigure(group.stem("speedup_vs_batch"), f"Speedup over fp32 vs batch: {group.words()}")
    fp32 = {c.identity["batch"]: c.values("throughput_ips") for c in group.members
            if c.identity.get("precision") == "fp32"}
    series = []
    for prec in _precisions(group.members):
        if prec == "fp32":
            continue
        pts = sorted(((c.identity["batch"], ratio_ci(c.values("throughput_ips"), fp32[c.identity["batch"]]))
                      for c in group.members if c.identity.get("precision") == prec and fp32.get(c.identity["batch"])),
                     key=lambda bi: bi[0])
        if pts:
            series.append((prec, pts))
    if not series:
        fig.absent_reason = ("no fp32 configuration to compare with" if not fp32 else
                             "no other precision measured at a batch fp32 has")
        return fig
    batches = sorted({b for _p, pts in series for b, _iv in pts})

    def draw(ax: Any) -> None:
        ax.axhline(1.0, color="0.4", linewidth=0.8, linestyle="--", label="fp32 (1x)")
        for prec, pts in series:
            _errbar(ax, [b for b, _ in pts], [iv for _, iv in pts], precision_color(prec), prec)
        _batch_axis(ax, batches)
        ax.set_ylabel("throughput speedup over fp32 (x)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(frameon=False)

    fig.files = _both_widths(fig.stem, out_dir, formats, draw)
    covs = coverage_words((iv.coverage for _p, pts in series for _b, iv in pts if iv.lo is not None),
                          lower_bound=True)
    fig.caption = ["median throughput of each precision over fp32's median at the same batch; bars: "
                   "[lo / hi_fp32, hi / lo_fp32] from the two medians' intervals"
                   f"{', ' + covs if covs else ''} (the product of the sides' coverages, a lower bound; {METHOD}) "
                   "(n=1 on either side: no bar)"]
    return fig


def latencies_ms(run: Run, row: dict[str, Any]) -> list[float] | None:
    """Every inference's latency (end - start) in ms from the row's latencies.npz (latencies.csv.gz in a run an
    earlier edgebench wrote); None when absent."""
    folder = row.get("artifact_dir")
    if not folder or not run.path.is_dir():
        return None
    path = latency_path(run.path / str(folder))
    if path is None or link_problem(run.path, path) is not None or not path.is_file():
        return None
    values: list[float] = read_latencies(path).latency_ms().tolist()
    return values


def latency_cdf(group: Group, out_dir: Path, formats: tuple[str, ...]) -> PaperFigure:
    fig = PaperFigure(group.stem("latency_cdf"), f"Latency CDF per configuration: {group.words()}")
    by_row = {id(r): run for run in group.runs for r in run.rows}
    curves = []
    for cand in sorted(group.members, key=lambda c: (precision_rank(str(c.identity["precision"])),
                                                     c.identity["batch"])):
        values: list[float] = []
        for row in cand.rows:
            got = latencies_ms(by_row[id(row)], row) if id(row) in by_row else None
            values += got or []
        if values:
            curves.append((cand, sorted(values)))
    if not curves:
        fig.absent_reason = "no ok row has per-inference latencies (rows/<row>/latencies.npz)"
        return fig
    batches = sorted({c.identity["batch"] for c, _v in curves})
    styles = ["-", "--", ":", "-."]

    def draw(ax: Any) -> None:
        for cand, values in curves:
            step = max(1, len(values) // MAX_CDF_POINTS)
            xs = values[::step] + [values[-1]]
            ys = [min(1.0, (i * step + 1) / len(values)) for i in range(len(values[::step]))] + [1.0]
            b = cand.identity["batch"]
            ax.plot(xs, ys, color=precision_color(str(cand.identity["precision"])), linewidth=1.0,
                    linestyle=styles[batches.index(b) % len(styles)], label=f"{cand.identity['precision']} b{b}")
        lo = min(v[0] for _c, v in curves)
        hi = max(v[-1] for _c, v in curves)
        if lo > 0 and hi / lo > 20:
            ax.set_xscale("log")
        ax.set_xlabel("latency of one inference (ms/batch)")
        ax.set_ylabel("fraction of inferences")
        ax.set_ylim(0, 1.01)
        ax.grid(True, alpha=0.3)
        ax.legend(frameon=False, ncol=2 if len(curves) > 6 else 1)

    fig.files = _both_widths(fig.stem, out_dir, formats, draw)
    fig.caption = ["empirical CDF of every inference inside the measured windows of the ok repeats (pooled); "
                   "colour = precision, line style = batch"]
    return fig


def paper_figures(runs: list[Run], out_dir: Path, formats: tuple[str, ...] = ("png", "pdf")) -> list[PaperFigure]:
    """Every paper figure of the runs, drawn into out_dir with its captions; absent ones carry the reason."""
    figures: list[PaperFigure] = []
    for group in groups(runs):
        for column, label, kind in METRICS:
            figures.append(metric_vs_batch(group, column, label, kind, out_dir, formats))
        figures.append(speedup_vs_batch(group, out_dir, formats))
        figures.append(latency_cdf(group, out_dir, formats))
    for fig in figures:
        if fig.absent_reason is None:
            fig.files += write_caption(out_dir, fig.stem, fig.title, fig.caption)
    return figures
