"""What an input set still lacks before it can run, said in one refusal (issue 37: silero_vad.onnx needed four runs,
one refusal each: the shapes, then the batch axis of `state`, then the value of `sr`).

`resolve()` (models/inputs.py) collects one `Missing` per input instead of raising at the first: dynamic axes no
shape gives, a state whose batch went to a fixed axis, a scalar integer with no value, token ids with no vocabulary.
`MissingInputs` says all of them; for an ONNX file, models/proposal.py adds the options that would make it run.

How an input is described decides what it is offered:
- an image (`image_layout`: rank 4, 1 or 3 channels on axis 1 (NCHW) or 3 (NHWC), only its height/width (and
  batch) dynamic, e.g. an OCR line [1, 1, 64, W]) is offered --shapes with its height/width, never --batch-axis;
- a state (`looks_like_state`: rank >= 3, axis 0 fixed, exactly one dynamic axis, with fixed axes on both sides,
  e.g. [layers, batch, hidden] = [2, ?, 128]) is offered --batch-axis NAME:AXIS for that axis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from edgebench.errors import InputError


class GraphInputLike(Protocol):
    """models.inputs.GraphInput, as this module reads it (inputs.py imports this module, not the other way)."""

    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def dims(self) -> tuple[int | str | None, ...]: ...

CHANNELS = (1, 3)
OPTIONS = {"shapes": "--shapes", "axes": "--batch-axis", "values": "--value", "vocab": "--vocab"}


def _dynamic(dim: int | str | None) -> bool:
    return not isinstance(dim, int) or dim <= 0


def image_layout(dims: tuple[int | str | None, ...]) -> str | None:
    """'NCHW' or 'NHWC' when `dims` look like an image batch: rank 4, 1 or 3 channels (fixed), nothing dynamic but
    the batch and the spatial axes; else None."""
    if len(dims) != 4:
        return None
    for layout, channel, spatial in (("NCHW", 1, (2, 3)), ("NHWC", 3, (1, 2))):
        if dims[channel] in CHANNELS and all(not _dynamic(dims[a]) for a in range(1, 4) if a not in spatial):
            return layout
    return None


def looks_like_state(dims: tuple[int | str | None, ...]) -> int | None:
    """The axis that is likely the batch of a recurrent state ([layers, batch, hidden]: 1), else None: rank >= 3,
    axis 0 fixed, one dynamic axis with fixed axes on both sides, and not an image."""
    dynamic = [a for a, d in enumerate(dims) if _dynamic(d)]
    if len(dims) < 3 or image_layout(dims) is not None or len(dynamic) != 1:
        return None
    axis = dynamic[0]
    return axis if 0 < axis < len(dims) - 1 else None


def dims_text(dims: tuple[int | str | None, ...]) -> str:
    if not dims:
        return "[] (a scalar)"
    return "[" + ", ".join(str(d) if d is not None else "?" for d in dims) + "]"


@dataclass(frozen=True)
class Missing:
    """What one input lacks. `axes`: its dynamic axes (of the full shape) no shape gives; `state_axis`: the axis
    proposed as its batch (a state whose batch went to a fixed axis); `needs`: 'value' (a scalar integer) or
    'vocab' (token ids) or ''. `batch_axis`: its batch axis as resolved (None: none)."""

    graph: GraphInputLike
    batch_axis: int | None
    axes: tuple[int, ...] = ()
    state_axis: int | None = None
    needs: str = ""

    @property
    def name(self) -> str:
        return self.graph.name

    def problem(self, source: str, sources: Sources) -> str:
        """This input's part of the refusal, naming the input, its axes and the option that gives each."""
        g = self.graph
        parts = []
        if self.state_axis is not None:
            axis = self.state_axis
            label = f" ('{g.dims[axis]}')" if isinstance(g.dims[axis], str) and g.dims[axis] else ""
            example = "x".join(str(d) if not _dynamic(d) else "N" for d in g.dims)
            parts.append(f"input '{g.name}' axis {axis}{label} is dynamic and no shape gives it; it looks like a "
                         f"state {dims_text(g.dims)} whose batch is axis {axis}: if so, say so with "
                         f"{sources.say('axes', f'{g.name}:{axis}')}; else give it with "
                         f"{sources.say('shapes', f'{g.name}:{example}')}")
        elif self.axes:
            example = "x".join(str(d) if not _dynamic(d) else "N" for d in g.dims)
            axes = [f"axis {a}" + (f" ('{g.dims[a]}')" if isinstance(g.dims[a], str) and g.dims[a] else "")
                    for a in self.axes]
            nor = "".join(f", nor {a}" for a in axes[1:])
            what = _image_words(g.dims, self.axes)
            parts.append(f"input '{g.name}' {axes[0]} is dynamic and no shape gives it{nor}{what}; give it with "
                         f"{sources.say('shapes', f'{g.name}:{example}')} (or shapes: in the profile/model spec)")
        if self.needs == "value":
            parts.append(f"input '{g.name}' is a scalar {g.dtype} (one number at every batch, e.g. a sample rate) "
                         f"and nothing says its value; give it with {sources.say('values', f'{g.name}:V')} (or "
                         f"values: in the model spec), or draw it at random from [0, N) with --vocab {g.name}:N")
        elif self.needs == "vocab":
            parts.append(f"input '{g.name}' is {g.dtype} token ids and no vocabulary size is known; give "
                         f"--vocab {g.name}:N (or vocab: in the model spec), real data with --data, or a constant "
                         f"with {sources.say('values', f'{g.name}:V')}")
        prefix = f"{source}: " if source else ""
        return prefix + "; ".join(parts)


