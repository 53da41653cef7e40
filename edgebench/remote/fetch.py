"""Fetch a board's run folder into remote-runs/<board>/<run-id>/, and nowhere else.

A board is not trusted to say where its results are: the run folder it reports must be exactly
runs/<run-id> (a plain name: no '..', no '/', not absolute); rsync runs without --links, so a symlink
on the board (runs/<id>/x -> /etc/passwd, or runs/<id> itself -> /etc) is never followed nor recreated
here; the copy lands in a temporary folder beside the target, is checked (regular files and folders
only, all inside it, a results.csv present) and only then renamed into place.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from edgebench.remote.ssh import RemoteError, Ssh

RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
BOARD_NAME_RE = re.compile(r"[^A-Za-z0-9._@-]")


def board_folder_name(host: str) -> str:
    """A folder name for a board: the host text with anything unusual replaced by '_'."""
    name = BOARD_NAME_RE.sub("_", host).strip(".") or "board"
    return name


def run_id_of(host: str, run_dir: Any) -> str:
    """The run id from a board-reported run folder, which must be runs/<run-id>; RemoteError otherwise."""
    if not isinstance(run_dir, str) or not run_dir:
        raise RemoteError(f"{host}: the board reported no run folder ({run_dir!r}); nothing to fetch")
    parts = PurePosixPath(run_dir).parts
    run_id = parts[1] if len(parts) == 2 and parts[0] == "runs" else ""
    if run_dir.startswith("/") or len(parts) != 2 or parts[0] != "runs" or not RUN_ID_RE.match(run_id) \
            or ".." in run_id:
        raise RemoteError(f"{host}: the board reported run folder {run_dir!r}, which is not runs/<run-id> "
                          "inside the remote folder; refused, nothing fetched")
    return run_id


@dataclass(frozen=True)
class Fetched:
    path: Path
    files: int
    skipped: list[str]  # entries rsync did not copy (symlinks, devices), as it named them


def fetch_run(ssh: Ssh, remote_dir: str, run_dir: Any, local_root: Path) -> Fetched:
    """Copy <remote_dir>/runs/<run-id> to <local_root>/<board>/<run-id>; RemoteError on anything unsafe."""
    run_id = run_id_of(ssh.host, run_dir)
    board_dir = local_root / board_folder_name(ssh.host)
    board_dir.mkdir(parents=True, exist_ok=True)
    target = board_dir / run_id
    tmp = board_dir / f".{run_id}.fetching"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        # no trailing slash on the source: if runs/<id> itself is a symlink, rsync skips it (no --links)
        proc = ssh.rsync(["-r", "-t", "--no-links", "--no-devices", "--no-specials", "--chmod=Du=rwx,Fu=rw",
                          "-v", ssh.remote(f"{remote_dir}/runs/{run_id}"), f"{tmp}/"],
                         what=f"fetch runs/{run_id}")
        skipped = [line.removeprefix("skipping non-regular file").strip().strip('"')
                   for line in proc.stdout.splitlines() if line.startswith("skipping non-regular file")]
        fetched = tmp / run_id
        if not fetched.is_dir() or fetched.is_symlink():
            raise RemoteError(f"{ssh.host}: {remote_dir}/runs/{run_id} is not a folder on the board "
                              f"(missing, or a symlink: never followed){_note(skipped)}; nothing fetched")
        files = _check_tree(ssh.host, fetched)
        if not (fetched / "results.csv").is_file():
            raise RemoteError(f"{ssh.host}: runs/{run_id} has no results.csv; not a run folder, nothing fetched")
        if target.exists():
            shutil.rmtree(target)
        os.replace(fetched, target)
        return Fetched(target, files, skipped)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _note(skipped: list[str]) -> str:
    return f" (rsync skipped: {', '.join(skipped[:3])})" if skipped else ""


def _check_tree(host: str, root: Path) -> int:
    """Count regular files under root; RemoteError if anything is a symlink, a special file, or resolves
    outside root (defence in depth: rsync without --links should never produce one)."""
    real_root = os.path.realpath(root)
    files = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            real = os.path.realpath(p)
            if p.is_symlink() or not (p.is_file() or p.is_dir()) or os.path.commonpath([real_root, real]) != real_root:
                raise RemoteError(f"{host}: fetched entry {p.relative_to(root)} is not a plain file or folder "
                                  "inside the run folder; refused")
        files += len(filenames)
    return files
