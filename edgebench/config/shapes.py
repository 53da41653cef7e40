"""trtexec's shape text ('name:8x128,other:1x3x224x224'), as --shapes, sweep.shapes and a spec's shapes: give it."""

from __future__ import annotations

import math
import os

from edgebench.errors import InputError


def memory_bytes() -> int | None:
    """This machine's physical memory in bytes (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _size_text(n: float) -> str:
    for unit, scale in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def allocation_problem(dims: tuple[int, ...], memory: int | None) -> str | None:
    """Why a tensor of `dims` cannot be allocated, or None. Counted at 1 byte per value (the smallest dtype):
    a shape beyond the machine's memory, or beyond what a 64-bit size can count, can never be fed."""
    values = math.prod(dims)
    limit = min(memory, 2**63 - 1) if memory else 2**63 - 1
    if values <= limit:
        return None
    where = f"this machine's memory ({_size_text(memory)})" if memory else "a 64-bit size"
    return f"{values:.3g} values, at least {_size_text(values)} even at 1 byte each: more than {where} can hold"


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
        problem = allocation_problem(tuple(dims), memory_bytes())
        if problem:
            raise InputError(f"{source}: input '{name}': {dims_text.strip()} cannot be allocated: {problem}")
        if name in out:
            raise InputError(f"{source}: input '{name}' is given twice")
        out[name] = tuple(dims)
    return out
