"""The report's opening: the answer first (best configuration per model and how sure), then the Pareto front,
as summary blocks (report.summary renders them to Markdown and HTML).

`edgebench report` takes no limits, so the page gives the best per model by throughput and by energy per
inference with no limit, and names the `edgebench best` command that applies an SLO, a power cap and an
accuracy floor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.answer.best import answer_from_runs, search_note
from edgebench.answer.intervals import LEVEL, METHOD, percent
from edgebench.answer.pareto import ParetoFront
from edgebench.report.paper_figures import PaperFigure
from edgebench.report.paper_style import WIDTHS
from edgebench.report.pareto import draw_front, front_slug, front_title, pareto_table
from edgebench.report.table_format import Table, fmt_num
from edgebench.results.runs import Run

OBJECTIVES = ("throughput", "energy")


def answer_table(runs: list[Run]) -> tuple[list[str], list[list[str]], list[str]]:
    """(head, rows, notes): per model and objective the best, the runner-up and the verdict."""
    head = ["model", "setup", "objective", "best configuration", "median [interval] (coverage)", "runner-up",
            "verdict"]
    rows: list[list[str]] = []
    notes: list[str] = []
    for objective in OBJECTIVES:
        ans = answer_from_runs(runs, objective)
        for a in ans.answers:
            if not a.feasible:
                continue
            best = a.feasible[0]
            runner = a.feasible[1] if len(a.feasible) > 1 else None
            rows.append([a.model, a.setup.label, f"{ans.words}", best.candidate.label(),
                         f"{best.interval.text()} {ans.unit}" + (f" (n={best.interval.n})" if best.interval.n > 1
                                                                 else ""),
                         "-" if runner is None else f"{runner.candidate.label()}: {runner.interval.text()}",
                         a.verdict.text])
        if ans.left_out.total():
            notes.append(f"{ans.column}: {ans.left_out.total()} row(s) not ranked: " + "; ".join(ans.left_out.lines()))
        notes += [f"not ranked together: {s}" for s in ans.splits if f"not ranked together: {s}" not in notes]
    notes += [n for r in runs if (n := search_note(r)) is not None]  # a search measured only part of its plan
    if rows:
        notes.append(f"median [interval]: {METHOD}; an interval shown without '(NN% interval)' holds the median "
                     f"with >= {percent(LEVEL)} probability")
    return head, rows, notes


def table_block(table: Table) -> tuple:
    cols = [c for c in table.columns if not c.csv_only]
    rows = [[fmt_num(r.get(c.key)) if c.numeric else str(r.get(c.key) or "") for c in cols] for r in table.records]
    return ("table", [c.header for c in cols], rows or [["(no rows)"] + [""] * (len(cols) - 1)])


def draw_fronts(fronts: list[ParetoFront], out_dir: Path, formats: tuple[str, ...]) -> list[PaperFigure]:
    figures = []
    for front in fronts:
        if len(front.points) < 2 or not front.objectives:
            continue  # one configuration, or throughput alone: no trade-off to draw
        fig = PaperFigure(front_slug(front), "")
        for width in WIDTHS:
            files, caption = draw_front(front, out_dir, formats, width)
            fig.files += files
            fig.title, fig.caption = caption[0], caption[1:]
        fig.files += [out_dir / f"{front_slug(front)}_{w}.caption.{e}" for w in WIDTHS for e in ("txt", "tex")]
        figures.append(fig)
    return figures


def answer_blocks(runs: list[Run], fronts: list[ParetoFront], front_figures: list[PaperFigure],
                  rel: Any) -> list[tuple]:
    """`rel(path)`: a path of the report as the page links it."""
    head, rows, notes = answer_table(runs)
    b: list[tuple] = [("h2", "The answer: best configuration per model")]
    b.append(("p", ["No limits are applied on this page. For the best under a latency SLO, a power cap and an "
                    "accuracy floor: edgebench best RUN_DIR --slo-ms MS --power-cap-w W --max-accuracy-drop PCT "
                    "[--objective throughput|energy|latency]."]))
    if rows:
        b.append(("table", head, rows))
    else:
        b.append(("p", ["No ok row has a throughput: nothing to rank."]))
    if notes:
        b.append(("ul", [[n] for n in notes]))
    b.append(("h2", front_title(fronts)))
    members = [f for f in fronts if f.members()]
    if not members:
        whys = sorted({n for f in fronts for n in f.notes if "not a front" in n})
        b.append(("p", ["No front: " + ("; ".join(whys) if whys else "no ok configuration has a throughput") + "."]))
        return b
    b.append(table_block(pareto_table(fronts)))
    for fig in front_figures:
        png = next((p for p in fig.files if p.suffix == ".png" and p.stem.endswith("single")), None)
        if png is not None:
            b.append(("img", rel(png), fig.title))
        b.append(("p", [fig.title + ". " + " · ".join(fig.caption) + " Files: ",
                        *[x for p in fig.files for x in ((p.name, rel(p)), " ")]]))
    return b
