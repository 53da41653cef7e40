"""Unpack a board's run-folder archive (the Ansible route: tar on the board, fetch, unpack here) with the rsync
route's confinement: only `<run-id>/...` regular files and folders, nothing else.

`ansible.builtin.unarchive` (and plain `tar x`) recreate what the archive holds: symlinks such as
`results.csv -> /etc/passwd` or `rows/home -> /root`, hard links, devices, FIFOs, absolute or `..` names. Here
every member must be a regular file or a folder whose name is `<run-id>` or `<run-id>/...` without `.`/`..`
parts; links, devices and other specials are skipped and named; anything else (another top-level name, a
`..`, the run folder itself being a link) refuses the whole archive. The tree is unpacked into a temporary
folder beside the target and renamed into place only when complete.

Run as a script by the Ansible role on the controller, with the playbook's Python and no edgebench imports:
  python edgebench/remote/untar.py ARCHIVE DEST_DIR RUN_ID   -> DEST_DIR/RUN_ID
Exit 0 (skipped members listed on stdout, one per line, "skipped: <name> (<kind>)"), 1 with one line on stderr.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import PurePosixPath

RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")


class Refused(Exception):
    pass


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"symlink -> {member.linkname}"
    if member.islnk():
        return f"hard link -> {member.linkname}"
    if member.ischr() or member.isblk():
        return "device"
    if member.isfifo():
        return "fifo"
    return "special file"


def plan(members: list[tarfile.TarInfo], run_id: str) -> tuple[list[tarfile.TarInfo], list[str]]:
    """(members to unpack, 'name (kind)' of those skipped); Refused when the archive is not runs/<run-id>."""
    if not RUN_ID_RE.match(run_id) or ".." in run_id:
        raise Refused(f"{run_id!r} is not a run id")
    keep, skipped = [], []
    top_seen = False
    for m in members:
        name = m.name[2:] if m.name.startswith("./") else m.name
        parts = PurePosixPath(name).parts
        if not parts or name.startswith("/") or any(p in (".", "..") for p in parts) or parts[0] != run_id:
            raise Refused(f"archive member {m.name!r} is not inside {run_id}/; nothing unpacked")
        if len(parts) == 1:
            if not m.isdir():
                raise Refused(f"{run_id} in the archive is a {_kind(m)}, not a folder; nothing unpacked")
            top_seen = True
        if m.isfile() or m.isdir():
            m.name = name
            keep.append(m)
        else:
            skipped.append(f"{name} ({_kind(m)})")
    if not top_seen:
        raise Refused(f"the archive holds no folder {run_id}; nothing unpacked")
    return keep, skipped


def unpack(archive: str, dest: str, run_id: str) -> list[str]:
    """Unpack ARCHIVE's <run_id>/ to DEST/<run_id> (replacing an older copy); the skipped members."""
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(archive, "r:*") as tar:
        keep, skipped = plan(tar.getmembers(), run_id)
        tmp = tempfile.mkdtemp(prefix=f".{run_id}.", suffix=".unpacking", dir=dest)
        try:
            for m in keep:  # one by one: only regular files and folders, names checked above
                target = os.path.join(tmp, *PurePosixPath(m.name).parts)
                if m.isdir():
                    os.makedirs(target, mode=0o755, exist_ok=True)
                    continue
                os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
                src = tar.extractfile(m)
                if src is None:
                    raise Refused(f"archive member {m.name!r} cannot be read")
                with src, open(target, "xb") as out:
                    shutil.copyfileobj(src, out)
                os.chmod(target, 0o644)
            final = os.path.join(dest, run_id)
            if os.path.islink(final):
                os.unlink(final)
            elif os.path.exists(final):
                shutil.rmtree(final)
            os.replace(os.path.join(tmp, run_id), final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return skipped


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: untar.py ARCHIVE DEST_DIR RUN_ID", file=sys.stderr)
        return 2
    try:
        skipped = unpack(*argv)
    except (Refused, tarfile.TarError, OSError) as exc:
        print(f"edgebench untar: {argv[0]}: {exc}", file=sys.stderr)
        return 1
    for name in skipped:
        print("skipped: " + re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda c: f"\\x{ord(c.group()):02x}", name))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
