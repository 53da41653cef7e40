"""trtexec's shape text ('name:8x128,other:1x3x224x224'), as --shapes, sweep.shapes and a spec's shapes: give it."""

from __future__ import annotations

from edgebench.errors import InputError


def parse_shapes(text: str | None, source: str = "--shapes") -> dict[str, tuple[int, ...]]:
    """trtexec's shape form 'name:8x128,other:1x3x224x224' -> {name: (8, 128), ...}.

    A name may itself contain ':' (the last ':' separates it from the dims). Every dim must be an integer
    >= 1; a repeated name is an error."""
    out: dict[str, tuple[int, ...]] = {}
    if not text:
        return out
    for item in (s.strip() for s in str(text).split(",")):
        if not item:
            continue
        name, sep, dims_text = item.rpartition(":")
        name = name.strip().strip("'\"")
        if not sep or not name or not dims_text.strip():
            raise InputError(f"{source}: {item!r} is not NAME:DIMS (e.g. input_ids:8x128)")
        dims: list[int] = []
        for part in dims_text.strip().lower().split("x"):
            try:
                value = int(part)
            except ValueError:
                raise InputError(f"{source}: input '{name}': {dims_text!r} is not dims like 8x128") from None
            if value < 1:
                raise InputError(f"{source}: input '{name}': dim {value} in {dims_text!r} must be >= 1")
            dims.append(value)
        if name in out:
            raise InputError(f"{source}: input '{name}' is given twice")
        out[name] = tuple(dims)
    return out
