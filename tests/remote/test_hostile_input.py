"""What crosses to or from a board cannot run code or escape (issue 21), without ssh: the Makefile takes EXTRAS,
HOST, DEVICE and ARGS as data (real `make`, a stand-in Python that logs its argv); the Ansible route's unpacker
writes only regular files and folders under <run-id>/ (real tar archives with links, devices, `..` names);
board text is printed with its control characters shown, not obeyed."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from repo_paths import REPO

from edgebench.errors import EdgebenchError
from edgebench.remote.sanitize import check_extras, printable

INJECTIONS = ["x]' ; touch {m} ; '[", "$(shell touch {m})", "ort;touch {m}", "`touch {m}`", "ort,$$(touch {m})",
              "ort\ntouch {m}"]

FAKE_PYTHON = r"""#!/bin/sh
# stand-in for python: `-m venv [flags] DIR` makes DIR/bin/python and DIR/bin/edgebench that log their argv
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  for last; do :; done
  mkdir -p "$last/bin"
  for tool in python edgebench; do
    printf '#!/bin/sh\necho "== %s" >> "%s/log"\nfor a; do printf "[%%s]\\n" "$a"; done >> "%s/log"\n' \
      "$tool" "$PWD" "$PWD" > "$last/bin/$tool"
    chmod +x "$last/bin/$tool"
  done
fi
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed")
    d = tmp_path / "checkout"
    d.mkdir()
    shutil.copy(REPO / "Makefile", d)
    shutil.copy(REPO / "pyproject.toml", d)
    (d / "fakepy").write_text(FAKE_PYTHON)
    (d / "fakepy").chmod(0o755)
    return d


def make(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", "PYTHON=./fakepy", "VENV=v", *args], cwd=checkout,
                          capture_output=True, text=True, timeout=60)


def logged(checkout: Path) -> str:
    log = checkout / "log"
    return log.read_text() if log.exists() else ""


@pytest.mark.parametrize("template", INJECTIONS)
def test_make_setup_refuses_extras_that_are_not_names_and_runs_nothing(checkout, tmp_path, template):
    marker = tmp_path / "pwned"
    proc = make(checkout, "setup", "EXTRAS=" + template.format(m=marker))
    assert proc.returncode == 2
    assert "is not a comma-separated list of extras names" in proc.stderr
    assert not marker.exists()
    assert not (checkout / "v").exists() and logged(checkout) == ""  # not even the venv was made


def test_make_setup_passes_good_extras_to_pip_as_one_argument(checkout):
    proc = make(checkout, "setup", "EXTRAS=ort,dev")
    assert proc.returncode == 0, proc.stderr
    assert "[-e]\n[.[ort,dev]]\n" in logged(checkout)
    (checkout / "v" / ".installed").unlink()
    (checkout / "log").unlink()
    proc = make(checkout, "setup")  # the Makefile's own default
    assert proc.returncode == 0, proc.stderr
    assert "[.[export,ort,progress,search,dev]]" in logged(checkout) or "[.[ort,trt,progress,search,dev]]" in logged(checkout)


def test_make_remote_and_bench_take_host_device_and_args_as_words(checkout, tmp_path):
    markers = [tmp_path / f"m{i}" for i in range(4)]
    proc = make(checkout, "remote", f"HOST=b;touch {markers[0]}", f"DEVICE=$(shell touch {markers[1]})",
                f"ARGS=--models a;touch {markers[2]} --batches * $$(touch {markers[3]})")
    assert proc.returncode == 0, proc.stderr
    assert [m.exists() for m in markers] == [False] * 4
    words = logged(checkout).split("== edgebench\n")[1].splitlines()
    assert words == ["[remote]", "[--host]", f"[b;touch {markers[0]}]", "[--device]",
                     f"[$(shell touch {markers[1]})]", "[--]", "[--models]", "[a;touch]", f"[{markers[2]}]",
                     "[--batches]", "[*]", "[$$(touch]", f"[{markers[3]})]"]
    (checkout / "log").unlink()
    proc = make(checkout, "bench", "DEVICE=smoke", "ARGS=--batches 1,2")
    assert proc.returncode == 0, proc.stderr
    assert logged(checkout).split("== edgebench\n")[1].splitlines() == ["[bench]", "[--device]", "[smoke]",
                                                                       "[--batches]", "[1,2]"]


