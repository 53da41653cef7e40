"""The named input set of a model: dtypes and shapes from the ONNX graph, a shape plan, and data for it.

A model has one or more inputs (`InputDesc`: name, dtype, per-sample shape, how synthetic data is drawn).
Their shapes come from the graph; every symbolic axis besides the batch (axis 0) must be given, in
trtexec's form `--shapes name:8x128,other:8x128` (the full shape, batch first), by the command line, the
profile (`sweep.shapes`) or the model spec (`shapes`). The batch axis stays the sweep's: a graph whose
batch axis is symbolic runs every batch of the sweep, one whose batch is a number runs at that batch.

Synthetic data is valid per input: float inputs are seeded standard-normal values (what a normalised
image or feature tensor looks like; a single float input gets exactly `make_input`'s values), token
inputs are ids in [0, vocab), mask inputs are ones (bool: True). Real data comes from an .npz (one array
per input name, [N, *sample] or one sample) or a folder of such files, read in name order.
Bad input raises InputError: one line naming the input (and the axis, file or field).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.errors import InputError

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
    dynamic_axes: tuple[int, ...] = (0,)  # axes (of the full shape, batch = 0) symbolic in the graph

    def full_shape(self, batch: int) -> tuple[int, ...]:
        return (batch, *self.shape)

    def label(self, batch: int) -> str:
        """'input_ids:int64[8x128]'"""
        return f"{self.name}:{self.dtype}[{'x'.join(str(d) for d in self.full_shape(batch))}]"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape), "role": self.role,
                "vocab": self.vocab, "dynamic_axes": list(self.dynamic_axes)}


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
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [("*", value)]
    else:
        items = []
        for item in (s.strip() for s in str(value).split(",") if s.strip()):
            name, sep, size = item.rpartition(":")
            items.append((name.strip() if sep else "*", size))
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


def resolve(graph: Iterable[GraphInput], *, shapes: Mapping[str, tuple[int, ...]] | None = None,
            vocab: Mapping[str, int] | None = None, source: str = "model",
            shapes_source: str = "--shapes", vocab_from_data: bool = False) -> ShapePlan:
    """Resolve every graph input to a per-sample shape, a dtype and a data role.

    Errors name the input (and the axis): an unknown name in `shapes`, a shape of the wrong rank, a dim
    that contradicts a fixed one in the graph, a symbolic axis no shape gives, an unsupported dtype, a token
    input with no vocabulary (unless `vocab_from_data`: the caller takes it from real data), inputs that disagree
    on a fixed batch."""
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
    descs: list[InputDesc] = []
    fixed: dict[str, int] = {}
    shapes_batches: set[int] = set()
    for g in graph:
        if g.dtype not in INPUT_DTYPES:
            raise InputError(f"{source}: input '{g.name}' is {g.dtype}; edgebench feeds {', '.join(INPUT_DTYPES)}")
        if len(g.dims) < 1:
            raise InputError(f"{source}: input '{g.name}' is a scalar; edgebench needs a batch axis (axis 0)")
        given = shapes.get(g.name)
        if given is not None and len(given) != len(g.dims):
            raise InputError(
                f"{shapes_source}: input '{g.name}' has rank {len(g.dims)} {_dims_text(g.dims)}, "
                f"the shape given has rank {len(given)} ({'x'.join(map(str, given))}); give the full shape, batch first")
        batch_dim = g.dims[0]
        if isinstance(batch_dim, int) and batch_dim > 0:
            fixed[g.name] = batch_dim
            if given is not None and given[0] != batch_dim:
                raise InputError(f"{shapes_source}: input '{g.name}' has a fixed batch of {batch_dim} in the graph, "
                                 f"the shape given has batch {given[0]}")
        if given is not None:
            shapes_batches.add(given[0])
        sample: list[int] = []
        for axis, dim in enumerate(g.dims[1:], start=1):
            want = given[axis] if given is not None else None
            if isinstance(dim, int) and dim > 0:
                if want is not None and want != dim:
                    raise InputError(f"{shapes_source}: input '{g.name}' axis {axis} is {dim} in the graph, "
                                     f"the shape given says {want}")
                sample.append(dim)
            elif want is None:
                label = f" ('{dim}')" if isinstance(dim, str) and dim else ""
                example = "x".join(str(d) if isinstance(d, int) and d > 0 else "N" for d in g.dims)
                raise InputError(f"{source}: input '{g.name}' axis {axis}{label} is dynamic and no shape gives it; "
                                 f"give it with --shapes {g.name}:{example} (or shapes: in the profile/model spec)")
            else:
                sample.append(want)
        shape = tuple(sample)
        role = role_for(g.name, g.dtype, shape)
        size = vocab.get(g.name, vocab.get("*")) if role == "tokens" else None
        if role == "tokens" and size is None and not vocab_from_data:
            raise InputError(f"{source}: input '{g.name}' is {g.dtype} token ids and no vocabulary size is known; "
                             f"give --vocab {g.name}:N (or vocab: in the model spec), or real data with --data")
        descs.append(InputDesc(g.name, g.dtype, shape, role, size, g.dynamic_axes))
    if len(set(fixed.values())) > 1:
        raise InputError(f"{source}: inputs fix different batches: "
                         + ", ".join(f"'{n}' {b}" for n, b in fixed.items()))
    fixed_batch = next(iter(fixed.values()), None)
    notes = []
    if fixed_batch is not None:
        notes.append(f"the graph fixes the batch at {fixed_batch}")
    return ShapePlan(tuple(descs), fixed_batch, next(iter(shapes_batches)) if len(shapes_batches) == 1 else None,
                     tuple(notes))


def _dims_text(dims: tuple[int | str | None, ...]) -> str:
    return "[" + ", ".join(str(d) if d is not None else "?" for d in dims) + "]"


def graph_inputs(path: str | Path) -> list[GraphInput]:
    """The inputs of an ONNX file that are not initializers, with dtypes and dims."""
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in proto.graph.initializer}
    out = []
    for value in proto.graph.input:
        if value.name in inits:
            continue
        out.append(GraphInput(value.name, tensor_dtype(value), value_dims(value)))
    return out


def tensor_dtype(value: Any) -> str:
    import onnx

    elem = value.type.tensor_type.elem_type
    try:
        return str(onnx.helper.tensor_dtype_to_np_dtype(elem))
    except (KeyError, ValueError, TypeError):
        return onnx.TensorProto.DataType.Name(elem).lower()


def value_dims(value: Any) -> tuple[int | str | None, ...]:
    dims: list[int | str | None] = []
    for d in value.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
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
        if d.role == "mask":
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

    An array is [N, *sample] or a single sample; its dtype is cast to the input's. With `samples`, the first
    `samples` are returned and fewer is an error. Errors name the file and the input."""
    import numpy as np

    inputs = list(inputs)
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
                if tuple(arr.shape) == d.shape:
                    arr = arr[None]
                if tuple(arr.shape[1:]) != d.shape:
                    raise InputError(f"{f}: input '{d.name}' array has shape {list(arr.shape)}, expected "
                                     f"[N, {', '.join(map(str, d.shape))}]")
                if d.dtype in INT_DTYPES + ("bool",) and arr.dtype.kind == "f":
                    raise InputError(f"{f}: input '{d.name}' is {d.dtype}, the array holds {arr.dtype}")
                if count is not None and arr.shape[0] != count:
                    raise InputError(f"{f}: input '{d.name}' has {arr.shape[0]} samples, other inputs {count}")
                count = arr.shape[0]
                parts[d.name].append(arr.astype(d.dtype))
            have += count or 0
    data = {name: np.ascontiguousarray(np.concatenate(chunks)[:samples]) for name, chunks in parts.items()}
    if samples is not None and have < samples:
        raise InputError(f"{path}: holds {have} samples, {samples} needed")
    return data


def batches_of(data: Mapping[str, np.ndarray], batch: int, *, pad: bool = True) -> list[dict[str, np.ndarray]]:
    """[N, ...] arrays cut into [batch, ...] chunks in order; the last chunk is padded by repeating its final
    sample (pad=True; callers trim the padded outputs) or dropped (pad=False)."""
    import numpy as np

    total = len(next(iter(data.values())))
    out = []
    for first in range(0, total, batch):
        chunk = {k: v[first:first + batch] for k, v in data.items()}
        short = batch - len(next(iter(chunk.values())))
        if short:
            if not pad:
                break
            chunk = {k: np.concatenate([v, np.repeat(v[-1:], short, axis=0)]) for k, v in chunk.items()}
        out.append({k: np.ascontiguousarray(v) for k, v in chunk.items()})
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


def legacy_input(name: str, dtype: str, shape: tuple[int, ...]) -> InputDesc:
    """The InputDesc of a one-input artifact described by name, dtype and per-sample shape."""
    return InputDesc(name, dtype, tuple(shape), role_for(name, dtype, tuple(shape)))
