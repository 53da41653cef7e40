"""runner/child_process.py with real spawned processes: own process group, a group killed with its grandchildren,
the grace period before SIGKILL, and exit codes put into words."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from edgebench.runner import child_process
from edgebench.runner.child_process import exit_text

SLEEPER = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"]


def start_grandchild(conn, ignore_term: bool, then_exit: bool) -> None:
    """Target: start a grandchild that ignores SIGTERM, say both pids and the process group, then wait or exit."""
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    grandchild = subprocess.Popen(SLEEPER)
    conn.send((os.getpid(), os.getpgid(0), grandchild.pid))
    if then_exit:
        os._exit(0)
    time.sleep(120)


def exit_with(code: int) -> None:
    os._exit(code)


def gone(pid: int, within_s: float = 5.0) -> bool:
    """The process no longer runs: absent, or a zombie waiting for whoever adopted it to reap it."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def spawn_with_grandchild(ignore_term: bool = False, then_exit: bool = False):
    parent_end, child_end = child_process.context().Pipe()
    child = child_process.spawn(start_grandchild, (child_end, ignore_term, then_exit), name="test-child")
    child_end.close()
    assert parent_end.poll(60), "the child did not report its grandchild"
    pid, pgid, grandchild = parent_end.recv()
    parent_end.close()
    return child, pid, pgid, grandchild


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("ignore_term, grace_s, ended, min_wait_s", [
    (True, 0.5, "died with SIGKILL", 0.4),  # SIGTERM ignored: SIGKILL after the grace period
    (False, 10.0, "died with SIGTERM", 0.0),  # SIGTERM honoured: it does not sit out the 10 s grace period
])
def test_stop_ends_a_child_leading_its_own_group_and_the_grandchild_in_it(ignore_term, grace_s, ended, min_wait_s):
    """The grandchild ignores SIGTERM either way: the SIGKILL to every group after the grace period takes it."""
    child, pid, pgid, grandchild = spawn_with_grandchild(ignore_term=ignore_term)
    try:
        assert pid == child.pid and pgid == child.pid  # it leads its own process group
        assert os.getpgid(0) != child.pid  # and we are not in it
        t0 = time.monotonic()
        child_process.stop([child], grace_s=grace_s)
        waited_s = time.monotonic() - t0
        assert exit_text(child.exitcode) == ended
        assert min_wait_s <= waited_s < 5.0
        assert gone(grandchild), f"grandchild {grandchild} outlived its group's stop"
    finally:
        with_group_killed(pgid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_stop_kills_what_the_group_still_holds_after_its_leader_has_exited():
    child, _, pgid, grandchild = spawn_with_grandchild(then_exit=True)
    try:
        child.join(30)
        assert child.exitcode == 0  # reaped: getpgid can no longer say it had a group
        assert not gone(grandchild, within_s=0.2)  # the orphan still runs in the group
        child_process.stop([child], grace_s=0.1)
        assert gone(grandchild)
    finally:
        with_group_killed(pgid)


def test_a_child_spawned_without_its_own_group_stays_in_ours_and_is_killed_alone():
    child = child_process.spawn(time.sleep, (120,), own_group=False)
    try:
        assert os.getpgid(child.pid) == os.getpgid(0)
        child_process.stop([child], grace_s=5.0)
        assert child.exitcode == -signal.SIGTERM  # our own group was not signalled: this test still runs
    finally:
        child.proc.kill()
        child.join(5)


def test_spawn_sets_the_environment_for_the_child_only():
    os.environ.pop("EDGEBENCH_TEST_CHILD_ENV", None)
    child = child_process.spawn(exit_with_env_flag, (), env={"EDGEBENCH_TEST_CHILD_ENV": "7"})
    child.join(60)
    assert child.exitcode == 7
    assert "EDGEBENCH_TEST_CHILD_ENV" not in os.environ


def exit_with_env_flag() -> None:
    os._exit(int(os.environ.get("EDGEBENCH_TEST_CHILD_ENV", "1")))


def test_exit_codes_in_words():
    assert exit_text(-9) == "died with SIGKILL"
    assert exit_text(-15) == "died with SIGTERM"
    assert exit_text(-11) == "died with SIGSEGV"
    assert exit_text(-200) == "died with signal 200"  # no such signal
    assert exit_text(3) == "exited with code 3"
    assert exit_text(0) == "exited with code 0"


def test_a_real_exit_code_and_a_real_signal_are_judged_like_rows_state_them():
    code = child_process.spawn(exit_with, (3,))
    code.join(60)
    assert exit_text(code.exitcode) == "exited with code 3"
    killed = child_process.spawn(time.sleep, (120,))
    time.sleep(0.5)
    os.kill(killed.pid, signal.SIGKILL)
    killed.join(30)
    assert exit_text(killed.exitcode) == "died with SIGKILL"


def with_group_killed(pgid: int) -> None:
    """Cleanup if an assertion failed before stop(): nothing of the test's group is left."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
