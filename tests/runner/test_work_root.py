"""Where a row's timestamp files go (issue 37, an 8 GB board): the system temp folder, unless that is held in RAM
(tmpfs, ramfs), then the run folder's hidden work root on the results disk; read from the mount table."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cli_runs import cli, cli_env, null_profile, read_rows
from repo_paths import REPO

from edgebench.runner import workdirs
from edgebench.runner.workdirs import (
    RUN_WORK,
    WORK_DIR_ENV,
    mount_fs_type,
    ram_backed,
    remove_stale_run_workdirs,
    run_work_root,
)

# captured /proc/self/mountinfo lines (Ubuntu 22.04 on a Jetson Orin: /tmp a tmpfs; the root on the eMMC / NVMe)
JETSON_TMPFS = """\
24 1 179:1 / / rw,relatime shared:1 - ext4 /dev/mmcblk0p1 rw
25 24 0:6 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=3678036k,nr_inodes=919509,mode=755
26 24 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
27 24 0:5 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw
30 24 0:25 / /run rw,nosuid,nodev,noexec,relatime shared:5 - tmpfs tmpfs rw,size=765076k,mode=755
35 24 0:30 / /tmp rw,nosuid,nodev shared:17 - tmpfs tmpfs rw,size=3825364k
40 24 259:1 / /mnt/nvme rw,relatime shared:20 - ext4 /dev/nvme0n1p1 rw
"""
# this CI machine's: /tmp is a folder of the ext4 root, no mount of its own
EXT4_ROOT = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334460k,nr_inodes=3083615,mode=755
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
"""
# a results disk with a tmpfs scratch folder mounted inside it, and a USB disk whose label holds a space
NESTED = """\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
50 27 8:17 / /data rw,relatime shared:30 - xfs /dev/sdb1 rw,attr2,inode64
51 50 0:40 / /data/scratch rw,nosuid,nodev,relatime shared:31 - tmpfs tmpfs rw,size=1048576k
60 27 8:33 / /media/nvidia/My\\040Disk rw,nosuid,nodev,relatime shared:40 - vfat /dev/sdc1 rw,uid=1000
"""
# /proc/mounts (what older tools read): device, point, type
PROC_MOUNTS = """\
/dev/mmcblk0p1 / ext4 rw,relatime 0 0
tmpfs /tmp tmpfs rw,nosuid,nodev,size=3825364k 0 0
/dev/nvme0n1p1 /mnt/nvme ext4 rw,relatime 0 0
"""


