"""One table and its three renderings: CSV (full numbers), Markdown and LaTeX (booktabs), plus the
number formatting and precision ordering every report table shares.

Below `tables` (the run tables) and `compare` (the cross-run table), so both build `Table`s without
importing each other.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.answer.candidates import PRECISION_ORDER, precision_rank  # noqa: F401  (re-exported for the tables)

_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}"}


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
    label: str = ""  # makes the LaTeX label unique per run: tab:<name>-<label>

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
            cells = [_md_cell(fmt_num(rec.get(c.key)) if c.numeric else _text(rec.get(c.key))) for c in cols]
            lines.append("| " + " | ".join(cells) + " |")
        if not self.records:
            lines.append("| " + " | ".join(["(no rows)"] + [""] * (len(cols) - 1)) + " |")
        lines.extend(["", *[f"- {n}" for n in self.notes]] if self.notes else [])
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        cols = [c for c in self.columns if c.key != self.latex_notes_from and not c.csv_only]
        letters: dict[str, Any] = {}
        body_cells: list[list[str]] = []
        for rec in self.records:
            cells = []
            for c in cols:
                value = rec.get(c.key)
                text = latex_escape(fmt_num(value)) if c.numeric else latex_escape(_text(value))
                if c.numeric and text == "":
                    text = "--"
                if c.key == "status" and self.latex_notes_from and rec.get(self.latex_notes_from):
                    reason = str(rec[self.latex_notes_from])
                    letter = letters.setdefault(reason, _letter(len(letters)))
                    text += rf"\textsuperscript{{{letter}}}"
                cells.append(text)
            body_cells.append(cells)
        label = self.name.replace("_", "-") + (f"-{self.label}" if self.label else "")
        out = [r"% needs \usepackage{booktabs}", r"\begin{table}[htbp]", r"\centering", r"\small",
               rf"\caption{{{latex_escape(self.title)}}}", rf"\label{{tab:{label}}}"]
        for i, part in enumerate(latex_parts(cols)):  # a wide table: several tabulars, the lead columns in each
            if i:
                out.append(r"\par\medskip")
            idx = [cols.index(c) for c in part]
            rows = [" & ".join(cells[j] for j in idx) + r" \\" for cells in body_cells]
            spec = "".join("r" if c.numeric else "l" for c in part)
            out += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
                    " & ".join(latex_escape(c.header) for c in part) + r" \\", r"\midrule",
                    *(rows or [rf"\multicolumn{{{len(part)}}}{{l}}{{(no rows)}} \\"]), r"\bottomrule",
                    r"\end{tabular}"]
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


MAX_LATEX_COLUMNS = 9  # columns of one tabular: more do not fit a page column at \small


def latex_parts(cols: list[Col]) -> list[list[Col]]:
    """The columns split into tabulars of at most MAX_LATEX_COLUMNS, each starting with the lead columns (the
    text columns before the first number, at most 3) so every part names its rows."""
    if len(cols) <= MAX_LATEX_COLUMNS:
        return [cols]
    lead: list[Col] = []
    for c in cols:
        if c.numeric or len(lead) == 3:
            break
        lead.append(c)
    rest = cols[len(lead):]
    step = MAX_LATEX_COLUMNS - len(lead)
    return [lead + rest[i:i + step] for i in range(0, len(rest), step)]


def _text(value: Any) -> str:
    """A text cell: '' for None only (row 0 and a 0 count are values, not blanks)."""
    return "" if value is None else str(value)


def _letter(i: int) -> str:
    text = ""
    i += 1
    while i:
        i, rem = divmod(i - 1, 26)
        text = chr(ord("a") + rem) + text
    return text


def _md_cell(text: str) -> str:
    return text.replace("|", r"\|").replace("\n", " ")
