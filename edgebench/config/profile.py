"""Profiles and model specs: loaded from YAML, typed, validated, immutable.

A profile is a YAML file under profiles/ (or any path); it may `extends:` another
profile, whose values it overrides key by key (mappings merge, lists replace).
A model spec is a YAML file under models/. Every error names the file and the field.
The keys and their per-value rules are in config_fields.py; one measured configuration
(`RunConfig`, importable from here too) is in run_config.py.

Size: profiles and model specs share the YAML reading, the schema checks and the all-errors-at-once
reporting; the model spec's named inputs (issue 10) took it past 400 lines. The next cut, if it grows,
is the model-spec half into its own module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.config.fields import (  # noqa: F401 - DTYPES: imported from config by callers
    DTYPES,
    GPU_SHARING,
    MODEL_SCHEMA,
    MODES,
    PRECISIONS,
    PROFILE_SCHEMA,
    Problems,
    check_value,
)
from edgebench.config.run_config import RunConfig  # noqa: F401 - one home for the sweep's row type; callers import it here
from edgebench.config.shapes import parse_shapes
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.telemetry.catalog import SAMPLER_NAMES
from edgebench.telemetry.power_calibration import parse_calibration, read_calibration_file

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
PROFILES_DIR = PROJECT_ROOT / "profiles"
MODELS_DIR = PROJECT_ROOT / "models"


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "", f"not valid YAML: {exc}".replace("\n", " ")) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "", f"top level must be a mapping, got {type(data).__name__}")
    return data


# --------------------------------------------------------------------------- profiles

@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    device: str
    source: str  # file it came from (and its parents)
    sweep: Mapping[str, Any]
    run: Mapping[str, Any]
    telemetry: Mapping[str, Any]
    calibration: Mapping[str, Any]
    power: Mapping[str, Any] = field(default_factory=dict)
    accuracy: Mapping[str, Any] = field(default_factory=dict)
    cooldown: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "device": self.device,
            "source": self.source,
            "sweep": dict(self.sweep),
            "run": dict(self.run),
            "telemetry": dict(self.telemetry),
            "calibration": dict(self.calibration),
            "power": dict(self.power),
            "accuracy": dict(self.accuracy),
            "cooldown": dict(self.cooldown),
        }

    def with_overrides(self, section: str, **values: Any) -> Profile:
        """A copy with some values of one section replaced (validated like the file)."""
        current = dict(getattr(self, section))
        for key, value in values.items():
            if value is None:
                continue
            spec = PROFILE_SCHEMA[section].get(key)
            if spec is None:
                raise ConfigError("command line", f"{section}.{key}", "unknown option")
            current[key] = check_value("command line", f"{section}.{key}", spec, value)
        data = self.to_dict()
        data[section] = current
        prof = Profile(**data)
        _check_profile_semantics(prof)
        return prof


def profile_path(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path
    candidate = PROFILES_DIR / f"{name_or_path}.yaml"
    if candidate.exists():
        return candidate
    known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.yaml")))
    raise ConfigError(str(name_or_path), "", f"unknown profile (known: {known})")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _raw_profile(path: Path, seen: tuple[Path, ...] = ()) -> tuple[dict[str, Any], str]:
    if path.resolve() in seen:
        chain = " -> ".join(str(p) for p in (*seen, path))
        raise ConfigError(str(path), "extends", f"circular extends: {chain}")
    data = _read_yaml(path)  # its keys are checked with its values, after the merge (profile_from_dict)
    parent = data.get("extends")
    if parent is None:
        return data, str(path)
    if not isinstance(parent, str):
        raise ConfigError(str(path), "extends", f"expected a profile name, got {parent!r}")
    try:
        parent_path = profile_path(parent)
    except ConfigError as exc:
        raise ConfigError(str(path), "extends", exc.problem) from None
    parent_data, parent_source = _raw_profile(parent_path, (*seen, path.resolve()))
    parent_data = {k: v for k, v in parent_data.items() if k != "name"}  # a name is never inherited
    merged = _merge(parent_data, {k: v for k, v in data.items() if k != "extends"})
    return merged, f"{path} (extends {parent_source})"


def _check_keys(source: str, data: dict[str, Any], problems: Problems | None = None) -> None:
    """Unknown keys, each one a problem (all collected in `problems`; raised at once without one)."""
    own = problems or Problems(source)
    for key, value in data.items():
        if key in PROFILE_SCHEMA[""]:
            continue
        if key not in PROFILE_SCHEMA:
            own.errors.append(ConfigError(source, key, f"unknown key (known: "
                                          f"{', '.join(sorted(set(PROFILE_SCHEMA) - {''} | set(PROFILE_SCHEMA[''])))})"))
            continue
        if not isinstance(value, dict):
            own.errors.append(ConfigError(source, key, f"expected a mapping, got {type(value).__name__}"))
            continue
        for sub in value:
            if sub not in PROFILE_SCHEMA[key]:
                own.errors.append(ConfigError(source, f"{key}.{sub}",
                                              f"unknown key (known: {', '.join(sorted(PROFILE_SCHEMA[key]))})"))
    if problems is None:
        own.raise_all()


def load_profile(name_or_path: str) -> Profile:
    path = profile_path(name_or_path)
    data, source = _raw_profile(path)
    return profile_from_dict(data, source, default_name=path.stem)


def profile_from_dict(data: dict[str, Any], source: str, default_name: str = "custom") -> Profile:
    """A validated Profile; every problem of `data` is reported in one ConfigError, not only the first."""
    problems = Problems(source)
    _check_keys(source, data, problems)
    top: dict[str, Any] = {}
    for key, spec in PROFILE_SCHEMA[""].items():
        if key == "extends":
            continue
        value = data.get(key, default_name if key == "name" else spec.default)
        top[key] = problems.check(check_value, source, key, spec, value)
    sections: dict[str, dict[str, Any]] = {}
    for section, fields in PROFILE_SCHEMA.items():
        if section == "":
            continue
        given = data.get(section, {}) or {}
        if not isinstance(given, dict):  # already a problem from _check_keys
            given = {}
        values = {}
        for key, spec in fields.items():
            value = problems.check(check_value, source, f"{section}.{key}", spec, given.get(key, spec.default))
            values[key] = spec.default if value is None and spec.default is not None else value
        sections[section] = values
    top = {k: (default_name if k == "name" else PROFILE_SCHEMA[""][k].default) if v is None else v
           for k, v in top.items()}
    prof = Profile(source=source, **top, **sections)
    failed = {e.field for e in problems.errors}
    if "run.duration_s" in failed:  # its default would make the max_duration_s comparison meaningless
        failed.add("run.max_duration_s")
    for exc in _semantic_problems(prof):  # also when values were wrong: every problem at once
        if exc.field not in failed:
            problems.errors.append(exc)
    problems.raise_all()
    return prof


def _check_profile_semantics(prof: Profile) -> None:
    problems = Problems(prof.source)
    problems.errors.extend(_semantic_problems(prof))
    problems.raise_all()


def _semantic_problems(prof: Profile) -> list[ConfigError]:
    src = prof.source
    problems = Problems(src)
    for p in prof.sweep["precisions"]:
        if p not in PRECISIONS:
            problems.errors.append(ConfigError(src, "sweep.precisions", f"{p!r} is not one of {', '.join(PRECISIONS)}"))
    for m in prof.sweep["modes"]:
        if m not in MODES:
            problems.errors.append(ConfigError(src, "sweep.modes", f"{m!r} is not one of {', '.join(MODES)}"))
    if prof.run["max_duration_s"] < prof.run["duration_s"]:
        problems.errors.append(ConfigError(
            src, "run.max_duration_s",
            f"{prof.run['max_duration_s']} is shorter than run.duration_s {prof.run['duration_s']}",
        ))
    if prof.run.get("slo_ms") is not None and prof.run.get("rate_hz") is None:
        problems.errors.append(ConfigError(src, "run.slo_ms", "needs run.rate_hz (the arrival rate of each stream)"))
    for model, text in (prof.sweep.get("shapes") or {}).items():
        if not isinstance(text, str):
            problems.errors.append(ConfigError(src, f"sweep.shapes.{model}", f"expected a shape text like "
                                                                            f"'input:1x3x224x224', got {text!r}"))
            continue
        try:
            parse_shapes(text, f"sweep.shapes.{model}")
        except EdgebenchError as exc:
            problems.errors.append(ConfigError(src, f"sweep.shapes.{model}", str(exc)))
    tpi = prof.run["threads_per_instance"]
    if tpi != "auto" and tpi < 1:
        problems.errors.append(ConfigError(src, "run.threads_per_instance", f"{tpi} must be >= 1 or 'auto'"))

    if prof.power.get("calibration") is not None:
        try:
            parse_calibration(prof.power["calibration"], src, "power.calibration")
        except ConfigError as exc:
            problems.errors.append(exc)
    if prof.power.get("calibration_file"):
        try:
            read_calibration_file(prof.power["calibration_file"])
        except ConfigError as exc:
            problems.errors.append(exc)
    for name in prof.telemetry["samplers"]:
        if name not in SAMPLER_NAMES:
            problems.errors.append(ConfigError(src, "telemetry.samplers", f"unknown sampler {name!r} "
                                               f"(known: {', '.join(SAMPLER_NAMES)})"))
    return problems.errors


def list_profiles() -> list[tuple[str, str]]:
    out = []
    for path in sorted(PROFILES_DIR.glob("*.yaml")):
        try:
            out.append((path.stem, load_profile(str(path)).description))
        except ConfigError as exc:
            out.append((path.stem, f"BROKEN: {exc}"))
    return out
