"""Profiles: loaded from YAML (`extends:` merged, duplicate keys refused with their lines), validated against the
typed sections of sections.py, immutable.

A profile is a YAML file under profiles/ (or any path); it may `extends:` another profile, whose values it
overrides key by key (mappings merge, lists replace). Every error names the file and the dotted field, or the
command-line flag when a flag gave the value (`Profile.origins`); all problems of a file are reported at once.
The YAML reading is shared with model specs (models/spec.py). One measured configuration (`RunConfig`,
importable from here too) is in run_config.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from edgebench.config.problems import Problems, problems_of, unknown_text
from edgebench.config.run_config import RunConfig  # noqa: F401 - one home for the sweep's row type; callers import it here
from edgebench.config.sections import (
    SECTION_MODELS,
    SECTIONS,
    AccuracySection,
    CalibrationSection,
    CooldownSection,
    PowerSection,
    ProfileFile,
    RunSection,
    SearchSection,
    SweepSection,
    TelemetrySection,
)
from edgebench.config.shapes import parse_shapes
from edgebench.config.typed import ValidationError
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.telemetry.catalog import SAMPLER_NAMES
from edgebench.telemetry.power_calibration import parse_calibration, read_calibration_file

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
PROFILES_DIR = PROJECT_ROOT / "profiles"
MODELS_DIR = PROJECT_ROOT / "models"


def _duplicate_key(node: Any, where: str = "") -> tuple[str, int, int] | None:
    """(dotted key, first line, second line) of the first key given twice in one mapping of a composed YAML
    node tree (PyYAML keeps the last one silently), else None."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else ""
            path = f"{where}.{key}" if where else key
            line = key_node.start_mark.line + 1
            if key and key in seen:
                return path, seen[key], line
            seen[key] = line
            if (found := _duplicate_key(value_node, path)) is not None:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            if (found := _duplicate_key(item, f"{where}[{i}]")) is not None:
                return found
    return None


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(str(path), "", "file does not exist") from None
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.strerror}") from None
    try:
        duplicate = _duplicate_key(yaml.compose(text, Loader=yaml.SafeLoader))
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "", f"not valid YAML: {exc}".replace("\n", " ")) from None
    if duplicate is not None:
        key, first, second = duplicate
        raise ConfigError(str(path), key, f"given twice (lines {first} and {second}); YAML would keep only the "
                                          "last one silently: remove one")
    if data is None:
        raise ConfigError(str(path), "", "the file is empty (no keys); a profile or model spec needs at least "
                                         "a name or `extends:`")
    if not isinstance(data, dict):
        raise ConfigError(str(path), "", f"top level must be a mapping, got {type(data).__name__}")
    return data


# --------------------------------------------------------------------------- profiles