def table(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mountinfo"
    path.write_text(text)
    return path


def test_tmp_on_a_tmpfs_is_ram_and_a_disk_beside_it_is_not(tmp_path):
    mounts = table(tmp_path, JETSON_TMPFS)
    assert mount_fs_type("/tmp", mounts) == "tmpfs"
    assert mount_fs_type("/tmp/edgebench-run-12-ab/instance0", mounts) == "tmpfs"
    assert ram_backed("/tmp", mounts) is True
    assert mount_fs_type("/mnt/nvme/runs/r1", mounts) == "ext4"
    assert mount_fs_type("/home/nvidia/runs", mounts) == "ext4"  # the root's
    assert ram_backed("/home/nvidia/runs", mounts) is False
    assert mount_fs_type("/tmpfoo", mounts) == "ext4"  # /tmp is no prefix of /tmpfoo's path


def test_tmp_inside_an_ext4_root_is_not_ram(tmp_path):
    mounts = table(tmp_path, EXT4_ROOT)
    assert mount_fs_type("/tmp", mounts) == "ext4"
    assert ram_backed("/tmp", mounts) is False
    assert mount_fs_type("/dev/shm/x", mounts) == "tmpfs"


def test_the_longest_mount_point_wins_and_escaped_spaces_are_read(tmp_path):
    mounts = table(tmp_path, NESTED)
    assert mount_fs_type("/data/scratch/run", mounts) == "tmpfs"
    assert mount_fs_type("/data/scratch", mounts) == "tmpfs"
    assert mount_fs_type("/data/runs", mounts) == "xfs"
    assert mount_fs_type("/data", mounts) == "xfs"
    assert mount_fs_type("/database", mounts) == "ext4"
    assert mount_fs_type("/media/nvidia/My Disk/runs", mounts) == "vfat"
    assert mount_fs_type("/media/nvidia/My", mounts) == "ext4"


def test_a_point_mounted_twice_takes_the_later_mount(tmp_path):
    mounts = table(tmp_path, EXT4_ROOT + "90 27 0:50 / /tmp rw - ext4 /dev/vdb rw\n"
                                          "91 90 0:51 / /tmp rw - ramfs ramfs rw\n")
    assert mount_fs_type("/tmp/x", mounts) == "ramfs" and ram_backed("/tmp/x", mounts) is True


def test_proc_mounts_format_is_read_too(tmp_path):
    mounts = table(tmp_path, PROC_MOUNTS)
    assert mount_fs_type("/tmp/a", mounts) == "tmpfs"
    assert mount_fs_type("/mnt/nvme/a", mounts) == "ext4"


def test_an_unreadable_table_is_unknown_and_not_ram(tmp_path):
    assert mount_fs_type("/tmp", tmp_path / "absent") is None
    assert ram_backed("/tmp", tmp_path / "absent") is False
    assert mount_fs_type("/tmp", table(tmp_path, "garbage\n")) is None


def test_the_real_mount_table_names_the_roots_type():
    kind = mount_fs_type("/")
    if not Path("/proc/self/mountinfo").exists():
        pytest.skip("no /proc/self/mountinfo: not Linux")
    assert kind is not None and kind != ""


def test_the_run_folder_is_used_only_when_the_temp_folder_is_in_ram(tmp_path, monkeypatch):
    monkeypatch.delenv(WORK_DIR_ENV, raising=False)
    run_dir = tmp_path / "run"
    monkeypatch.setattr(workdirs, "mount_fs_type", lambda path, mounts=None: "tmpfs")
    root, why = run_work_root(run_dir)
    assert root == str(run_dir / RUN_WORK) and "tmpfs" in why
    assert run_work_root(None) == (None, "")  # no run folder known: the temp folder
    monkeypatch.setattr(workdirs, "mount_fs_type", lambda path, mounts=None: "ext4")
    assert run_work_root(run_dir) == (None, "")
    monkeypatch.setattr(workdirs, "mount_fs_type", lambda path, mounts=None: None)
    assert run_work_root(run_dir) == (None, "")  # unknown: as before
    monkeypatch.setenv(WORK_DIR_ENV, str(tmp_path / "scratch"))
    assert run_work_root(run_dir) == (str(tmp_path / "scratch"), f"${WORK_DIR_ENV}")


def test_a_linked_work_root_is_never_written_through(tmp_path, monkeypatch):
    monkeypatch.delenv(WORK_DIR_ENV, raising=False)
    monkeypatch.setattr(workdirs, "mount_fs_type", lambda path, mounts=None: "tmpfs")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (run_dir / RUN_WORK).symlink_to(tmp_path / "elsewhere")
    assert run_work_root(run_dir) == (None, "")


MAKE_AND_WAIT = ("import sys, time; from edgebench.runner.workdirs import make_workdir; "
                 "print(make_workdir(sys.argv[1]), flush=True); time.sleep(600)")


def dead_owners_folder(root: Path) -> Path:
    """A work folder under root (created with it) whose owner, a real process, was killed with SIGKILL."""
    proc = subprocess.Popen([sys.executable, "-c", MAKE_AND_WAIT, str(root)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    path = Path(proc.stdout.readline().strip())
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    (path / "instance0.start_ns.0").write_bytes(b"x" * 64)  # what a killed row leaves
    return path


def test_stale_folders_in_a_run_folders_work_root_are_removed_with_the_root(tmp_path, monkeypatch):
    monkeypatch.delenv(WORK_DIR_ENV, raising=False)
    run_dir = tmp_path / "run"
    dead = dead_owners_folder(run_dir / RUN_WORK)
    assert dead.parent == run_dir / RUN_WORK and dead.is_dir()
    assert remove_stale_run_workdirs(run_dir) == [dead]
    assert not (run_dir / RUN_WORK).exists()
    mine = Path(workdirs.make_workdir(str(run_dir / RUN_WORK)))  # a live owner's (this process): kept, root too
    assert remove_stale_run_workdirs(run_dir) == [] and mine.is_dir()
    workdirs.remove_workdir(str(mine))  # the last folder goes: the root with it
    assert not (run_dir / RUN_WORK).exists()


def test_a_new_sweep_removes_what_killed_runs_beside_it_left_in_their_work_roots(tmp_path, monkeypatch):
    """A run killed with SIGKILL and never resumed keeps its timestamp chunks in <its run>/.edgebench-work; the next
    sweep into the same --out folder removes them (their owners are gone), not only its own run folder's."""
    monkeypatch.delenv(WORK_DIR_ENV, raising=False)
    old_run, new_run = tmp_path / "20261128-000000-host", tmp_path / "20261128-010000-host"
    new_run.mkdir()
    dead = dead_owners_folder(old_run / RUN_WORK)
    (old_run / "results.csv").write_text("model\n")  # the old run's results stay
    assert remove_stale_run_workdirs(new_run) == [dead]
    assert not (old_run / RUN_WORK).exists() and (old_run / "results.csv").is_file()


def null_row_sweep(run_dir: Path, cache: Path, accuracy_samples: int = 0) -> list[dict]:
    """A real null-backend row through the sweep (a spawned instance process writing its chunk files; with
    accuracy_samples, a spawned probe process first, reading its accuracy inputs from its own work folder)."""
    from edgebench.config.profile import load_profile
    from edgebench.config.run_config import RunConfig
    from edgebench.models.artifacts import Artifacts
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.pipeline.plan import PlannedRun
    from edgebench.pipeline.sweep import run_sweep
    from edgebench.results.store import ResultsStore

    profile = load_profile("smoke")
    cfg = RunConfig(model="tiny_cnn", backend="null", precision="fp32", batch=1, placements=("cpu",), duration_s=0.3,
                    max_duration_s=3.0, min_inferences=10, warmup_s=0.05,
                    accuracy_samples=accuracy_samples)
    run_dir.mkdir()
    models = ModelCache(Artifacts(os.environ.get("EDGEBENCH_CACHE") or cache), dict(profile.calibration))
    return run_sweep([PlannedRun(cfg, None)], profile, run_dir, ResultsStore(run_dir), models)


@pytest.fixture
def watched(monkeypatch) -> tuple[list[str], list[list[str]]]:
    """(each work folder the orchestrator makes, what the last one held while the row's timestamps were summarised)."""
    from edgebench.pipeline import execute
    from edgebench.runner import orchestrator

    made: list[str] = []
    seen: list[list[str]] = []
    real_make, real_summarize = orchestrator.make_workdir, execute.summarize

    def make(*args: str) -> str:
        made.append(real_make(*args))
        return made[-1]

    def summarize(*args, **kwargs):
        seen.append(sorted(os.listdir(made[-1])))
        return real_summarize(*args, **kwargs)

    monkeypatch.setattr(orchestrator, "make_workdir", make)
    monkeypatch.setattr(execute, "summarize", summarize)
    monkeypatch.delenv(WORK_DIR_ENV, raising=False)
    return made, seen


def ours_in_temp() -> set[str]:
    """This process's work folders in the system temp folder."""
    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith(f"edgebench-run-{os.getpid()}-")}


def test_with_the_temp_folder_in_ram_a_row_keeps_its_timestamps_in_the_run_folder(tmp_path, monkeypatch, watched):
    made, seen = watched
    asked: list[str] = []

    def tmpfs(path, mounts=None):
        asked.append(str(path))
        return "tmpfs"

    monkeypatch.setattr(workdirs, "mount_fs_type", tmpfs)
    before = ours_in_temp()
    run_dir = tmp_path / "run"
    rows = null_row_sweep(run_dir, tmp_path / "cache")
    assert [r["status"] for r in rows] in (["ok"], ["invalid"]), [r["reason"] for r in rows]
    assert asked == [tempfile.gettempdir()]  # the temp folder's mount is what decides
    assert len(made) == 1 and Path(made[0]).parent == run_dir / RUN_WORK
    assert "owner.json" in seen[0] and any(name.startswith("instance0") for name in seen[0]), seen  # while it ran
    assert not os.path.exists(made[0]) and not (run_dir / RUN_WORK).exists()  # nothing left behind
    assert ours_in_temp() == before  # nor in the temp folder
    assert read_rows(run_dir / "results.csv")[0]["status"] == rows[0]["status"]
    (row_json,) = run_dir.glob("rows/*/row.json")  # what the chunks took while the row ran, for a disk-full line
    record = json.loads(row_json.read_text())
    inferences = sum(i["inferences"] for i in record["instances"])
    assert record["stamps"]["on_results_disk"] is True and inferences > 0
    assert record["stamps"]["bytes"] >= 16 * inferences, record["stamps"]  # an int64 start and end per inference


@pytest.fixture
def probe_watched(monkeypatch) -> tuple[list[str], list[list[str]]]:
    """(each work folder the probe makes, what it held when the probe was done with it: inputs and results)."""
    from edgebench.runner import probe

    made: list[str] = []
    held: list[list[str]] = []
    real_make = probe.make_workdir

    def make(*args: str) -> str:
        made.append(real_make(*args))
        return made[-1]

    def remove(path: str) -> None:
        held.append(sorted(os.listdir(path)))
        workdirs.remove_workdir(path)

    monkeypatch.setattr(probe, "make_workdir", make)
    monkeypatch.setattr(probe, "remove_workdir", remove, raising=False)  # (raising=False: the probe once used rmtree)
    return made, held


@pytest.mark.parametrize("kind", ["tmpfs", "ext4"])
def test_the_probes_folder_goes_where_the_rows_instances_go(tmp_path, monkeypatch, watched, probe_watched, kind):
    """The probe's accuracy inputs (tens of MB a row for large inputs), probe.pkl and layers.csv are in its own work
    folder: on a RAM temp folder it is made in the run folder's work root, as the instances' is, and removed after."""
    made, _seen = watched
    probe_made, probe_held = probe_watched
    monkeypatch.setattr(workdirs, "mount_fs_type", lambda path, mounts=None: kind)
    before = ours_in_temp()
    run_dir = tmp_path / "run"
    rows = null_row_sweep(run_dir, tmp_path / "cache", accuracy_samples=4)
    assert [r["status"] for r in rows] in (["ok"], ["invalid"]), [r["reason"] for r in rows]
    assert rows[0]["probe"], rows[0]  # a probe process ran for the row's accuracy
    where = run_dir / RUN_WORK if kind == "tmpfs" else Path(tempfile.gettempdir())
    assert len(probe_made) == 1 and Path(probe_made[0]).parent == where, (probe_made, where)
    assert len(made) == 1 and Path(made[0]).parent == where and made[0] != probe_made[0]
    held = set(probe_held[0])  # what it held when done: its owner record, the inputs (.npz: by input name), results
    assert {"owner.json", "accuracy_inputs.npz", "probe.pkl"} <= held, probe_held
    assert not os.path.exists(probe_made[0]) and not (run_dir / RUN_WORK).exists()  # nothing left behind
    assert ours_in_temp() == before  # nor in the temp folder


def test_with_the_temp_folder_on_disk_a_row_uses_it_as_before(tmp_path, monkeypatch, watched):
    made, seen = watched
    monkeypatch.setattr(workdirs, "mount_fs_type", lambda path, mounts=None: "ext4")
    run_dir = tmp_path / "run"
    rows = null_row_sweep(run_dir, tmp_path / "cache")
    assert [r["status"] for r in rows] in (["ok"], ["invalid"]), [r["reason"] for r in rows]
    assert len(made) == 1 and Path(made[0]).parent == Path(tempfile.gettempdir())
    assert "owner.json" in seen[0] and any(name.startswith("instance0") for name in seen[0]), seen
    assert not os.path.exists(made[0]) and not (run_dir / RUN_WORK).exists()
    (row_json,) = run_dir.glob("rows/*/row.json")  # the temp folder's chunks count only if it shares the disk
    same_disk = os.stat(tempfile.gettempdir()).st_dev == os.stat(run_dir).st_dev
    assert json.loads(row_json.read_text())["stamps"]["on_results_disk"] is same_disk


def test_resume_removes_a_killed_sweeps_folder_from_the_run_folder(tmp_path):
    """The CLI: a sweep killed mid-row on a board with /tmp in RAM left <run>/.edgebench-work/edgebench-run-*;
    `bench --resume` removes it (its owner is gone) and the empty work root with it."""
    env = cli_env(Path(os.environ.get("EDGEBENCH_CACHE") or tmp_path / "cache"))
    env.pop(WORK_DIR_ENV, None)
    profile = null_profile(tmp_path, "work-root")
    done = cli(env, "bench", "--device", str(profile), "--out", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = [d for d in (tmp_path / "runs").iterdir() if d.is_dir()]
    assert not (run_dir / RUN_WORK).exists()  # this machine's temp folder is not in RAM, or the row removed it
    dead = dead_owners_folder(run_dir / RUN_WORK)
    resumed = cli(env, "bench", "--resume", str(run_dir))
    assert resumed.returncode in (0, 4), resumed.stdout + resumed.stderr  # every row was done already
    assert f"removed 1 temp folder(s) of killed sweeps: {dead}" in resumed.stdout, resumed.stdout
    assert not dead.exists() and not (run_dir / RUN_WORK).exists()
