"""Paper tables from run rows, each written as CSV, Markdown and LaTeX (booktabs).

- results:  one line per results.csv row (model, backend, precision, batch, instances/placement,
            throughput, latency p50/p99, power, energy per inference, accuracy, status and reason);
- speedup:  each precision over strict fp32 per batch with the spread over repeats (report.speedup);
- scaling:  throughput vs instances with the efficiency against linear scaling from the fewest instances.

CSV cells keep full precision (empty = not measured); Markdown and LaTeX round for reading. Every
non-ok row stays in the results table with its status; in LaTeX its reason becomes a lettered note
under the table so the columns stay narrow, in Markdown and CSV the reason is a column.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.report.runs import Run, num
from edgebench.report.speedup import speedup_rows

PRECISION_ORDER = ("fp32", "tf32", "bf16", "fp16", "amp", "int8")
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}"}


def precision_rank(precision: str) -> tuple[int, str]:
    return (PRECISION_ORDER.index(precision) if precision in PRECISION_ORDER else len(PRECISION_ORDER), precision)


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def fmt_num(value: Any, digits: int = 4) -> str:
    """Rounded for reading: 4 significant digits, no exponent for values people read (>= 0.001)."""
    if value is None or value == "":
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 10 ** digits:
            return f"{value:.0f}"
        if abs(value) >= 1e-3:
            text = f"{value:.{digits}g}"
            return text if "e" not in text else f"{value:.0f}"
        return f"{value:.2g}"
    return str(value)


@dataclass(frozen=True)
class Col:
    key: str  # record key, also the CSV header (units in the name)
    header: str  # human header with its unit, e.g. "Throughput (img/s)"
    numeric: bool = False
    csv_only: bool = False  # kept in the CSV (full numbers), left out of Markdown/LaTeX


@dataclass
class Table:
    name: str  # file stem: tables/<name>.csv/.md/.tex
    title: str
    columns: list[Col]
    records: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)  # printed under the table
    latex_notes_from: str | None = None  # a column whose long text becomes lettered LaTeX notes

    def to_csv(self, path: Path) -> None:
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow([c.key for c in self.columns])
            for rec in self.records:
                w.writerow(["" if rec.get(c.key) is None else rec[c.key] for c in self.columns])

    def to_markdown(self) -> str:
        cols = [c for c in self.columns if not c.csv_only]
        lines = [f"**{self.title}**", "", "| " + " | ".join(c.header for c in cols) + " |",
                 "|" + "|".join("---:" if c.numeric else "---" for c in cols) + "|"]
        for rec in self.records:
            cells = [_md_cell(fmt_num(rec.get(c.key)) if c.numeric else str(rec.get(c.key) or "")) for c in cols]
            lines.append("| " + " | ".join(cells) + " |")
        if not self.records:
            lines.append("| " + " | ".join(["(no rows)"] + [""] * (len(cols) - 1)) + " |")
        lines.extend(["", *[f"- {n}" for n in self.notes]] if self.notes else [])
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        cols = [c for c in self.columns if c.key != self.latex_notes_from and not c.csv_only]
        letters: dict[str, str] = {}
        body = []
        for rec in self.records:
            cells = []
            for c in cols:
                value = rec.get(c.key)
                text = latex_escape(fmt_num(value)) if c.numeric else latex_escape(value or "")
                if c.numeric and text == "":
                    text = "--"
                if c.key == "status" and self.latex_notes_from and rec.get(self.latex_notes_from):
                    reason = str(rec[self.latex_notes_from])
                    letter = letters.setdefault(reason, _letter(len(letters)))
                    text += rf"\textsuperscript{{{letter}}}"
                cells.append(text)
            body.append(" & ".join(cells) + r" \\")
        spec = "".join("r" if c.numeric else "l" for c in cols)
        out = [r"% needs \usepackage{booktabs}", r"\begin{table}[htbp]", r"\centering", r"\small",
               rf"\caption{{{latex_escape(self.title)}}}", rf"\label{{tab:{self.name.replace('_', '-')}}}",
               rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
               " & ".join(latex_escape(c.header) for c in cols) + r" \\", r"\midrule",
               *(body or [rf"\multicolumn{{{len(cols)}}}{{l}}{{(no rows)}} \\"]), r"\bottomrule", r"\end{tabular}"]
        notes = [f"{letter}: {latex_escape(reason)}" for reason, letter in letters.items()]
        notes += [latex_escape(n) for n in self.notes]
        if notes:
            out.append(r"\par\smallskip\footnotesize " + r" \\ ".join(notes))
        out.append(r"\end{table}")
        return "\n".join(out) + "\n"

    def write(self, out_dir: Path) -> list[Path]:
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = [out_dir / f"{self.name}.{ext}" for ext in ("csv", "md", "tex")]
        self.to_csv(paths[0])
        paths[1].write_text(self.to_markdown())
        paths[2].write_text(self.to_latex())
        return paths


def _letter(i: int) -> str:
    text = ""
    i += 1
    while i:
        i, rem = divmod(i - 1, 26)
        text = chr(ord("a") + rem) + text
    return text


def _md_cell(text: str) -> str:
    return text.replace("|", r"\|").replace("\n", " ")


def _multi(runs: list[Run]) -> bool:
    return len(runs) > 1


def _has(records: list[dict[str, Any]], key: str) -> bool:
    return any(r.get(key) not in (None, "") for r in records)


def _row_sort_key(row: dict[str, Any]) -> tuple:
    return (row.get("model", ""), row.get("backend", ""), row.get("mode", ""), row.get("options", ""),
            int(num(row, "instances") or 0), precision_rank(row.get("precision", "")), int(num(row, "batch") or 0),
            int(num(row, "row_index") or 0))


# ---------------------------------------------------------------------------------------- results


def results_table(runs: list[Run]) -> Table:
    records = []
    for run in runs:
        for row in sorted(run.rows, key=_row_sort_key):
            records.append({
                "run": run.label, "row_index": row.get("row_index", ""),
                "model": row.get("model", ""), "backend": row.get("backend", ""),
                "precision": row.get("precision", ""), "batch": _int(row.get("batch")),
                "instances": _int(row.get("instances")), "placement": row.get("placement", ""),
                "mode": row.get("mode", ""), "options": row.get("options", ""),
                "power_mode": row.get("power_mode", ""),
                "throughput_ips": num(row, "throughput_ips"), "latency_ms_p50": num(row, "latency_ms_p50"),
                "latency_ms_p99": num(row, "latency_ms_p99"), "power_w_mean": num(row, "power_w_mean"),
                "energy_per_inference_mj": num(row, "energy_per_inference_mj"),
                "accuracy_top1_agreement_pct": num(row, "accuracy_top1_agreement_pct"),
                "status": row.get("status", ""), "reason": row.get("reason", ""),
            })
    cols = [Col("run", "Run")] if _multi(runs) else []
    cols += [Col("row_index", "Row"), Col("model", "Model"), Col("backend", "Backend"), Col("precision", "Precision"),
             Col("batch", "Batch", True), Col("instances", "Inst.", True), Col("placement", "Placement"),
             Col("mode", "Mode")]
    if _has(records, "options"):
        cols.append(Col("options", "Options"))
    if _has(records, "power_mode"):
        cols.append(Col("power_mode", "Power mode"))
    cols += [Col("throughput_ips", "Throughput (img/s)", True), Col("latency_ms_p50", "p50 (ms)", True),
             Col("latency_ms_p99", "p99 (ms)", True), Col("power_w_mean", "Power (W)", True),
             Col("energy_per_inference_mj", "Energy (mJ/img)", True),
             Col("accuracy_top1_agreement_pct", "Top-1 agr. vs fp32 (%)", True),
             Col("status", "Status"), Col("reason", "Reason")]
    counts: dict[str, int] = defaultdict(int)
    for rec in records:
        counts[str(rec["status"])] += 1
    notes = ["rows: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())),
             "empty cell = not measured (never 0): p99 needs >= 662 inferences; power/energy need a power sampler"]
    return Table("results", "Results per configuration", cols, records, notes, latex_notes_from="reason")


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------------------------------- speedup


def speedup_table(runs: list[Run]) -> Table:
    records = []
    for run in runs:  # never across runs: fp32 of one board is not the baseline of another
        for rec in speedup_rows(run.rows):
            rec = dict(rec, run=run.label, ok_all=f"{rec['repeats_ok']}/{rec['repeats_all']}",
                       batch=_int(rec["batch"]), instances=_int(rec["instances"]))
            rec["speedup_range"] = (f"{fmt_num(rec['speedup_min'], 3)}..{fmt_num(rec['speedup_max'], 3)}"
                                    if rec["speedup_min"] is not None else "")
            records.append(rec)
    records.sort(key=lambda r: (r["run"], r["model"], r["backend"], r["mode"], r["options"], r["instances"] or 0,
                                r["batch"] or 0, precision_rank(r["precision"])))
    cols = [Col("run", "Run")] if _multi(runs) else []
    cols += [Col("model", "Model"), Col("backend", "Backend"), Col("batch", "Batch", True),
             Col("instances", "Inst.", True), Col("mode", "Mode")]
    if _has(records, "options"):
        cols.append(Col("options", "Options"))
    if _has(records, "power_mode"):
        cols.append(Col("power_mode", "Power mode"))
    cols += [Col("precision", "Precision"), Col("ok_all", "ok/all repeats"),
             Col("throughput_ips_median", "Throughput median (img/s)", True),
             Col("speedup_vs_fp32", "Speedup vs fp32 (x)", True), Col("speedup_range", "Range (x)"),
             Col("speedup_min", "Speedup min (x)", True, csv_only=True),
             Col("speedup_max", "Speedup max (x)", True, csv_only=True),
             Col("tensor_core_time_pct_median", "TC time (%)", True),
             Col("energy_per_inference_mj_median", "Energy median (mJ/img)", True)]
    return Table("speedup", "Speedup over strict fp32 per batch (median of ok repeats; range = worst..best pairing)",
                  cols, records,
                  ["only ok rows count; ok/all shows repeats that were invalid or failed; skipped rows are left out",
                   "no speedup without an ok fp32 row for the same configuration"])


# ---------------------------------------------------------------------------------------- scaling

SCALING_KEYS = ("model", "backend", "precision", "batch", "mode", "options", "power_mode")


def scaling_records(run: Run) -> list[dict[str, Any]]:
    """Per configuration with >= 2 instance counts: median ok throughput at each count and its efficiency
    = throughput(n) / (throughput(n0) * n / n0), n0 the fewest instances with an ok row."""
    groups: dict[tuple, dict[int, list[dict[str, str]]]] = defaultdict(lambda: defaultdict(list))
    for row in run.rows:
        n = _int(row.get("instances"))
        if n is None or row.get("status") == "skipped":
            continue
        groups[tuple(row.get(k, "") for k in SCALING_KEYS)][n].append(row)
    out = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], precision_rank(k[2]), int(k[3] or 0), k[4], k[5])):
        by_n = groups[key]
        if len(by_n) < 2:
            continue
        medians: dict[int, float | None] = {}
        for n, rows in by_n.items():
            tput = [t for r in rows if r.get("status") == "ok" and (t := num(r, "throughput_ips")) is not None]
            medians[n] = statistics.median(tput) if tput else None
        ok_ns = [n for n in sorted(by_n) if medians[n] is not None]
        n0 = ok_ns[0] if ok_ns else None
        for n in sorted(by_n):
            rows = by_n[n]
            rec: dict[str, Any] = dict(zip(SCALING_KEYS, key), run=run.label, batch=_int(key[3]), instances=n,
                                       placement=rows[0].get("placement", ""),
                                       ok_all=f"{sum(r.get('status') == 'ok' for r in rows)}/{len(rows)}",
                                       throughput_ips_median=medians[n], baseline_instances=n0,
                                       throughput_ips_per_instance=None, throughput_ips_linear=None,
                                       scaling_efficiency_pct=None)
            med, base = medians[n], (medians[n0] if n0 is not None else None)
            if med is not None:
                rec["throughput_ips_per_instance"] = med / n
            if n0 is not None and base is not None:
                linear = base * n / n0
                rec["throughput_ips_linear"] = linear
                if med is not None:
                    rec["scaling_efficiency_pct"] = 100.0 * med / linear
            out.append(rec)
    return out


def scaling_table(runs: list[Run]) -> Table:
    records = [rec for run in runs for rec in scaling_records(run)]
    cols = [Col("run", "Run")] if _multi(runs) else []
    cols += [Col("model", "Model"), Col("backend", "Backend"), Col("precision", "Precision"),
             Col("batch", "Batch", True), Col("mode", "Mode")]
    if _has(records, "options"):
        cols.append(Col("options", "Options"))
    if _has(records, "power_mode"):
        cols.append(Col("power_mode", "Power mode"))
    cols += [Col("instances", "Inst.", True), Col("ok_all", "ok/all"),
             Col("throughput_ips_median", "Throughput median (img/s)", True),
             Col("throughput_ips_per_instance", "Per instance (img/s)", True),
             Col("throughput_ips_linear", "Linear from fewest (img/s)", True),
             Col("scaling_efficiency_pct", "Scaling efficiency (%)", True)]
    notes = ["efficiency = throughput(n) / (throughput(n0) * n / n0), n0 = fewest instances with an ok row; "
             "only ok rows count"]
    if not records:
        notes.append("no configuration was measured at two or more instance counts")
    return Table("scaling", "Throughput scaling with concurrent instances", cols, records, notes)


def all_tables(runs: list[Run]) -> list[Table]:
    tables = [results_table(runs), speedup_table(runs), scaling_table(runs)]
    from edgebench.report.accuracy_table import accuracy_table

    if (accuracy := accuracy_table(runs)) is not None:  # only when rows were scored against labels
        tables.append(accuracy)
    if len(runs) > 1:
        from edgebench.report.compare import cross_run_table

        tables.append(cross_run_table(runs))
    return tables
