"""Backend options as typed models: each backend declares its options (type, default, limits, and the text of what
a value must be) as a `BackendOptions` model next to its code; `validated` checks a row's options against it.

A problem becomes the one-line BackendError users read, naming backend, option and value: "torch backend: option
cuda_graph='yes' must be true or false", "null backend: option fail_how='explode' is not one of raise, ...",
"trt backend: unknown option(s) fast (known: ...)", with "did you mean" for a near-miss option name. Adding an
option is one field on the backend's model (and the code that reads it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from edgebench.config.problems import choices_of, did_you_mean, kind_text
from edgebench.config.typed import BaseModel, ConfigDict, JsonDict, ValidationError
from edgebench.errors import BackendError

T = TypeVar("T", bound="BackendOptions")


class BackendOptions(BaseModel):
    """Options of one backend: unknown ones refused, values of exactly their type (true, not 'yes'), read-only."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


def must(text: str) -> JsonDict:
    """Field metadata: what a value of the option must be, as the error says it ('true or false')."""
    return {"must": text}


def validated(model: type[T], backend: str, options: Mapping[str, Any]) -> T:
    """`options` checked against `model`, defaults filled in; BackendError naming the first bad option."""
    known = list(model.model_fields)
    unknown = [k for k in sorted(options) if k not in known]
    if unknown:
        near = [m for k in unknown if (m := did_you_mean(k, known)) is not None]
        hint = f"did you mean {', '.join(near)}?" if near else f"known: {', '.join(known)}"
        raise BackendError(f"{backend} backend: unknown option(s) {', '.join(unknown)} ({hint})")
    try:
        return model.model_validate(dict(options))
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        if key not in model.model_fields:  # a rule across options (a model validator)
            raise BackendError(f"{backend} backend: {str(err['msg']).removeprefix('Value error, ')}") from None
        raise BackendError(f"{backend} backend: {_option_problem(model, key, options[key])}") from None


def _option_problem(model: type[BackendOptions], key: str, value: Any) -> str:
    info = model.model_fields[key]
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    if extra.get("must"):
        return f"option {key}={value!r} must be {extra['must']}"
    choices = choices_of(info.annotation)
    if choices:
        return f"option {key}={value!r} is not one of {', '.join(map(str, choices))}"
    return f"option {key}={value!r} must be {kind_text(info.annotation)}"
