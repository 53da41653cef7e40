"""A Ctrl-C that lands inside an import waits for the import to end (edgebench.interrupt_guard); anywhere else it
stops the command at once. Each case runs in a fresh interpreter that sends itself a real SIGINT."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from repo_paths import REPO

# a module whose top-level code receives a SIGINT and then keeps running Python bytecode, where Python's own handler
# raises: the import is cut short, and the module never lands in sys.modules
SELF_INTERRUPTING_MODULE = """
import os, signal
os.kill(os.getpid(), signal.SIGINT)
total = 0
for i in range(200_000):
    total += i
COMPLETE = True
"""

SCRIPT = """
import sys, time
from edgebench.interrupt_guard import interrupts_wait_for_imports

def outcome():
    try:
        {body}
    except KeyboardInterrupt:
        return "interrupted"
    return "ran on"

if sys.argv[1] == "guarded":
    try:
        with interrupts_wait_for_imports():
            result = outcome()
    except KeyboardInterrupt:
        result = "interrupted after the block"
else:
    result = outcome()
imported = "selfint" in sys.modules and getattr(sys.modules["selfint"], "COMPLETE", False)
print(result, "imported" if imported else "not imported")
"""


def run_case(tmp_path: Path, body: str, mode: str) -> str:
    (tmp_path / "selfint.py").write_text(SELF_INTERRUPTING_MODULE)
    script = SCRIPT.format(body=textwrap.indent(body, " " * 8).strip())
    done = subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={"PYTHONPATH": f"{REPO}:{tmp_path}", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_the_guard_a_ctrl_c_cuts_an_import_short(tmp_path):
    """The failure the guard exists for, shown on the same module: the import is abandoned half way."""
    assert run_case(tmp_path, "import selfint\ntime.sleep(5)", "bare") == "interrupted not imported"


def test_a_ctrl_c_inside_an_import_is_raised_once_the_import_completes(tmp_path):
    assert run_case(tmp_path, "import selfint\ntime.sleep(5)", "guarded") == "interrupted imported"


def test_a_ctrl_c_outside_an_import_is_raised_at_once(tmp_path):
    body = "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nfor _ in range(10**8):\n    pass"
    assert run_case(tmp_path, body, "guarded") == "interrupted not imported"


def test_a_ctrl_c_held_when_the_block_ends_is_not_lost(tmp_path):
    """The import is the block's last step: the held Ctrl-C comes out when the block ends."""
    assert run_case(tmp_path, "import selfint", "guarded") == "interrupted after the block imported"


DESTRUCTOR_BODY = """import selfint
class Slow:
    def __del__(self):
        t = time.monotonic()
        while time.monotonic() - t < 0.3:
            pass
Slow()
time.sleep(5)"""


def test_a_held_ctrl_c_the_timer_raises_inside_a_destructor_is_not_lost(tmp_path):
    """The import ends, then a __del__ runs Python for 0.3 s: the re-check fires inside it, where Python prints and
    drops an exception; the Ctrl-C is held again and stops the sleep after it (CI: a search ran to its end after a
    Ctrl-C whose KeyboardInterrupt landed in ZipFile.__del__)."""
    assert run_case(tmp_path, DESTRUCTOR_BODY, "guarded") == "interrupted imported"


def test_the_guard_restores_python_s_own_handler_and_leaves_no_timer():
    code = ("import signal; from edgebench.interrupt_guard import interrupts_wait_for_imports\n"
            "with interrupts_wait_for_imports():\n"
            "    assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler\n"
            "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
            "assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)\n"
            "assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL\n"
            "import sys; assert sys.unraisablehook is sys.__unraisablehook__\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
