"""The named input set of a model: dtypes and shapes from the ONNX graph, a shape plan, and data for it.

A model has one or more inputs (`InputDesc`: name, dtype, per-sample shape, how synthetic data is drawn).
Their shapes come from the graph; every symbolic axis besides the batch must be given, in trtexec's form
`--shapes name:8x128,other:8x128` (the full shape as the graph takes it), by the command line, the profile
(`sweep.shapes`) or the model spec (`shapes`). The batch axis stays the sweep's: a graph whose batch axis
is symbolic runs every batch of the sweep, one whose batch is a number runs at that batch.

The batch axis is per input (`InputDesc.batch_axis`, None = no batch axis), found by `batch_axes()`:
an explicit `--batch-axis name:1` / `name:none` (or `batch_axis:` in a spec) wins; a scalar has none; an
input holding the model's batch symbol (a dim name shared across inputs, e.g. `state [2, batch, 128]`)
has it where the symbol is; another dynamic axis 0 is the batch; a fixed axis 0 is the batch when it
equals the first fixed one, else the input is per-model state with no batch axis. The batch sweep, the
synthetic data, `--data`, calibration and accuracy chunks change only inputs that have a batch axis.

A fixed value (`--value sr:16000`, `values: {sr: 16000}` in a model spec) makes an input that constant in every
feed: timing, int8 calibration, the accuracy check and its FP32 reference (also over `--data`, which then need not
hold it). A scalar integer input (shape [], e.g. a sample rate that selects a branch) needs a value or a vocabulary:
drawn at random it would take a path the model never takes in use.

Synthetic data is valid per input: float inputs are seeded standard-normal values (what a normalised
image or feature tensor looks like; a single float input gets exactly `make_input`'s values), token
inputs are ids in [0, vocab), mask inputs are ones (bool: True). Real data comes from an .npz (one array
per input name: the full shape with N samples on the batch axis, or one sample; an input with no batch
axis: exactly its shape) or a folder of such files, read in name order.
Bad input raises InputError: one line naming the input (and the axis, file or field).

Size: over 400 lines because the plan (batch axes, shapes) and the data laid out by it (synthetic, .npz,
chunks, outputs joined back) share one set of axis rules; split, each half would restate them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import InputError
from edgebench.models.missing_inputs import Missing, MissingInputs, Sources, dims_text, looks_like_state

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

INPUT_DTYPES = ("float32", "float16", "int64", "int32", "bool")
FLOAT_DTYPES = ("float32", "float16")
INT_DTYPES = ("int64", "int32")
ROLES = ("image", "float", "tokens", "mask")
MASK_NAME = re.compile(r"mask", re.IGNORECASE)
INPUT_SEED_STRIDE = 7919  # input i of a model draws from seed + i * stride (input 0: the plain seed)


@dataclass(frozen=True)
class GraphInput:
    """One input as the ONNX graph declares it: dims are ints, symbolic names (str) or None (unnamed)."""

    name: str
    dtype: str
    dims: tuple[int | str | None, ...]

    @property
    def dynamic_axes(self) -> tuple[int, ...]:
        return tuple(i for i, d in enumerate(self.dims) if not isinstance(d, int) or d <= 0)


@dataclass(frozen=True)
class InputDesc:
    """One input as edgebench feeds it: per-sample shape resolved (no batch axis)."""

    name: str
    dtype: str = "float32"
    shape: tuple[int, ...] = ()  # per sample, without the batch axis
    role: str = "float"  # image | float | tokens | mask: how synthetic data is drawn
    vocab: int | None = None  # tokens: ids are drawn from [0, vocab)
    dynamic_axes: tuple[int, ...] = (0,)  # axes (of the full shape) symbolic in the graph
    batch_axis: int | None = 0  # where the batch goes in the full shape; None: fed as `shape` at every batch
    value: int | float | None = None  # a fixed value: every feed holds this constant (--value, a spec's values:)

    def full_shape(self, batch: int) -> tuple[int, ...]:
        if self.batch_axis is None:
            return tuple(self.shape)
        return (*self.shape[:self.batch_axis], batch, *self.shape[self.batch_axis:])

    @property
    def batched(self) -> bool:
        return self.batch_axis is not None

    def label(self, batch: int) -> str:
        """'input_ids:int64[8x128]'; a fixed value follows its shape: 'sr:int64[]=16000'"""
        fixed = "" if self.value is None else f"={self.value:g}" if isinstance(self.value, float) else f"={self.value}"
        return f"{self.name}:{self.dtype}[{'x'.join(str(d) for d in self.full_shape(batch))}]{fixed}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape), "role": self.role,
                "vocab": self.vocab, "dynamic_axes": list(self.dynamic_axes),
                **({} if self.batch_axis == 0 else {"batch_axis": self.batch_axis}),  # absent = 0: cache keys stay
                **({} if self.value is None else {"value": self.value})}


@dataclass(frozen=True)
class ShapePlan:
    """The resolved input set of a model and the batch its graph fixes (None: the sweep decides)."""

    inputs: tuple[InputDesc, ...]
    fixed_batch: int | None = None
    shapes_batch: int | None = None  # the batch entry the --shapes text gave (trtexec form), if any
    notes: tuple[str, ...] = field(default_factory=tuple)

    def labels(self, batch: int) -> str:
        return ";".join(d.label(batch) for d in self.inputs)


def describe_inputs(inputs: Iterable[InputDesc], batch: int) -> str:
    return ";".join(d.label(batch) for d in inputs)


# --------------------------------------------------------------------------- parsing

def parse_vocab(value: str | int | Mapping[str, int] | None, source: str = "--vocab") -> dict[str, int]:
    """'30522' (every token input) or 'input_ids:30522,token_type_ids:2' -> {name or '*': size}."""
    if value is None or value == "":
        return {}
    items: list[tuple[str, Any]]  # (input name or "*", the size as given: an int or text, checked below)
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [("*", value)]
    else:
        items = []
        for item in (s.strip() for s in str(value).split(",") if s.strip()):
            key, sep, text = item.rpartition(":")
            items.append((key.strip() if sep else "*", text))
    out: dict[str, int] = {}
    for name, size in items:
        try:
            n = int(size)
        except (TypeError, ValueError):
            raise InputError(f"{source}: vocabulary size {size!r} for {name!r} is not an integer") from None
        if n < 1:
            raise InputError(f"{source}: vocabulary size {n} for {name!r} must be >= 1")
        out[str(name)] = n
    return out


def parse_values(value: str | Mapping[str, Any] | None, source: str = "--value") -> dict[str, int | float]:
    """'sr:16000' or 'sr:16000,gain:0.5' (or {name: number}) -> {name: int or float}: inputs fed as that constant."""
    if value is None or value == "":
        return {}
    items: list[tuple[str, Any]]
    if isinstance(value, Mapping):
        items = [(str(k), v) for k, v in value.items()]
    else:
        items = []
        for item in (s.strip() for s in str(value).split(",") if s.strip()):
            name, sep, text = item.rpartition(":")
            if not sep or not name.strip() or not text.strip():
                raise InputError(f"{source}: {item!r} is not NAME:VALUE (e.g. sr:16000)")
            items.append((name.strip(), text.strip()))
    out: dict[str, int | float] = {}
    for name, v in items:
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise InputError(f"{source}: input '{name}': value {v!r} is not a number")
        try:
            number: int | float = int(v) if isinstance(v, int) or (isinstance(v, str) and v.lstrip("+-").isdigit()) \
                else float(v)
        except ValueError:
            raise InputError(f"{source}: input '{name}': value {v!r} is not a number") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise InputError(f"{source}: input '{name}': value {v!r} is not a finite number")
        out[name] = number
    return out


def value_for(name: str, dtype: str, value: int | float, source: str = "--value") -> int | float:
    """`value` as input `name` of `dtype` holds it: an integer for integer inputs (2.5 is refused), 0/1 for bool."""
    if dtype in INT_DTYPES or dtype == "bool":
        if float(value) != int(value):
            raise InputError(f"{source}: input '{name}' is {dtype}; value {value!r} is not a whole number")
        if dtype == "bool" and int(value) not in (0, 1):
            raise InputError(f"{source}: input '{name}' is bool; value {value!r} is not 0 or 1")
        return int(value)
    return float(value)


def with_values(inputs: Iterable[InputDesc], values: Mapping[str, int | float] | None, source: str = "model",
                values_source: str = "--value") -> tuple[InputDesc, ...]:
    """`inputs` with the fixed values of `values` set (an unknown name or a value the dtype cannot hold: one line)."""
    import dataclasses

    inputs = tuple(inputs)
    values = dict(values or {})
    names = [d.name for d in inputs]
    for name in values:
        if name not in names:
            raise InputError(f"{values_source}: {source} has no input named '{name}' (inputs: {', '.join(names)})")
    return tuple(dataclasses.replace(d, value=value_for(d.name, d.dtype, values[d.name], values_source))
                 if d.name in values else d for d in inputs)


# --------------------------------------------------------------------------- the plan

def role_for(name: str, dtype: str, shape: tuple[int, ...]) -> str:
    """How synthetic data is drawn: bool or an int input named like a mask -> ones; other ints -> token ids;
    a float [1|3, H, W] sample -> an (already normalised) image; other floats -> standard normal."""
    if dtype == "bool" or (dtype in INT_DTYPES and MASK_NAME.search(name)):
        return "mask"
    if dtype in INT_DTYPES:
        return "tokens"
    if len(shape) == 3 and shape[0] in (1, 3):
        return "image"
    return "float"


BATCH_NAME = re.compile(r"batch|^n$|^b$|^bs$", re.IGNORECASE)
NO_AXIS = ("none", "no", "-", "")


def parse_batch_axes(value: str | Mapping[str, int | str | None] | None,
                     source: str = "--batch-axis") -> dict[str, int | None]:
    """'state:1,sr:none' (or {name: axis|None}) -> {name: axis or None (no batch axis)}."""
    if value is None or value == "":
        return {}
    items = list(value.items()) if isinstance(value, Mapping) else [
        tuple(s.strip().rsplit(":", 1)) for s in str(value).split(",") if s.strip()]
    out: dict[str, int | None] = {}
    for item in items:
        if len(item) != 2 or not str(item[0]).strip():
            raise InputError(f"{source}: {':'.join(map(str, item))!r} is not NAME:AXIS (e.g. state:1 or sr:none)")
        name, axis = str(item[0]).strip(), item[1]
        if axis is None or str(axis).strip().lower() in NO_AXIS:
            out[name] = None
            continue
        try:
            n = int(str(axis).strip())
        except ValueError:
            raise InputError(f"{source}: input '{name}': batch axis {axis!r} is not an integer or 'none'") from None
        if n < 0:
            raise InputError(f"{source}: input '{name}': batch axis {n} must be >= 0 (or 'none')")
        out[name] = n
    return out


def batch_axes(graph: list[GraphInput], explicit: Mapping[str, int | None] | None = None,
               source: str = "model", axes_source: str = "--batch-axis") -> dict[str, int | None]:
    """The batch axis of every input (None: no batch axis), by the rules in the module doc."""
    explicit = dict(explicit or {})
    for name, axis in explicit.items():
        g = next((g for g in graph if g.name == name), None)
        if g is None:
            raise InputError(f"{axes_source}: {source} has no input named '{name}' "
                             f"(inputs: {', '.join(x.name for x in graph)})")
        if axis is not None and axis >= len(g.dims):
            raise InputError(f"{axes_source}: input '{name}' has rank {len(g.dims)} {_dims_text(g.dims)}; "
                             f"batch axis {axis} does not exist")
    symbols = [g.dims[a] for g in graph for a in ([explicit[g.name]] if g.name in explicit else [])
               if a is not None and isinstance(g.dims[a], str)]
    names = [d for g in graph for d in g.dims if isinstance(d, str) and d]
    symbol = next(iter(symbols), None) or next((d for d in names if BATCH_NAME.search(d)), None) or next(
        (g.dims[0] for g in graph if g.dims and isinstance(g.dims[0], str) and g.dims[0]), None)
    first_fixed = next((g.dims[0] for g in graph if g.name not in explicit and g.dims and isinstance(g.dims[0], int)
                        and g.dims[0] > 0 and symbol not in g.dims), None)
    out: dict[str, int | None] = {}
    for g in graph:
        if g.name in explicit:
            out[g.name] = explicit[g.name]
        elif not g.dims:
            out[g.name] = None  # a scalar
        elif symbol is not None and symbol in g.dims:
            out[g.name] = g.dims.index(symbol)
        elif not isinstance(g.dims[0], int) or g.dims[0] <= 0:
            out[g.name] = 0
        else:
            out[g.name] = 0 if g.dims[0] == first_fixed else None
    return out


def resolve(graph: Iterable[GraphInput], *, shapes: Mapping[str, tuple[int, ...]] | None = None,
            vocab: Mapping[str, int] | None = None, source: str = "model",
            shapes_source: str = "--shapes", vocab_from_data: bool = False,
            batch_axis: Mapping[str, int | None] | None = None, axes_source: str = "--batch-axis",
            values: Mapping[str, int | float] | None = None, values_source: str = "--value") -> ShapePlan:
    """Resolve every graph input to a per-sample shape, a dtype, a batch axis and a data role.

    Errors name the input (and the axis): an unknown name in `shapes`/`batch_axis`, a shape of the wrong rank,
    a dim (the batch included) that contradicts a fixed one in the graph, an unsupported dtype, inputs that fix
    different batches on their batch axes. What is missing (symbolic axes no shape gives, a state's batch axis, a
    token input with no vocabulary and no fixed value in `values` (unless `vocab_from_data`: the caller takes it
    from real data)) is collected over every input and raised as one MissingInputs (models/missing_inputs.py)."""
    graph = list(graph)
    shapes = dict(shapes or {})
    vocab = dict(vocab or {})
    names = [g.name for g in graph]
    for name in shapes:
        if name not in names:
            raise InputError(f"{shapes_source}: {source} has no input named '{name}' (inputs: {', '.join(names)})")
    for name in vocab:
        if name != "*" and name not in names:
            raise InputError(f"--vocab: {source} has no input named '{name}' (inputs: {', '.join(names)})")
    for g in graph:
        if g.dtype not in INPUT_DTYPES:
            raise InputError(f"{source}: input '{g.name}' is {g.dtype}; edgebench feeds {', '.join(INPUT_DTYPES)}")
    values = dict(values or {})
    for name in values:
        if name not in names:
            raise InputError(f"{values_source}: {source} has no input named '{name}' (inputs: {', '.join(names)})")
    axes = batch_axes(graph, batch_axis, source, axes_source)
    descs: list[InputDesc] = []
    missing: list[Missing] = []
    fixed: dict[str, int] = {}
    shapes_batches: set[int] = set()
    notes: list[str] = []
    for g in graph:
        given = shapes.get(g.name)
        if given is not None and len(given) != len(g.dims):
            raise InputError(
                f"{shapes_source}: input '{g.name}' has rank {len(g.dims)} {_dims_text(g.dims)}, "
                f"the shape given has rank {len(given)} ({'x'.join(map(str, given)) or 'scalar'}); "
                "give the full shape as the graph takes it")
        ax = axes[g.name]
        if ax is not None:
            batch_dim = g.dims[ax]
            if isinstance(batch_dim, int) and batch_dim > 0:
                fixed[g.name] = batch_dim
                if given is not None and given[ax] != batch_dim:
                    raise InputError(f"{shapes_source}: input '{g.name}' has a fixed batch of {batch_dim} in the "
                                     f"graph (axis {ax} of {_dims_text(g.dims)}), the shape given has {given[ax]}")
            if given is not None:
                shapes_batches.add(given[ax])
        elif g.dims:
            notes.append(f"input '{g.name}' {_dims_text(g.dims)} has no batch axis: fed as is at every batch")
        sample: list[int] = []
        unknown: list[int] = []
        for axis, dim in enumerate(g.dims):
            if axis == ax:
                continue
            want = given[axis] if given is not None else None
            if isinstance(dim, int) and dim > 0:
                if want is not None and want != dim:
                    raise InputError(f"{shapes_source}: input '{g.name}' axis {axis} is {dim} in the graph, "
                                     f"the shape given says {want}")
                sample.append(dim)
            elif want is None:
                unknown.append(axis)
                sample.append(1)  # a stand-in: the refusal below lists this axis
            else:
                sample.append(want)
        shape = tuple(sample)
        role = role_for(g.name, g.dtype, shape if ax is not None else shape[1:])
        size = vocab.get(g.name, vocab.get("*")) if role == "tokens" else None
        value = value_for(g.name, g.dtype, values[g.name], values_source) if g.name in values else None
        needs = ""
        if role == "tokens" and size is None and value is None and not vocab_from_data:
            needs = "value" if not g.dims else "vocab"
        state_axis = None
        if unknown and g.name not in (batch_axis or {}) and (ax is None or ax not in g.dynamic_axes):
            # the batch went to a fixed axis (or none): a state's one dynamic axis is likely the batch ([2, batch,
            # 128]); --shapes would feed it as is at every batch, split from the other inputs. An image's is not.
            state_axis = looks_like_state(g.dims)
        if unknown or needs:
            missing.append(Missing(g, ax, tuple(unknown), state_axis, needs))
        descs.append(InputDesc(g.name, g.dtype, shape, role, size, g.dynamic_axes, ax, value))
    if missing:
        raise MissingInputs(source, missing, Sources(axes_source))
    if len(set(fixed.values())) > 1:
        raise InputError(f"{source}: inputs fix different batches on their batch axes: "
                         + ", ".join(f"'{n}' {b}" for n, b in fixed.items())
                         + f"; say which input has no batch axis with {axes_source} NAME:none")
    if not any(d.batched for d in descs):
        raise InputError(f"{source}: no input has a batch axis ({', '.join(names)}); "
                         f"give one with {axes_source} NAME:AXIS")
    fixed_batch = next(iter(fixed.values()), None)
    if fixed_batch is not None:
        notes.insert(0, f"the graph fixes the batch at {fixed_batch}")
    return ShapePlan(tuple(descs), fixed_batch, next(iter(shapes_batches)) if len(shapes_batches) == 1 else None,
                     tuple(notes))


def random_scalars_note(inputs: Iterable[InputDesc]) -> str:
    """For a failed row: the scalar integer inputs drawn at random (--vocab, no --value), which may have taken a
    branch the model never takes in use; '' when there are none."""
    drawn = [d for d in inputs if d.role == "tokens" and d.value is None and d.vocab and not d.shape
             and d.batch_axis is None]
    return "; ".join(f"scalar input '{d.name}' was drawn at random from [0, {d.vocab}): if it selects a path (a "
                     f"sample rate), fix it with --value {d.name}:V" for d in drawn)


_dims_text = dims_text


def graph_inputs(path: str | Path) -> list[GraphInput]:
    """The inputs of an ONNX file that are not initializers, with dtypes and dims."""
    import onnx

    return graph_inputs_of(onnx.load(str(path), load_external_data=False))


def graph_inputs_of(proto: Any) -> list[GraphInput]:
    inits = {t.name for t in proto.graph.initializer}
    return [GraphInput(v.name, tensor_dtype(v), value_dims(v)) for v in proto.graph.input if v.name not in inits]


def tensor_dtype(value: Any) -> str:
    import onnx

    elem = value.type.tensor_type.elem_type
    try:
        return str(onnx.helper.tensor_dtype_to_np_dtype(elem))
    except (KeyError, ValueError, TypeError):
        return onnx.TensorProto.DataType.Name(elem).lower()


def value_dims(value: Any) -> tuple[int | str | None, ...]:
    """Dims as ints, symbolic names or None; a dim written as -1 or 0 (some exporters' 'dynamic') is None."""
    dims: list[int | str | None] = []
    for d in value.type.tensor_type.shape.dim:
        if d.HasField("dim_value") and d.dim_value > 0:
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return tuple(dims)


# --------------------------------------------------------------------------- data

def make_input(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """The deterministic synthetic input every backend and the FP32 reference share."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape, dtype=np.float32).astype(dtype)


def synthetic(inputs: Iterable[InputDesc], batch: int, seed: int) -> dict[str, np.ndarray]:
    """Seeded data for every input at `batch`, valid per dtype and role (see the module doc)."""
    import numpy as np

    out: dict[str, np.ndarray] = {}
    for i, d in enumerate(inputs):
        shape = d.full_shape(batch)
        s = seed + i * INPUT_SEED_STRIDE
        if d.value is not None:
            out[d.name] = np.full(shape, d.value, dtype=d.dtype)
        elif d.role == "mask":
            out[d.name] = np.ones(shape, dtype=d.dtype)
        elif d.role == "tokens":
            if d.vocab is None:
                raise InputError(f"input '{d.name}': token ids need a vocabulary size")
            out[d.name] = np.random.default_rng(s).integers(0, d.vocab, size=shape).astype(d.dtype)
        else:
            out[d.name] = make_input(shape, d.dtype, s)
    return out


def load_data(path: str | Path, inputs: Iterable[InputDesc], samples: int | None = None) -> dict[str, np.ndarray]:
    """Real data for every input from an .npz (one array per input name) or a folder of .npz files (name order).

    An array is the input's full shape with N samples on its batch axis, or a single sample; an input with no
    batch axis gives exactly its shape (the first file's value is used at every batch). Its dtype is cast to the
    input's. With `samples`, the first `samples` are returned and fewer is an error. Errors name the file and
    the input. The result is laid out like the inputs take it (N on each batch axis). An input with a fixed value
    need not be in the files: it is that constant (an array of it in a file is not read)."""
    import numpy as np

    every = list(inputs)
    inputs = [d for d in every if d.value is None]
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix == ".npz")
        if not files:
            raise InputError(f"{path}: no .npz files (one array per input name: {', '.join(d.name for d in inputs)})")
    elif path.is_file():
        files = [path]
    else:
        raise InputError(f"{path}: no such .npz file or folder")
    parts: dict[str, list[np.ndarray]] = {d.name: [] for d in inputs}
    have = 0
    for f in files:
        if samples is not None and have >= samples:
            break
        try:
            npz = np.load(f, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"{f}: not a readable .npz ({exc})") from None
        with npz:
            count = None
            for d in inputs:
                if d.name not in npz.files:
                    raise InputError(f"{f}: no array for input '{d.name}' (arrays: {', '.join(npz.files) or 'none'})")
                arr = npz[d.name]
                if d.dtype in INT_DTYPES + ("bool",) and arr.dtype.kind == "f":
                    raise InputError(f"{f}: input '{d.name}' is {d.dtype}, the array holds {arr.dtype}")
                if d.batch_axis is None:
                    if tuple(arr.shape) != d.shape:
                        raise InputError(f"{f}: input '{d.name}' has no batch axis; its array must have shape "
                                         f"{list(d.shape)}, got {list(arr.shape)}")
                    parts[d.name].append(arr.astype(d.dtype))
                    continue
                ax = d.batch_axis
                if tuple(arr.shape) == d.shape:
                    arr = np.expand_dims(arr, ax)
                if arr.ndim != len(d.shape) + 1 or tuple(np.delete(np.array(arr.shape, dtype=np.int64), ax)) != d.shape:
                    raise InputError(f"{f}: input '{d.name}' array has shape {list(arr.shape)}, expected "
                                     f"{_dims_text(d.full_shape('N'))} (N samples on batch axis {ax})")  # type: ignore[arg-type]
                n = arr.shape[ax]
                if count is not None and n != count:
                    raise InputError(f"{f}: input '{d.name}' has {n} samples, other inputs {count}")
                count = n
                parts[d.name].append(arr.astype(d.dtype))
            have += count or 0
    if samples is not None and have < samples:
        raise InputError(f"{path}: holds {have} samples, {samples} needed")
    data = {}
    for d in every:
        if d.value is not None:
            continue
        chunks = parts[d.name]
        if d.batch_axis is None:
            data[d.name] = np.array(chunks[0], order="C")  # (ascontiguousarray would make a scalar [1])
        else:
            whole = np.concatenate(chunks, axis=d.batch_axis)
            data[d.name] = np.ascontiguousarray(_take(whole, d.batch_axis, 0, samples))
    count = next((int(data[d.name].shape[d.batch_axis]) for d in inputs if d.batch_axis is not None), 0)
    for d in every:
        if d.value is not None:
            data[d.name] = np.full(d.full_shape(count), d.value, dtype=d.dtype)
    return {d.name: data[d.name] for d in every}


def _axes(data: Mapping[str, np.ndarray], inputs: Iterable[InputDesc] | None) -> dict[str, int | None]:
    """Batch axis per array: from `inputs` (an input it does not list: axis 0), else axis 0 for every array."""
    known = {d.name: d.batch_axis for d in inputs or ()}
    return {k: known.get(k, 0) for k in data}


def _take(arr: np.ndarray, axis: int, first: int, stop: int | None) -> np.ndarray:
    index = [slice(None)] * arr.ndim
    index[axis] = slice(first, stop)
    return arr[tuple(index)]


def sample_count(data: Mapping[str, np.ndarray], inputs: Iterable[InputDesc] | None = None) -> int:
    """N of a data set laid out like the inputs take it (the size of the first batch axis)."""
    axes = _axes(data, inputs)
    for k, v in data.items():
        axis = axes[k]
        if axis is not None:
            return int(v.shape[axis])
    raise InputError("no input has a batch axis to count samples on")


def head(data: Mapping[str, np.ndarray], samples: int, inputs: Iterable[InputDesc] | None = None
         ) -> dict[str, np.ndarray]:
    """The first `samples` samples (inputs without a batch axis unchanged)."""
    axes = _axes(data, inputs)
    return {k: v if axes[k] is None else _take(v, axes[k], 0, samples) for k, v in data.items()}  # type: ignore[arg-type]


def batches_of(data: Mapping[str, np.ndarray], batch: int, *, pad: bool = True,
               inputs: Iterable[InputDesc] | None = None) -> list[dict[str, np.ndarray]]:
    """Arrays with N samples on their batch axes (axis 0 unless `inputs` says otherwise) cut into chunks of
    `batch` in order; inputs with no batch axis go whole into every chunk. The last chunk is padded by
    repeating its final sample (pad=True; callers trim the padded outputs) or dropped (pad=False)."""
    import numpy as np

    axes = _axes(data, inputs)
    total = sample_count(data, inputs)
    out = []
    for first in range(0, total, batch):
        short = batch - (min(total, first + batch) - first)
        if short and not pad:
            break
        chunk = {}
        for k, v in data.items():
            ax = axes[k]
            if ax is None:
                chunk[k] = v if v.flags.c_contiguous else np.array(v, order="C")  # a scalar stays a scalar
                continue
            part = _take(v, ax, first, first + batch)
            if short:
                part = np.concatenate([part, np.repeat(_take(part, ax, -1, None), short, axis=ax)], axis=ax)
            chunk[k] = np.ascontiguousarray(part)
        out.append(chunk)
    return out


def output_batch_axes(onnx_path: str | Path, inputs: Iterable[InputDesc]) -> dict[str, int | None]:
    """Each graph output's batch axis: where it carries the symbol an input's batch axis has (e.g. a state_out
    [2, batch, 16]); outputs without it are left out (concat_outputs then guesses). {} for a non-ONNX file."""
    try:
        import onnx

        proto = onnx.load(str(onnx_path), load_external_data=False)
    except Exception:  # an engine file, a missing file: no graph to read
        return {}
    graph = {g.name: g.dims for g in graph_inputs_of(proto)}
    symbols = {graph[d.name][d.batch_axis] for d in inputs if d.batch_axis is not None and d.name in graph
               and d.batch_axis < len(graph[d.name]) and isinstance(graph[d.name][d.batch_axis], str)}
    out: dict[str, int | None] = {}
    for value in proto.graph.output:
        dims = value_dims(value)
        axis = next((i for i, d in enumerate(dims) if d in symbols), None)
        if axis is not None:
            out[value.name] = axis
    return out


def concat_outputs(parts: Mapping[str, list[np.ndarray]], batch: int, total: int,
                   axes: Mapping[str, int | None] | None = None) -> dict[str, np.ndarray]:
    """Per-chunk outputs joined into one array per output, samples first, trimmed to `total` samples. An output's
    batch axis comes from `axes` (output_batch_axes), else it is axis 0 when that has the chunk's size `batch`,
    else the first axis that has (none: a per-model output, chunks stacked as they are)."""
    import numpy as np

    axes = dict(axes or {})
    out = {}
    for name, chunks in parts.items():
        first = chunks[0]
        ax = axes.get(name)
        if ax is None or ax >= first.ndim:
            ax = next((i for i, n in enumerate(first.shape) if n == batch), None)
        if ax is None:
            out[name] = np.concatenate(chunks) if first.ndim else np.stack(chunks)
            continue
        joined = _take(np.concatenate(chunks, axis=ax), ax, 0, total)
        out[name] = np.moveaxis(joined, ax, 0) if ax else joined  # samples first: compared per sample
    return out


def vocab_from(inputs: tuple[InputDesc, ...], data: Mapping[str, np.ndarray], source: str) -> tuple[InputDesc, ...]:
    """Token inputs without a vocabulary get max id + 1 of the real data (ids must be >= 0)."""
    import dataclasses

    out = []
    for d in inputs:
        if d.role == "tokens" and d.vocab is None:
            ids = data[d.name]
            if ids.size == 0 or int(ids.min()) < 0:
                raise InputError(f"{source}: input '{d.name}': token ids in the data must be >= 0 to infer a vocabulary")
            d = dataclasses.replace(d, vocab=int(ids.max()) + 1)
        out.append(d)
    return tuple(out)
