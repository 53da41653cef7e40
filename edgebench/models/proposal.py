"""The options that would make an ONNX file run, proposed in the refusal that says what it lacks (issue 37).

For each `Missing` (models/missing_inputs.py) a few candidates, most likely first:
- a dynamic axis: an image's width 4x its fixed height (a text line), its height the fixed width, both 224 (then
  256, 320, 640, 32); token ids 128 (then 64, 32, ...); any other axis 512 (an audio chunk; then 256, 1024, ...);
- a state's batch: the axis it looks like (--batch-axis state:1);
- a scalar integer: the integer constants the graph compares it with or divides by (silero: Equal(sr, 16000)),
  then 16000 and 8000 for a name like a sample rate, then 1 and 0;
- token ids: the rows of the embedding table that Gathers them, else 100, then 2.
The batch is the one given (--shapes), else the one the graph fixes, else 1.

The candidates are tried in turn, one inference each on ONNX Runtime CPU with edgebench's own synthetic data (a
model's shape rules, e.g. silero's 512-sample chunk at 16 kHz, are in no dim), within TRIAL_BUDGET_S; the first that
runs is proposed and the refusal says it ran. Without onnxruntime, for a file over TRIAL_MAX_BYTES or when none
ran, the first candidate is proposed and the refusal says so.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from edgebench.errors import exc_message
from edgebench.models.inputs import GraphInput, batch_axes, resolve, synthetic
from edgebench.models.missing_inputs import GraphInputLike, Missing, MissingInputs, image_layout

TRIAL_BUDGET_S = 20.0
TRIAL_MAX_BYTES = 512 * 2**20
MAX_TRIALS = 24
IMAGE_SIZES = (224, 256, 320, 640, 32)
TOKEN_LENGTHS = (128, 64, 32, 16, 8, 256, 512)
OTHER_LENGTHS = (512, 256, 1024, 128, 64, 32, 16, 8, 1)
SAMPLE_RATE_NAME = re.compile(r"^(sr|fs|rate|sample_?rate|sampling_?rate)$", re.IGNORECASE)
SCALAR_USES = ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Div", "Sub", "Mod")
PASS_THROUGH = ("Cast", "Identity", "Squeeze", "Unsqueeze", "Reshape")


def propose(path: str | Path, graph: Sequence[GraphInput], exc: MissingInputs, *, shapes: Mapping[str, tuple[int, ...]],
            batch_axis: Mapping[str, int | None], values: Mapping[str, int | float],
            vocab: Mapping[str, int]) -> MissingInputs:
    """`exc` with the options (the given ones merged in) that would run `path` (whose inputs are `graph`), and what
    trying them said; `exc` as it is when proposing fails (a refusal without a proposal beats a traceback)."""
    try:
        return _proposed(path, graph, exc, shapes=shapes, batch_axis=batch_axis, values=values, vocab=vocab)
    except Exception:  # noqa: BLE001 - an unreadable graph part: the plain refusal still names what is missing
        return exc


def _proposed(path: str | Path, graph: Sequence[GraphInput], exc: MissingInputs, *,
              shapes: Mapping[str, tuple[int, ...]], batch_axis: Mapping[str, int | None],
              values: Mapping[str, int | float], vocab: Mapping[str, int]) -> MissingInputs:
    proto = _load(path)
    axes = dict(batch_axis)
    for m in exc.missing:
        if m.state_axis is not None:
            axes[m.name] = m.state_axis
    batch = _batch(graph, shapes, axes)
    lengths = _axis_candidates(exc.missing)
    scalars = {m.name: _value_candidates(proto, m.graph) for m in exc.missing if m.needs == "value"}
    tables = {m.name: _vocab_candidates(proto, m.name) for m in exc.missing if m.needs == "vocab"}
    resolved = batch_axes(list(graph), axes)

    def options(i: int, k: int) -> dict[str, Any]:
        full = dict(shapes)
        for m in exc.missing:
            if m.axes and m.state_axis is None:
                full[m.name] = _full_shape(m.graph, resolved[m.name], batch, lengths, i)
        return {"shapes": full, "axes": axes, "values": {**values, **{n: _pick(c, k) for n, c in scalars.items()}},
                "vocab": {**vocab, **{n: _pick(c, k) for n, c in tables.items()}}}

    tries = [(i, k) for k in range(max([len(c) for c in (*scalars.values(), *tables.values())] or [1]))
             for i in range(max([len(c) for c in lengths.values()] or [1]))][:MAX_TRIALS]
    tried = _try(path, graph, (options(i, k) for i, k in tries), len(tries))
    chosen, said = tried
    return exc.with_proposal(_texts(chosen if chosen is not None else options(0, 0)), said)


def _load(path: str | Path) -> Any:
    import onnx

    return onnx.load(str(path), load_external_data=False)


def _pick(candidates: tuple[int, ...] | list[int], i: int) -> int:
    return candidates[min(i, len(candidates) - 1)]


def _key(g: GraphInputLike, axis: int) -> str:
    """Axes that share a symbol share a size; an unnamed axis is its own."""
    dim = g.dims[axis]
    return dim if isinstance(dim, str) and dim else f"{g.name}:{axis}"


def _batch(graph: Sequence[GraphInput], shapes: Mapping[str, tuple[int, ...]], axes: Mapping[str, int | None]) -> int:
    """The batch given in --shapes (on an input's batch axis), else the one the graph fixes, else 1."""
    found = batch_axes(list(graph), axes)
    fixed = []
    for g in graph:
        ax = found[g.name]
        if ax is None:
            continue
        if g.name in shapes and len(shapes[g.name]) > ax:
            return shapes[g.name][ax]
        dim = g.dims[ax]
        if isinstance(dim, int) and dim > 0:
            fixed.append(dim)
    return fixed[0] if fixed else 1


def _full_shape(g: GraphInputLike, batch_axis: int | None, batch: int, lengths: Mapping[str, tuple[int, ...]],
                i: int) -> tuple[int, ...]:
    """The input's full shape (trtexec form): fixed dims as they are, the batch, and candidate i of each other."""
    out = []
    for axis, dim in enumerate(g.dims):
        if isinstance(dim, int) and dim > 0:
            out.append(dim)
        elif axis == batch_axis:
            out.append(batch)
        else:
            out.append(_pick(lengths[_key(g, axis)], i))
    return tuple(out)


def _axis_candidates(missing: list[Missing]) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for m in missing:
        if m.state_axis is not None:
            continue
        for axis in m.axes:
            out.setdefault(_key(m.graph, axis), _sizes(m.graph, axis))
    return out


def _sizes(g: GraphInputLike, axis: int) -> tuple[int, ...]:
    layout = image_layout(g.dims)
    if layout is not None:
        h, w = (2, 3) if layout == "NCHW" else (1, 2)
        if axis in (h, w):
            other = g.dims[w if axis == h else h]
            if isinstance(other, int) and other > 0:
                return (4 * other, other) if axis == w else (other,)
            return IMAGE_SIZES
    return TOKEN_LENGTHS if g.dtype.startswith("int") else OTHER_LENGTHS


def _constants(proto: Any) -> tuple[dict[str, Any], dict[str, tuple[int, ...]], list[Any]]:
    """The graph's one-value constants as arrays (initializers and Constant nodes, subgraphs included), every
    initializer's dims, and every node. Larger tensors are never read: their data may sit in an external file
    (relative to the model, not to the current folder) and may be gigabytes."""
    import onnx
    from onnx import numpy_helper

    consts: dict[str, Any] = {}
    dims: dict[str, tuple[int, ...]] = {}
    nodes: list[Any] = []
    graphs = [proto.graph]
    while graphs:
        graph = graphs.pop()
        for t in graph.initializer:
            dims[t.name] = tuple(int(d) for d in t.dims)
            if math.prod(t.dims) == 1 and t.data_location != onnx.TensorProto.EXTERNAL:
                consts[t.name] = numpy_helper.to_array(t)
        for node in graph.node:
            nodes.append(node)
            if node.op_type == "Constant":
                value = next((a.t for a in node.attribute if a.name == "value"), None)
                if value is not None and math.prod(value.dims) == 1 and value.data_location != onnx.TensorProto.EXTERNAL:
                    consts[node.output[0]] = numpy_helper.to_array(value)
            graphs.extend(a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH)
    return consts, dims, nodes


def _reaching(name: str, nodes: list[Any]) -> set[str]:
    """`name` and what it becomes through casts and reshapes."""
    names = {name}
    for _ in range(3):
        for node in nodes:
            if node.op_type in PASS_THROUGH and node.input and node.input[0] in names:
                names.update(node.output)
    return names


def _value_candidates(proto: Any, g: GraphInputLike) -> tuple[int, ...]:
    consts, _dims, nodes = _constants(proto)
    names = _reaching(g.name, nodes)
    found: list[int] = []
    for node in nodes:
        if node.op_type in SCALAR_USES and names & set(node.input):
            for other in node.input:
                arr = consts.get(other)
                if arr is not None and arr.size == 1 and float(arr.reshape(-1)[0]).is_integer():
                    found.append(int(arr.reshape(-1)[0]))
    if SAMPLE_RATE_NAME.search(g.name):
        found += [16000, 8000]
    found += [1, 0]
    return tuple(dict.fromkeys(found))


def _vocab_candidates(proto: Any, name: str) -> tuple[int, ...]:
    _consts, dims, nodes = _constants(proto)
    names = _reaching(name, nodes)
    rows = [dims[n.input[0]][0] for n in nodes if n.op_type == "Gather" and len(n.input) > 1
            and n.input[1] in names and len(dims.get(n.input[0], ())) >= 1]
    return tuple(dict.fromkeys([min(rows)] if rows else [100, 2]))


def _try(path: str | Path, graph: Sequence[GraphInput], candidates: Iterator[dict[str, Any]], count: int
         ) -> tuple[dict[str, Any] | None, str]:
    """The first candidate that runs one inference on ONNX Runtime CPU, and what trying said."""
    size = Path(path).stat().st_size
    if size > TRIAL_MAX_BYTES:
        return None, f"proposed (not tried: the file is {size / 2**20:.0f} MiB)"
    try:
        import onnxruntime as ort
    except ImportError:
        return None, "proposed (not tried: onnxruntime is not installed)"
    so = ort.SessionOptions()
    so.log_severity_level = 4  # a failed candidate is expected: its ORT errors are not the user's
    try:
        session = ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT raises its own kinds
        return None, f"proposed (not tried: ONNX Runtime CPU cannot load it: {exc_message(exc, first_line=True, limit=200)})"
    deadline = time.monotonic() + TRIAL_BUDGET_S
    last, n = "", 0
    for option in candidates:
        n += 1
        try:
            plan = resolve(graph, shapes=option["shapes"], batch_axis=option["axes"], values=option["values"],
                           vocab=option["vocab"])
            batch = plan.shapes_batch or plan.fixed_batch or 1
            session.run(None, synthetic(plan.inputs, batch, seed=0))
            return option, "with these it ran (one inference on ONNX Runtime CPU)"
        except Exception as exc:  # noqa: BLE001 - a candidate that fails: the next one
            last = exc_message(exc, first_line=True, limit=200)
        if time.monotonic() > deadline:
            break
    return None, (f"none of {n} of {count} proposal(s) ran on ONNX Runtime CPU (last: {last}); the first was")


def _texts(option: Mapping[str, Any]) -> dict[str, str]:
    """The options as a command line takes them, in a fixed order, empty ones left out."""
    out = {}
    if option["shapes"]:
        out["--shapes"] = ",".join(f"{k}:{'x'.join(map(str, v))}" for k, v in option["shapes"].items())
    if option["axes"]:
        out["--batch-axis"] = ",".join(f"{k}:{'none' if v is None else v}" for k, v in option["axes"].items())
    if option["values"]:
        out["--value"] = ",".join(f"{k}:{v:g}" if isinstance(v, float) else f"{k}:{v}"
                                  for k, v in option["values"].items())
    if option["vocab"]:
        out["--vocab"] = ",".join(f"{k}:{v}" if k != "*" else str(v) for k, v in option["vocab"].items())
    return out


def command_line(argv: list[str], proposal: Mapping[str, str], prog: str = "edgebench") -> str:
    """`prog argv` with the proposal's options in place of the same options given (--shapes X or --shapes=X), as
    one copy-pasteable shell line."""
    import shlex

    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        option = arg.split("=", 1)[0]
        if option in proposal:
            skip = "=" not in arg
            continue
        kept.append(arg)
    return shlex.join([prog, *kept, *(part for k, v in proposal.items() for part in (k, v))])