@dataclass(frozen=True)
class Profile:
    """A validated profile: its sections as typed models (`profile.run.duration_s`), the file it came from and, for
    values a command-line flag gave, that flag (`origins`: dotted field -> flag), which an error about the value
    names. A section given as a mapping (`dataclasses.replace(p, run={...})`) is validated into its model."""

    name: str
    description: str
    device: str
    source: str  # file it came from (and its parents)
    sweep: SweepSection = field(default_factory=SweepSection)
    run: RunSection = field(default_factory=RunSection)
    telemetry: TelemetrySection = field(default_factory=TelemetrySection)
    calibration: CalibrationSection = field(default_factory=CalibrationSection)
    power: PowerSection = field(default_factory=PowerSection)
    accuracy: AccuracySection = field(default_factory=AccuracySection)
    cooldown: CooldownSection = field(default_factory=CooldownSection)
    search: SearchSection = field(default_factory=SearchSection)
    origins: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problems = Problems(self.source)
        for section in SECTIONS:
            given = getattr(self, section)
            model = SECTION_MODELS[section]
            if isinstance(given, model):
                continue
            try:
                object.__setattr__(self, section, model.model_validate(dict(given)))
            except ValidationError as exc:
                for problem in problems_of(exc, model, dict(given), self.where, f"{section}."):
                    problems.add(problem)
        problems.raise_all()

    def to_dict(self) -> dict[str, Any]:
        """Plain data (a loadable profile without `source`): top-level keys, then one mapping per section."""
        out: dict[str, Any] = {"name": self.name, "description": self.description, "device": self.device,
                               "source": self.source}
        for section in SECTIONS:
            out[section] = getattr(self, section).model_dump()
        return out

    def where(self, dotted: str) -> tuple[str, str]:
        """(source, field) an error about `dotted` names: the flag that gave its value, else the file; and the field."""
        return self.origins.get(dotted, self.source), dotted

    def error(self, dotted: str, problem: str) -> ConfigError:
        """A ConfigError about field `dotted`, naming its flag or its file (see where)."""
        return ConfigError(*self.where(dotted), problem)

    def with_section(self, section: str, flags: Mapping[str, str] | None = None, **values: Any) -> Profile:
        """A copy with some values of one section replaced as they are (None included), not validated: for values
        the command itself decides (edgebench run's single config). `flags` as in with_overrides."""
        current = getattr(self, section)
        origins = {**self.origins, **{f"{section}.{k}": flags[k] for k in values if flags and k in flags}}
        return replace(self, origins=origins, **{section: current.model_copy(update=values)})

    def with_overrides(self, section: str, flags: Mapping[str, str] | None = None, **values: Any) -> Profile:
        """A copy with some values of one section replaced (None = keep), validated like the file. `flags` (key ->
        flag) names the command-line flag each value came from: its errors, now and in the plan, name the flag."""
        given = {k: v for k, v in values.items() if v is not None}
        if not given:
            return self
        origins = {**self.origins, **{f"{section}.{k}": flags[k] for k in given if flags and k in flags}}
        named = replace(self, origins=origins)

        def where(dotted: str) -> tuple[str, str]:
            return origins.get(dotted, "command line"), dotted

        model = type(getattr(self, section))
        data = {**getattr(self, section).model_dump(), **given}
        try:
            new = model.model_validate(data)
        except ValidationError as exc:
            problems = Problems("command line")
            for problem in problems_of(exc, model, data, where, f"{section}."):
                problems.add(problem)
            problems.raise_all()
            raise  # pragma: no cover - problems_of names at least one
        prof = replace(named, **{section: new})
        problems = Problems(prof.source)
        problems.errors.extend(_semantic_problems(prof))
        problems.raise_all()
        return prof


def profile_path(name_or_path: str) -> Path:
    """A profile file: a path (ends in .yaml/.yml or holds a '/') or the name of one in profiles/."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or "/" in name_or_path:
        if path.is_dir():
            raise ConfigError(str(name_or_path), "", "is a folder, not a profile file")
        if not path.is_file():
            raise ConfigError(str(name_or_path), "", "file does not exist")
        return path
    candidate = PROFILES_DIR / f"{name_or_path}.yaml"
    if candidate.exists():
        return candidate
    known = [p.stem for p in PROFILES_DIR.glob("*.yaml")]
    raise ConfigError(str(name_or_path), "", _unknown_profile(name_or_path, known))


def _unknown_profile(name: str, known: list[str]) -> str:
    """'unknown profile (did you mean orin-nx?)', or with nothing close the list of known ones."""
    text = unknown_text("profile", name, known)
    return text.replace(f"unknown profile {name!r}", "unknown profile", 1)


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


def load_profile(name_or_path: str) -> Profile:
    path = profile_path(name_or_path)
    data, source = _raw_profile(path)
    return profile_from_dict(data, source, default_name=path.stem)


def profile_from_dict(data: dict[str, Any], source: str, default_name: str = "custom") -> Profile:
    """A validated Profile; every problem of `data` is reported in one ConfigError, not only the first."""
    data = {k: v for k, v in data.items() if k != "extends"}  # resolved by _raw_profile
    data.setdefault("name", default_name)
    problems = Problems(source)
    try:
        checked = ProfileFile.model_validate(data)
    except ValidationError as exc:
        for problem in problems_of(exc, ProfileFile, data, lambda dotted: (source, dotted)):
            problems.add(problem)
        cleaned = _without(data, {e.field for e in problems.errors})
        checked = ProfileFile.model_validate({"name": default_name, **cleaned})
    prof = Profile(**dict(checked), source=source)  # the checked sections, as models
    failed = {e.field for e in problems.errors}
    if "run.duration_s" in failed:  # its default would make the max_duration_s comparison meaningless
        failed.add("run.max_duration_s")
    for problem in _semantic_problems(prof):  # also when values were wrong: every problem at once
        if problem.field not in failed:
            problems.add(problem)
    problems.raise_all()
    return prof


def _without(data: dict[str, Any], failed: set[str]) -> dict[str, Any]:
    """`data` without the keys that failed (sections that are no mapping, fields within sections), so the rest
    validates with defaults in their place and the checks across fields still run."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in failed:
            continue
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if f"{key}.{k}" not in failed}
        out[key] = value
    return out