def test_remote_extras_must_be_extras_names():
    assert check_extras("ort,trt,progress") == "ort,trt,progress"
    for bad in ("x]' ; touch /tmp/p ; '[", "", "ort,", ",ort", "ort dev", "a\nb"):
        with pytest.raises(EdgebenchError, match="not a comma-separated list of extras names"):
            check_extras(bad)


def test_board_text_is_printed_with_control_characters_shown():
    planted = "ok \x1b]0;owned\x07 \x1b[2J\x1b[1A\rcleared\x9b31m\x00 tab\tkept"
    assert printable(planted) == "ok \\x1b]0;owned\\x07 \\x1b[2J\\x1b[1A\\x0dcleared\\x9b31m\\x00 tab\tkept"
    assert printable("plain Ünïcode text") == "plain Ünïcode text"


# --------------------------------------------------------------------------- the Ansible route's unpacker

def _archive(path: Path, entries: list[tuple[str, str, str]]) -> Path:
    """A .tgz with (name, kind, data/link target) members, as `tar czf` on a hostile board would make."""
    with tarfile.open(path, "w:gz") as tar:
        for name, kind, data in entries:
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif kind == "file":
                info.size = len(data.encode())
                tar.addfile(info, io.BytesIO(data.encode()))
            elif kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, data
                tar.addfile(info)
            elif kind == "hard":
                info.type, info.linkname = tarfile.LNKTYPE, data
                tar.addfile(info)
            elif kind == "chr":
                info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
                tar.addfile(info)
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
                tar.addfile(info)
    return path


def untar(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "edgebench" / "remote" / "untar.py"), *args],
                          capture_output=True, text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})


def test_untar_keeps_only_regular_files_and_folders_of_the_run(tmp_path):
    arch = _archive(tmp_path / "r.tgz", [
        ("r1", "dir", ""), ("r1/results.csv", "file", "model\ntiny\n"), ("r1/rows", "dir", ""),
        ("r1/rows/0000-h/row.json", "file", "{}"), ("r1/passwd", "sym", "/etc/passwd"),
        ("r1/rows/home", "sym", "/root"), ("r1/shadow", "hard", "/etc/shadow"), ("r1/null", "chr", ""),
        ("r1/pipe", "fifo", ""), ("r1/\x1b[2Jx", "sym", "/")])
    dest = tmp_path / "remote-runs" / "board"
    proc = untar(str(arch), str(dest), "r1")
    assert proc.returncode == 0, proc.stderr
    got = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    assert got == ["r1", "r1/results.csv", "r1/rows", "r1/rows/0000-h", "r1/rows/0000-h/row.json"]
    assert not any(p.is_symlink() for p in dest.rglob("*"))
    assert (dest / "r1" / "results.csv").read_text() == "model\ntiny\n"
    assert proc.stdout.splitlines() == ["skipped: r1/passwd (symlink -> /etc/passwd)",
                                        "skipped: r1/rows/home (symlink -> /root)",
                                        "skipped: r1/shadow (hard link -> /etc/shadow)", "skipped: r1/null (device)",
                                        "skipped: r1/pipe (fifo)", "skipped: r1/\\x1b[2Jx (symlink -> /)"]


@pytest.mark.parametrize(("entries", "words"), [
    ([("r1", "sym", "/etc")], "r1 in the archive is a symlink -> /etc, not a folder"),
    ([("r1", "dir", ""), ("r1/../../evil", "file", "x")], "'r1/../../evil' is not inside r1/"),
    ([("r1", "dir", ""), ("/etc/cron.d/x", "file", "x")], "'/etc/cron.d/x' is not inside r1/"),
    ([("r1", "dir", ""), ("other/x", "file", "x")], "'other/x' is not inside r1/"),
    ([("r1/x", "file", "x")], "the archive holds no folder r1"),
])
def test_untar_refuses_an_archive_that_is_not_the_run_folder(tmp_path, entries, words):
    arch = _archive(tmp_path / "r.tgz", entries)
    dest = tmp_path / "out"
    proc = untar(str(arch), str(dest), "r1")
    assert proc.returncode == 1
    assert proc.stderr == f"edgebench untar: {arch}: " + proc.stderr.split(": ", 2)[2]
    assert words in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not dest.exists() or list(dest.iterdir()) == []
    assert not (tmp_path / "evil").exists()
