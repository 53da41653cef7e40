"""What every paper figure of the answer layer shares: one colour per precision, column widths, text sizes,
and captions written beside the figure (.txt and .tex) instead of into it.

Sizes are print sizes: a single column is 3.5 in wide, a double column 7.16 in (IEEE/ACM two-column); the
smallest text (ticks, legend) is 7 pt at that size, so nothing shrinks below 7 pt when the figure is placed
at 100% width. matplotlib is imported lazily by the functions that draw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.report.table_format import PRECISION_ORDER, latex_escape

SINGLE_COLUMN_IN = 3.5
DOUBLE_COLUMN_IN = 7.16
WIDTHS = {"single": SINGLE_COLUMN_IN, "double": DOUBLE_COLUMN_IN}
MIN_FONT_PT = 7.0
BASE_FONT_PT = 8.0
# tab10, in PRECISION_ORDER: the same precision has the same colour in every figure (render.py uses the same)
_TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf")
PRECISION_COLORS: dict[str, str] = {p: _TAB10[i] for i, p in enumerate(PRECISION_ORDER)}
OTHER_COLOR = "#7f7f7f"


def precision_color(precision: str) -> str:
    return PRECISION_COLORS.get(precision, OTHER_COLOR)


def rc() -> dict[str, Any]:
    """matplotlib rc settings: every text at least MIN_FONT_PT at print size."""
    return {"font.size": BASE_FONT_PT, "axes.labelsize": BASE_FONT_PT, "axes.titlesize": BASE_FONT_PT,
            "xtick.labelsize": MIN_FONT_PT, "ytick.labelsize": MIN_FONT_PT, "legend.fontsize": MIN_FONT_PT,
            "legend.title_fontsize": MIN_FONT_PT, "pdf.fonttype": 42, "ps.fonttype": 42}


def style() -> Any:
    """A context in which a figure is built and saved: draw everything inside it, so every text gets rc()."""
    from matplotlib import rc_context

    settings: Any = rc()
    return rc_context(settings)


def new_figure(width: str, aspect: float = 0.75) -> Any:
    """(Figure, Axes) at a column width ('single' or 'double'; double is as tall as single), Agg canvas, no
    pyplot state. Call inside style()."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    w = WIDTHS[width]
    fig = Figure(figsize=(w, SINGLE_COLUMN_IN * aspect), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def smallest_font_pt(fig: Any) -> float:
    """The smallest text size drawn in a figure (points at print size): what the >= 7 pt rule is checked on."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]
    return min(sizes) if sizes else BASE_FONT_PT


def save(fig: Any, out_dir: Path, stem: str, formats: tuple[str, ...]) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for fmt in formats:
        path = out_dir / f"{stem}.{fmt}"
        fig.savefig(path, dpi=300)  # the size is the print size: no bbox "tight" that would change it
        files.append(path)
    return files


def write_caption(out_dir: Path, stem: str, title: str, notes: list[str]) -> list[Path]:
    """<stem>.caption.txt (title, then one note per line) and <stem>.caption.tex (\\caption{...} with a label
    unique to this figure)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    txt = out_dir / f"{stem}.caption.txt"
    txt.write_text("\n".join([title, *notes]) + "\n")
    tex = out_dir / f"{stem}.caption.tex"
    body = latex_escape(title) + (". " + " ".join(latex_escape(n) for n in notes) if notes else "")
    tex.write_text(f"\\caption{{{body}}}\n\\label{{fig:{stem.replace('_', '-')}}}\n")
    return [txt, tex]
