"""Instance and probe processes do not re-run the `edgebench` console script (issue 19: per-row set-up)."""

from __future__ import annotations

import os
import subprocess
import sys

from repo_paths import REPO

SCRIPT = '''
import sys
from edgebench.cli import main  # what the installed console script does
from edgebench.runner import child_process
import multiprocessing as mp
from childmod import child

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    with child_process.child_env({}):
        p = ctx.Process(target=child, args=(q,))
        p.start()
    print("cli-in-child", q.get(timeout=60))
    p.join()
    print("spec-restored", sys.modules["__main__"].__spec__ is None)
'''


def test_children_spawned_from_the_console_script_skip_importing_the_cli(tmp_path):
    script = tmp_path / "edgebench_script.py"
    script.write_text(SCRIPT)
    (tmp_path / "childmod.py").write_text('import sys\n\ndef child(q):\n    q.put("edgebench.cli" in sys.modules)\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    # without the fix-up skip the child re-runs the script (module __mp_main__), which imports edgebench.cli
    assert "cli-in-child False" in out.stdout
    assert "spec-restored True" in out.stdout
