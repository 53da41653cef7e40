"""pydantic, the library the typed config (profile sections, model spec files, backend options) is validated with.

On a Python without it (a bare venv), stand-ins let every module still import, so `edgebench --help` and
`edgebench doctor` work there as they do without numpy or yaml (doctor lists pydantic as missing, with the install
hint). A stand-in model class holds its defaults as class attributes; anything that validates (loading a profile
or a model spec, checking backend options) raises the EdgebenchError that says to install pydantic. Import the
names from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgebench.errors import EdgebenchError

MISSING = ("pydantic is not installed (pip install 'pydantic>=2.6'); edgebench validates profiles, model specs "
           "and backend options with it")

if TYPE_CHECKING:
    from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
    from pydantic.config import JsonDict
else:
    try:
        from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
        from pydantic.config import JsonDict
    except ImportError:  # a bare Python: the stand-ins below
        JsonDict = dict

        class ValidationError(Exception):
            """Never raised without pydantic: nothing is validated."""

        def ConfigDict(**settings: Any) -> dict[str, Any]:  # noqa: N802 - pydantic's name
            return dict(settings)

        def Field(default: Any = None, *, default_factory: Any = None, **_: Any) -> Any:  # noqa: N802
            return default_factory() if default_factory is not None else default

        def field_validator(*_names: Any, **_settings: Any) -> Any:
            return lambda method: method

        model_validator = field_validator

        class _ModelType(type):
            @property
            def model_fields(cls) -> dict[str, Any]:
                raise EdgebenchError(MISSING)

        class BaseModel(metaclass=_ModelType):
            def __init__(self, **_values: Any) -> None:  # the class attributes hold the defaults
                pass

            @classmethod
            def model_validate(cls, *_args: Any, **_kwargs: Any) -> Any:
                raise EdgebenchError(MISSING)

__all__ = ["BaseModel", "ConfigDict", "Field", "JsonDict", "ValidationError", "field_validator", "model_validator"]
