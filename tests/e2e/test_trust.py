"""Numbers a paper can trust under misuse and concurrency: the run-folder lock (two real processes),
unique run ids, --resume with --dry-run / plan options, clear errors for bad input, --strict."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cli_runs import cli, null_profile, shared_cache_env
from repo_paths import REPO


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return shared_cache_env(tmp_path_factory)


def two_batches(tmp_path: Path, **run: object) -> Path:
    """The null profile of these tests: batches 1 and 2, so a run folder has two configurations."""
    return null_profile(tmp_path, "nullrun", sweep={"batches": [1, 2]}, run=run)


def saved_run_folder(tmp_path: Path, profile_path: Path) -> Path:
    """A run folder as `bench` leaves it before its first row: profile.yaml only."""
    from edgebench.config.profile import load_profile

    profile = load_profile(str(profile_path))
    run_dir = tmp_path / "runs" / "20250101-000000-nullrun"
    run_dir.mkdir(parents=True)
    resolved = {k: v for k, v in profile.to_dict().items() if k != "source"}
    (run_dir / "profile.yaml").write_text(yaml.safe_dump(resolved, sort_keys=False))
    return run_dir


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# ---------------------------------------------------------------- the run-folder lock


def test_second_resume_of_a_held_run_folder_is_refused_naming_the_holder(env, tmp_path):
    """Two real `bench --resume SAME_DIR`: the second is refused with one line naming the first's pid and
    host and touches nothing; the first, interrupted, names the real run folder; the lock then frees."""
    from edgebench.results.runlock import LOCK_NAME, RunLock

    run_dir = saved_run_folder(tmp_path, two_batches(tmp_path, duration_s=60.0, max_duration_s=90.0,
                                                     min_inferences=10))
    first = subprocess.Popen([sys.executable, "-m", "edgebench", "bench", "--resume", str(run_dir)], env=env,
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        holder: dict = {}
        while time.monotonic() < deadline and holder.get("pid") != first.pid:
            assert first.poll() is None, first.communicate()
            try:
                holder = json.loads((run_dir / LOCK_NAME).read_text() or "{}")
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        assert holder.get("pid") == first.pid, "the first sweep never took the lock"
        before = sorted(p.name for p in run_dir.iterdir())

        second = cli(env, "bench", "--resume", str(run_dir), timeout=120)
        assert second.returncode == 2
        line = one_line(second.stderr)
        assert f"pid {first.pid}" in line and socket.gethostname() in line and str(run_dir) in line
        assert sorted(p.name for p in run_dir.iterdir()) == before  # nothing measured, nothing rewritten
        assert first.poll() is None  # the holder is untouched
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGINT)
        _out, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    assert f"rows written so far are kept in {run_dir}" in err and f"--resume {run_dir}" in err
    assert "RUN_DIR" not in err.replace("--resume RUN_DIR", "")
    with RunLock(run_dir):  # released when its holder ended
        pass


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    from edgebench.results.runlock import RunFolderBusy, RunLock

    code = ("import sys, time; from edgebench.results.runlock import RunLock; RunLock(sys.argv[1]).acquire(); "
            "print('held', flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(RunFolderBusy, match=rf"in use by pid {proc.pid} on host {socket.gethostname()}"):
            RunLock(tmp_path).acquire()
    finally:
        proc.kill()  # SIGKILL: no chance to clean up
        proc.wait()
    lock = RunLock(tmp_path).acquire()  # the kernel dropped the dead holder's lock
    assert json.loads(lock.path.read_text())["pid"] == os.getpid()
    lock.release()


# ---------------------------------------------------------------- unique run ids


def test_run_folders_started_in_the_same_second_are_distinct(tmp_path):
    from edgebench.results.rundir import create_run_dir

    a = create_run_dir(tmp_path / "runs", "20250101-120000-host")
    b = create_run_dir(tmp_path / "runs", "20250101-120000-host")
    assert a != b and a.is_dir() and b.is_dir()
    assert b.name == "20250101-120000-host-2"


def test_four_processes_racing_for_one_run_id_get_four_folders(tmp_path):
    code = ("import sys, time; from edgebench.results.rundir import create_run_dir\n"
            "t = float(sys.argv[2])\nwhile time.time() < t: pass\n"
            "print(create_run_dir(sys.argv[1], 'same-second').name)")
    start = f"{time.time() + 3.0}"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), start], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
             for _ in range(4)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    names = sorted(o.strip() for o, _e in outs)
    assert names == sorted(["same-second", "same-second-2", "same-second-3", "same-second-4"])


# ---------------------------------------------------------------- --resume with --dry-run / plan options


def test_resume_dry_run_measures_nothing_and_says_what_would_run(env, tmp_path):
    run_dir = saved_run_folder(tmp_path, two_batches(tmp_path))
    out = cli(env, "bench", "--resume", str(run_dir), "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "2 configurations: 2 to run" in out.stdout
    assert "resume: 0 of 2 configurations already done; 2 would be measured" in out.stdout
    assert sorted(p.name for p in run_dir.iterdir()) == ["profile.yaml"]  # no rows, no results.csv, no lock


def test_resume_refuses_options_that_would_change_its_plan(env, tmp_path):
    run_dir = saved_run_folder(tmp_path, two_batches(tmp_path))
    out = cli(env, "bench", "--resume", str(run_dir), "--duration", "3", "--batches", "8", "--device", "host")
    assert out.returncode == 2
    line = one_line(out.stderr)
    assert "--duration" in line and "--batches" in line and "--device" in line and "profile.yaml" in line
    assert sorted(p.name for p in run_dir.iterdir()) == ["profile.yaml"]


# ---------------------------------------------------------------- clear errors


@pytest.mark.parametrize("value", ["0", "-1"])
def test_run_with_no_instances_is_refused_without_a_traceback(env, tmp_path, value):
    out = cli(env, "run", "--model", "tiny_cnn", "--backend", "null", "--instances", value,
              "--out", str(tmp_path / "runs"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--instances" in out.stderr.splitlines()[-1] and "must be >= 1" in out.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-2"])
def test_duration_must_be_finite_and_positive(env, value):
    out = cli(env, "bench", "--device", "smoke", "--duration", value, "--dry-run")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--duration" in out.stderr.splitlines()[-1] and "finite" in out.stderr


@pytest.mark.parametrize("text", [".nan", ".inf"])
def test_non_finite_duration_in_a_profile_names_file_and_field(env, tmp_path, text):
    path = tmp_path / "p.yaml"
    path.write_text(f"extends: smoke\nrun:\n  duration_s: {text}\n")
    out = cli(env, "bench", "--device", str(path), "--dry-run")
    assert out.returncode == 2
    line = one_line(out.stderr)
    assert str(path) in line and "'run.duration_s'" in line and "not a finite number" in line


def test_unknown_sampler_is_refused_at_load_time_naming_file_and_field(env, tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("extends: smoke\ntelemetry:\n  samplers: [host, nvmll]\n")
    out = cli(env, "bench", "--device", str(path), "--dry-run")  # before: the dry run passed
    assert out.returncode == 2
    line = one_line(out.stderr)
    assert str(path) in line and "'telemetry.samplers'" in line and "unknown sampler 'nvmll'" in line


def test_sampler_names_agree_with_the_registry():
    from edgebench.telemetry.catalog import SAMPLER_NAMES
    from edgebench.telemetry.registry import SAMPLERS

    assert sorted(SAMPLERS) == sorted(SAMPLER_NAMES)


def test_a_profile_with_several_mistakes_reports_all_of_them(env, tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("extends: smoke\nsweep:\n  batches: [0]\n  precisions: [fp64]\n  colour: red\n"
                    "run:\n  duration_s: .inf\ntelemetry:\n  samplers: [bogus]\n")
    out = cli(env, "bench", "--device", str(path), "--dry-run")
    assert out.returncode == 2
    line = one_line(out.stderr)
    for field in ("'sweep.colour'", "'sweep.batches'", "'run.duration_s'"):
        assert field in line, line
    assert str(path) in line and "problems" in line


def test_semantic_mistakes_are_reported_together(tmp_path):
    from edgebench.config.profile import profile_from_dict
    from edgebench.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        profile_from_dict({"sweep": {"precisions": ["fp64"], "modes": ["threads"]},
                           "run": {"duration_s": 10.0, "max_duration_s": 5.0},
                           "telemetry": {"samplers": ["bogus"]}}, "x.yaml")
    text = str(err.value)
    assert text.startswith("x.yaml: 4 problems: ")
    for part in ("'sweep.precisions'", "'sweep.modes'", "'run.max_duration_s'", "unknown sampler 'bogus'"):
        assert part in text


def test_out_that_is_a_file_or_under_a_file_is_one_clear_line(env, tmp_path):
    a_file = tmp_path / "results.txt"
    a_file.write_text("not a folder")
    for out_arg, words in ((a_file, "is a file, not a folder"), (a_file / "runs", "is a file, so")):
        out = cli(env, "run", "--model", "tiny_cnn", "--backend", "null", "--out", str(out_arg))
        assert out.returncode == 2, out.stdout
        line = one_line(out.stderr)
        assert f"--out {out_arg}" in line and words in line
    assert a_file.read_text() == "not a folder"


def test_out_on_a_read_only_file_system_is_one_clear_line(env, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    script = (f'mount --bind "{ro}" "{ro}" && mount -o remount,bind,ro "{ro}" && '
              f'exec "{sys.executable}" -m edgebench run --model tiny_cnn --backend null --out "{ro}/runs"')
    try:
        out = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                             capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    except FileNotFoundError:
        pytest.skip("needs unshare (util-linux) for a read-only bind mount")
    if "mount" in out.stderr and "Traceback" not in out.stderr and out.returncode != 2:
        pytest.skip(f"no read-only bind mount here (needs root in a mount namespace): {out.stderr.strip()[:200]}")
    assert out.returncode == 2, out.stdout + out.stderr
    line = one_line(out.stderr)
    assert f"--out {ro}/runs" in line and "read-only file system" in line


def test_out_with_a_missing_parent_is_created(env, tmp_path):
    out_dir = tmp_path / "new" / "deeper" / "runs"
    out = cli(env, "run", "--model", "tiny_cnn", "--backend", "null", "--duration", "0.2", "--out", str(out_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    (run_dir,) = list(out_dir.iterdir())
    assert (run_dir / "results.csv").exists()


# ---------------------------------------------------------------- --strict


def test_exit_status_rules():
    from edgebench.cli import EXIT_PARTIAL, _exit_status

    assert _exit_status({"ok": 1, "failed": 1}, strict=False) == 0
    assert _exit_status({"ok": 1, "failed": 1}, strict=True) == EXIT_PARTIAL == 3
    assert _exit_status({"ok": 1, "invalid": 1}, strict=True) == 3
    assert _exit_status({"ok": 2, "skipped": 3}, strict=True) == 0
    assert _exit_status({"failed": 2}, strict=True) == 1 and _exit_status({"failed": 2}, strict=False) == 1


def test_strict_makes_a_partly_failed_sweep_visible_to_scripts(env, tmp_path):
    path = null_profile(tmp_path, "partly", sweep={"option_sets": [{}, {"fail_instance": 0, "fail_phase": "open"}]})
    plain = cli(env, "bench", "--device", str(path), "--out", str(tmp_path / "a"))
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "1 failed" in plain.stdout
    strict = cli(env, "bench", "--device", str(path), "--out", str(tmp_path / "b"), "--strict")
    assert strict.returncode == 3, strict.stdout + strict.stderr
    assert "--strict: 1 failed" in strict.stderr