def _image_words(dims: tuple[int | str | None, ...], axes: tuple[int, ...]) -> str:
    layout = image_layout(dims)
    if layout is None:
        return ""
    h, w = (2, 3) if layout == "NCHW" else (1, 2)
    names = [n for a, n in ((h, "height"), (w, "width")) if a in axes]
    channels = dims[1] if layout == "NCHW" else dims[3]
    return f" (an image, {layout} with {channels} channel{'s' if channels != 1 else ''}: its {' and '.join(names)})" \
        if names else ""


@dataclass(frozen=True)
class Sources:
    """Where each kind of setting is given: the option ('--batch-axis') or a spec file's field ('x.yaml: batch_axis');
    shapes and values are always offered as options (the spec's key is named after them)."""

    axes: str = "--batch-axis"

    def say(self, kind: str, text: str) -> str:
        """'--batch-axis state:1' (a spec file's field: 'x.yaml: batch_axis: {state: 1}'), '--shapes x:1x8'."""
        if kind != "axes":
            return f"{OPTIONS[kind]} {text}"
        if self.axes.startswith("--"):
            return f"{self.axes} {text}"
        name, _, value = text.rpartition(":")
        return f"{self.axes}: {{{name}: {value}}}"


class MissingInputs(InputError):
    """Everything an input set lacks, in one refusal. `proposal`: the options that would make it run (set by
    models/proposal.py for an ONNX file: option -> text, the given ones merged in), `tried`: what trying them said."""

    def __init__(self, source: str, missing: list[Missing], sources: Sources) -> None:
        self.source = source
        self.missing = list(missing)
        self.sources = sources
        self.proposal: dict[str, str] = {}
        self.tried = ""
        super().__init__(self.problems())

    def problems(self) -> str:
        if len(self.missing) == 1:
            return self.missing[0].problem(self.source, self.sources)
        parts = [f"({i}) {m.problem('', self.sources)}" for i, m in enumerate(self.missing, 1)]
        return f"{self.source}: {len(self.missing)} inputs need more before it can run: " + "; ".join(parts)

    def with_proposal(self, proposal: dict[str, str], tried: str) -> MissingInputs:
        self.proposal = dict(proposal)
        self.tried = tried
        self.args = (self.text(),)
        return self

    def text(self, command: str | None = None) -> str:
        """The problems, then the options (or `command`: a whole command line) that would run, with what trying
        them said."""
        if not self.proposal:
            return self.problems()
        options = command or " ".join(f"{k} {v}" for k, v in self.proposal.items())
        return f"{self.problems()}; {self.tried}: {options}"

    def __str__(self) -> str:
        return self.text()