def _semantic_problems(prof: Profile) -> list[ConfigError]:
    """What the types cannot say: checks across fields, shape texts, calibration files, known sampler names."""
    problems: list[ConfigError] = []
    run, sweep, power = prof.run, prof.sweep, prof.power
    if run.max_duration_s < run.duration_s:
        problems.append(prof.error("run.max_duration_s",
                                   f"{run.max_duration_s} is shorter than run.duration_s {run.duration_s}"))
    if run.slo_ms is not None and run.rate_hz is None:
        problems.append(prof.error("run.slo_ms", "needs run.rate_hz (the arrival rate of each stream)"))
    if prof.search.goal is not None and run.slo_ms is not None:
        problems.append(prof.error("search.goal", "one adaptive search at a time: run.slo_ms already searches the most "
                                                  "streams under an SLO (a latency limit of this search is search.slo_ms)"))
    if prof.search.goal != "best" and any(v is not None for v in (prof.search.slo_ms, prof.search.power_cap_w,
                                                                    prof.search.max_accuracy_drop_pct)):
        problems.append(prof.error("search.goal", "limits (search.slo_ms, power_cap_w, max_accuracy_drop_pct) apply to "
                                                  "goal best"))
    for model, text in (sweep.shapes or {}).items():
        field = f"sweep.shapes.{model}"
        if not isinstance(text, str):
            problems.append(ConfigError(prof.source, field, f"expected a shape text like 'input:1x3x224x224', "
                                                            f"got {text!r}"))
            continue
        try:
            parse_shapes(text, field)
        except EdgebenchError as exc:
            problems.append(ConfigError(prof.source, field, str(exc)))
    tpi = run.threads_per_instance
    if tpi != "auto" and tpi < 1:
        problems.append(prof.error("run.threads_per_instance", f"{tpi} must be >= 1 or 'auto'"))
    if power.calibration is not None:
        try:
            parse_calibration(power.calibration, prof.source, "power.calibration")
        except ConfigError as exc:
            problems.append(exc)
    if power.calibration_file:
        try:
            read_calibration_file(power.calibration_file)
        except ConfigError as exc:
            problems.append(exc)
    for name in prof.telemetry.samplers:
        if name not in SAMPLER_NAMES:
            problems.append(prof.error("telemetry.samplers", unknown_text("sampler", name, SAMPLER_NAMES)))
    return problems


def list_profiles() -> list[tuple[str, str]]:
    out = []
    for path in sorted(PROFILES_DIR.glob("*.yaml")):
        try:
            out.append((path.stem, load_profile(str(path)).description))
        except ConfigError as exc:
            out.append((path.stem, f"BROKEN: {exc}"))
    return out
