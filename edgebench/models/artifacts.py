"""Content-addressed artifact cache. Every artifact has a JSON sidecar saying how it was made.

Layout: <root>/<kind>/<key>/<filename> and <root>/<kind>/<key>/<filename>.json, where <key> is a
hash of everything that decides the artifact's content (spec, versions, options). An artifact
is written to a temporary name and renamed into place, so a killed build never leaves a
half-written file that a later run would trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebench.atomic_files import write_json_atomic
from edgebench.errors import EdgebenchError


def default_cache_root() -> Path:
    env = os.environ.get("EDGEBENCH_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "edgebench"


def key_of(inputs: dict[str, Any]) -> str:
    """Stable short hash of a JSON-able description of an artifact's inputs."""
    payload = json.dumps(inputs, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def sha256_file(path: Path | str, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


_SHA_MEMO: dict[tuple[str, int, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """sha256 of a file, memoised per (path, size, mtime, inode) for the process (checkpoints and cached artifacts
    are large, and a sweep checks them row after row)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _SHA_MEMO:
        _SHA_MEMO[key] = sha256_file(path)
    return _SHA_MEMO[key]


@dataclass(frozen=True)
class Artifact:
    path: Path
    sidecar: dict[str, Any]
    reused: bool  # True when it came from the cache

    @property
    def sha256(self) -> str:
        return str(self.sidecar["sha256"])


class Artifacts:
    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_root()

    def path_for(self, kind: str, inputs: dict[str, Any], filename: str) -> Path:
        """<root>/<kind>/<key>/<filename>; a kind or file name that is not one plain name (it would leave the
        cache) is an error, whatever made it."""
        for part in (kind, filename):
            if not part or part in (".", "..") or Path(part).name != part or "\\" in part:
                raise EdgebenchError(f"artifact cache {self.root}: {part!r} is not a plain file name; refused")
        return self.root / kind / key_of(inputs) / filename

    def get_or_build(
        self,
        kind: str,
        inputs: dict[str, Any],
        filename: str,
        build: Callable[[Path], dict[str, Any]],
    ) -> Artifact:
        """Return the cached artifact for `inputs`, or call `build(tmp_path)` to make it.

        `build` writes the artifact to the path it is given and returns extra sidecar fields.
        A cached artifact whose bytes no longer match its recorded sha256 is rebuilt.
        """
        final = self.path_for(kind, inputs, filename)
        sidecar_path = final.with_name(final.name + ".json")
        if final.exists() and sidecar_path.exists():
            try:
                sidecar = json.loads(sidecar_path.read_text())
                if sidecar.get("sha256") == file_sha256(final):
                    return Artifact(final, sidecar, reused=True)
            except (OSError, json.JSONDecodeError):
                pass  # unreadable sidecar: rebuild below
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{filename}.", suffix=".tmp", dir=final.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            extra = build(tmp) or {}
            sidecar = {"kind": kind, "key": final.parent.name, "inputs": inputs, **extra, "sha256": sha256_file(tmp)}
            os.replace(tmp, final)
            write_json_atomic(sidecar_path, sidecar)
        finally:
            if tmp.exists():
                tmp.unlink()
        return Artifact(final, sidecar, reused=False)
