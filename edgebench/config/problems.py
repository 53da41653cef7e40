"""Config problems as users read them: pydantic's validation errors become one-line ConfigErrors that name the
file (or the command-line flag) and the dotted field, with "did you mean" for a near-miss name.

The texts are the ones edgebench has always printed: "expected list[int], got list [1, '8']", "0 is below the
minimum 1", "must not be empty", "'fp8' is not one of fp32, ...", "unknown key (known: ...)", "is required".
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from edgebench.config.typed import BaseModel, ValidationError
from edgebench.errors import ConfigError


def did_you_mean(word: str, known: Iterable[str]) -> str | None:
    """The known name closest to `word` when one is close (difflib), else None."""
    close = difflib.get_close_matches(str(word), [str(k) for k in known], n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_text(what: str, word: str | None, known: Iterable[str]) -> str:
    """'unknown model 'resnet81' (did you mean resnet18?)' or, with nothing close, '... (known: a, b, c)'."""
    known = sorted(str(k) for k in known)
    head = f"unknown {what}" + (f" {word!r}" if word is not None else "")
    near = did_you_mean(word, known) if word is not None else None
    return f"{head} (did you mean {near}?)" if near else f"{head} (known: {', '.join(known)})"


class Problems:
    """Collects every ConfigError of one profile so that all of them are reported at once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[ConfigError] = []

    def add(self, exc: ConfigError) -> None:
        if str(exc) not in {str(e) for e in self.errors}:
            self.errors.append(exc)

    def raise_all(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            parts = [(f"field '{e.field}': {e.problem}" if e.field else e.problem) if e.source == self.source else
                     (f"{e.source}: field '{e.field}': {e.problem}" if e.field else str(e)) for e in self.errors]
            raise ConfigError(self.source, "", f"{len(self.errors)} problems: " + "; ".join(parts))


# ------------------------------------------------------------------ type names as the messages write them

def _unwrap(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _is_union(annotation: Any) -> bool:
    """A union of two or more types besides None (pydantic tags its errors with the branch; X | None it does not)."""
    annotation = _unwrap(annotation)
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return False
    return len([a for a in typing.get_args(annotation) if a is not type(None)]) > 1


def kind_text(annotation: Any) -> str:
    """'list[int]', 'float|none', 'int|auto', 'str|list[str]', 'map|none' for a field's annotation. A Literal of
    one value is that value; of several, the type of its values (their choices are named by the 'not one of' text).
    An optional list is named without '|none' (leaving it out is how it is not given)."""
    annotation = _unwrap(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return "none"
    if origin in (typing.Union, types.UnionType):
        parts = [kind_text(a) for a in args]
        if "none" in parts and any(p.startswith("list[") for p in parts):
            parts.remove("none")
        return "|".join(parts)
    if origin is Literal:
        return str(args[0]) if len(args) == 1 else type(args[0]).__name__
    if origin is list:
        return f"list[{kind_text(args[0])}]"
    if origin is dict or annotation is dict:  # a map of anything is a 'map'; of typed values, it says of what
        typed_values = len(args) == 2 and args[1] is not Any
        return f"map[{kind_text(args[0])}, {kind_text(args[1])}]" if typed_values else "map"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    return getattr(annotation, "__name__", str(annotation))


def choices_of(annotation: Any) -> tuple[Any, ...]:
    """The values of the first Literal inside an annotation with several values (the field's choices)."""
    annotation = _unwrap(annotation)
    if typing.get_origin(annotation) is Literal:
        return typing.get_args(annotation)
    for arg in typing.get_args(annotation):
        found = choices_of(arg)
        if len(found) > 1:
            return found
    return ()


# ------------------------------------------------------------------ pydantic errors -> one problem per field

TYPE_ERRORS_END = ("_type", "_parsing")
VALUE_ORDER = ("finite_number", "too_short", "literal_error", "greater_than_equal", "greater_than", "edgebench")


def _is_type_error(err: Mapping[str, Any]) -> bool:
    """A value of the wrong type, as opposed to a value of the right type out of range or not a choice. A literal
    error is a type error when the literal has one value ('auto') or the value is not of the choices' type."""
    kind = err["type"]
    if kind == "too_short" and err["loc"]:  # an empty item of a list of lists: the list is of the wrong shape
        return True
    if kind == "literal_error":
        expected = str(err.get("ctx", {}).get("expected", ""))
        several = " or " in expected or "," in expected
        return not (several and isinstance(err["input"], str))
    return kind.endswith(TYPE_ERRORS_END) or kind in ("model_attributes_type", "dict_type", "missing")


def field_problem(annotation: Any, value: Any, errors: list[dict[str, Any]]) -> str:
    """The one problem of one field whose value failed validation with `errors` (their loc starts below it)."""
    if _is_union(annotation):  # the branch whose type the value has decides: its value error, else a type error
        branches: dict[Any, list[dict[str, Any]]] = {}
        for err in errors:
            branches.setdefault(err["loc"][0] if err["loc"] else None, []).append({**err, "loc": err["loc"][1:]})
        matching = [errs for errs in branches.values() if not any(_is_type_error(e) for e in errs)]
        errors = matching[0] if matching else [{"type": "union_type", "input": value, "loc": ()}]
    if any(err["type"] == "extra_forbidden" for err in errors):
        return "unknown key"
    if any(err["type"] == "missing" and not err["loc"] for err in errors):
        return "is required"
    if any(_is_type_error(err) for err in errors):
        return f"expected {kind_text(annotation)}, got {type(value).__name__} {value!r}"
    err = min(errors, key=lambda e: VALUE_ORDER.index(e["type"]) if e["type"] in VALUE_ORDER else len(VALUE_ORDER))
    item = err["input"]
    if err["type"] == "finite_number":
        return f"{item!r} is not a finite number"
    if err["type"] == "too_short":
        return "must not be empty"
    if err["type"] == "literal_error":
        return f"{item!r} is not one of {', '.join(map(str, choices_of(annotation)))}"
    if err["type"] in ("greater_than_equal", "greater_than"):
        limit = err.get("ctx", {}).get("ge", err.get("ctx", {}).get("gt"))
        return f"{item!r} is below the minimum {limit}"
    return str(err["msg"]).removeprefix("Value error, ")


def problems_of(exc: ValidationError, model: type[BaseModel], data: Mapping[str, Any],
                where: typing.Callable[[str], tuple[str, str]], prefix: str = "") -> list[ConfigError]:
    """One ConfigError per failed field of `model` validated from `data` (nested sections recurse). `where(dotted)`
    is (source, field) to name: the file (or the flag that gave the value) and the dotted field."""
    return _problems([dict(e) for e in exc.errors()], model, data, where, prefix)


def _problems(errors_in: list[dict[str, Any]], model: type[BaseModel], data: Mapping[str, Any],
              where: typing.Callable[[str], tuple[str, str]], prefix: str) -> list[ConfigError]:
    by_field: dict[str, list[dict[str, Any]]] = {}
    for err in errors_in:
        loc = err["loc"]
        key = str(loc[0]) if loc else ""
        by_field.setdefault(key, []).append({**err, "loc": loc[1:]})
    out: list[ConfigError] = []
    fields = model.model_fields
    for key, errors in by_field.items():
        dotted = f"{prefix}{key}"
        source, field = where(dotted)
        info = fields.get(key)
        if info is None:  # an unknown key (extra_forbidden) or a model-level problem
            if any(e["type"] == "extra_forbidden" for e in errors):
                out.append(ConfigError(source, field, _unknown_key(key, fields)))
            else:
                out.extend(ConfigError(source, field, str(e["msg"]).removeprefix("Value error, ")) for e in errors)
            continue
        sub = _unwrap(info.annotation)
        value = data.get(key)
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            if isinstance(value, Mapping) and all(e["loc"] for e in errors):
                out.extend(_problems(errors, sub, value, where, f"{dotted}."))
            else:
                out.append(ConfigError(source, field, f"expected a mapping, got {type(value).__name__}"))
            continue
        out.append(ConfigError(source, field, field_problem(info.annotation, value, errors)))
    return out


def _unknown_key(key: str, fields: Mapping[str, Any]) -> str:
    near = did_you_mean(key, fields)
    return f"unknown key (did you mean {near}?)" if near else f"unknown key (known: {', '.join(sorted(fields))})"

