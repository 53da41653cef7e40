"""Ctrl-C ends edgebench with exit status 130 (the message naming the run folder printed), never death by SIGINT,
wherever the interrupt lands: also inside code that exec runs from a string (every lazy import that builds a
dataclass), which CPython otherwise marks as an unhandled interrupt and answers with SIGINT at exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from repo_paths import REPO


def run_module(tmp_path, body: str) -> subprocess.CompletedProcess:
    """`python -m` a module whose body runs edgebench's main as __main__.py does (the -m path is where CPython
    re-raises SIGINT for a marked interrupt)."""
    (tmp_path / "interrupted_main.py").write_text(textwrap.dedent(body))
    env = {"PYTHONPATH": f"{tmp_path}:{REPO}", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "interrupted_main"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)


def test_ctrl_c_inside_exec_of_a_string_still_exits_130(tmp_path):
    done = run_module(tmp_path, """
        import edgebench.cli as cli

        def profiles(args):
            exec("raise KeyboardInterrupt")  # where a lazy import's dataclass is built when Ctrl-C lands

        cli.cmd_profiles = profiles
        raise SystemExit(cli.main(["profiles"]))
    """)
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr.strip() == "edgebench: interrupted before a run folder was created"


def test_ctrl_c_in_plain_code_exits_130(tmp_path):
    done = run_module(tmp_path, """
        import edgebench.cli as cli

        def profiles(args):
            raise KeyboardInterrupt

        cli.cmd_profiles = profiles
        raise SystemExit(cli.main(["profiles"]))
    """)
    assert done.returncode == 130, (done.returncode, done.stderr)


def test_an_error_raised_while_a_ctrl_c_is_handled_exits_with_its_own_status(tmp_path):
    done = run_module(tmp_path, """
        import edgebench.cli as cli
        from edgebench.errors import EdgebenchError

        def profiles(args):
            try:
                exec("raise KeyboardInterrupt")
            finally:
                raise EdgebenchError("cleanup failed")  # replaces the interrupt: main answers it with 2

        cli.cmd_profiles = profiles
        raise SystemExit(cli.main(["profiles"]))
    """)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "edgebench: error: cleanup failed" in done.stderr
