"""Run folders as the report reads them: rows of results.csv, system.json, profile.yaml, a label.

A run folder is what `edgebench bench` writes (docs/run-folder.md). Only results.csv is
required; a missing or unreadable system.json / profile.yaml is stated in `Run.notes`, never guessed.
Rows are typed by results.reader (the schema's type per column; None = not measured).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import EdgebenchError, exc_text
from edgebench.results.confine import link_problem
from edgebench.results.reader import read_lines_table
from edgebench.results.schema import COLUMN_NAMES, STATUSES
from edgebench.results.store import COLUMNS_NOTE, missing_reason, written_by

CONFIG_KEYS = ("model", "backend", "precision", "batch", "instances", "mode", "placement", "options")
_GPU_NOTE = re.compile(r"nvml device \d+: ([^,;|]+)")


@dataclass
class Run:
    path: Path
    rows: list[dict[str, Any]]  # typed (results.reader): int, float, bool, str or None per column
    system: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    label: str = ""
    notes: list[str] = field(default_factory=list)  # stated absences (no system.json, ...)
    missing_columns: list[str] = field(default_factory=list)  # columns of this version the run's results.csv lacks

    @property
    def written_by(self) -> str:
        """The edgebench version(s) that wrote the rows (their edgebench_version, else system.json's), its git
        commit when system.json has one, and how many of this version's columns its results.csv has."""
        version = written_by(self.rows) or str((self.system or {}).get("edgebench_version") or "not recorded")
        commit = str(((self.system or {}).get("git") or {}).get("commit") or "")[:12]
        have = len(COLUMN_NAMES) - len(self.missing_columns)
        return (f"{version}" + (f" (git {commit})" if commit else "")
                + (f", {have} of {len(COLUMN_NAMES)} columns" if self.missing_columns else ""))

    @property
    def run_id(self) -> str:
        ids = sorted({r.get("run_id", "") for r in self.rows if r.get("run_id")})
        if ids:
            return ids[0] if len(ids) == 1 else "+".join(ids)
        return str((self.system or {}).get("run_id") or self.path.name)

    def device(self) -> str:
        """What the rows ran on, in words: board model, GPU name (from NVML notes) or CPU model."""
        system = self.system or {}
        board = system.get("board") or {}
        for row in self.rows:
            m = _GPU_NOTE.search(row.get("telemetry_notes") or "")
            if m:
                return m.group(1).strip()
        if board.get("model"):
            return str(board["model"])
        cpu = (system.get("cpu") or {}).get("model")
        if cpu:
            return str(cpu)
        if board.get("dmi_product"):
            return str(board["dmi_product"])
        return "unknown device (no system.json)"

    def status_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for row in self.rows:
            status = row.get("status") or ""
            counts[status] = counts.get(status, 0) + 1
        return counts


def load_run(path: Path | str) -> Run:
    """Read one run folder; EdgebenchError names the folder when it has no results.csv. No file is read
    through a symlink or from outside the folder (edgebench.results.confine)."""
    path = Path(path)
    results = path / "results.csv"
    if not results.exists() and not results.is_symlink():
        raise EdgebenchError(f"{path}: not a run folder (no results.csv)")
    if (problem := link_problem(path, results)) is not None:
        raise EdgebenchError(f"{problem}; not read")
    # a cut last line or a line of the wrong length is set aside with a note (results.reader.read_lines_table)
    names, read, notes = read_lines_table(results, required=("model", "backend", "precision", "batch", "status"))
    rows = [{c: None for c in COLUMN_NAMES} | r for r in read]  # an older results.csv: its missing columns empty
    run = Run(path=path, rows=rows, notes=notes, missing_columns=[c for c in COLUMN_NAMES if c not in names])
    if run.missing_columns:
        run.notes.append(f"results.csv written by edgebench {written_by(rows) or '(version not recorded)'} has no "
                         f"{', '.join(run.missing_columns)}: empty here ({missing_reason(written_by(rows))})")
    upgrade_note = path / COLUMNS_NOTE
    if (problem := link_problem(path, upgrade_note)) is not None:
        run.notes.append(f"{problem}; not read")
    elif upgrade_note.exists():
        try:
            up = json.loads(upgrade_note.read_text())
            run.notes.append(f"results.csv upgraded by --resume from edgebench {up.get('upgraded_from') or '?'} "
                             f"(original kept as {up.get('kept_as')}); {len(up.get('empty_columns') or {})} column(s) "
                             f"empty in its {up.get('rows')} earlier row(s): {', '.join(up.get('empty_columns') or {})}")
        except (OSError, json.JSONDecodeError, AttributeError) as exc:
            run.notes.append(f"{upgrade_note}: unreadable ({exc})")
    run.system = _side_file(path, "system.json", json.loads, "system info", run.notes)
    run.profile = _side_file(path, "profile.yaml", _yaml_mapping, "profile", run.notes)
    return run


def _yaml_mapping(text: str) -> Any:
    import yaml

    return yaml.safe_load(text) or {}


def _side_file(folder: Path, name: str, parse: Callable[[str], Any], what: str, notes: list[str]) -> Any:
    """A run folder's side file parsed, or None with a note saying why (a link that leaves the folder, unreadable,
    absent); never a guess."""
    path = folder / name
    if (problem := link_problem(folder, path)) is not None:
        notes.append(f"{problem}; not read")
        return None
    if not path.exists():
        notes.append(f"{name} absent: {what} not recorded for this run")
        return None
    try:
        return parse(path.read_text())
    except Exception as exc:  # noqa: BLE001 - an unreadable side file is reported, not fatal (yaml has its own errors)
        notes.append(f"{path}: unreadable ({exc_text(exc)})")
        return None


def profile_name(run: Run) -> str:
    return str((run.profile or {}).get("name") or (run.system or {}).get("profile") or "")


def load_runs(paths: list[Path | str]) -> list[Run]:
    """Runs in the given order, each labelled '<profile> on <device>'; repeated labels get the run id."""
    runs = [load_run(p) for p in paths]
    for run in runs:
        prof = profile_name(run)
        run.label = f"{prof} on {run.device()}" if prof else run.device()
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.label] = seen.get(run.label, 0) + 1
    for run in runs:
        if seen[run.label] > 1:
            run.label = f"{run.label} [{run.run_id}]"
    labels = [r.label for r in runs]
    for i, run in enumerate(runs):  # the same folder given twice
        if labels.count(run.label) > 1:
            run.label = f"{run.label} #{i + 1}"
    return runs
