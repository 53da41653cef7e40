"""A throw-away Jetson for tests: the REAL jtop service on emulated sysfs, sealed off from this machine.

Host side (`run_sandboxed`): `unshare --mount --propagation private --pid --fork` gives a private mount
table and PID namespace; in it a tmpfs holds the upper/work dirs of an overlay whose lower dir is `/`,
so the merged tree looks like this machine but every write lands in RAM and vanishes with the
namespace. proc is mounted fresh, /dev rbound, /run is an empty tmpfs (so /run/jtop.sock exists only
inside), and the repo (plus the Python install, if it lives on another mount) is bound in read-only.
Then `chroot` into the merged tree runs the given command. There /sys is an ordinary writable
directory (sysfs is a separate mount, so the overlay does not show it): rails, CPU, GPU, EMC, thermal
zones and DMI files are written as the test chooses. No systemd unit is installed, nothing outside the
tmpfs is written, and when the command ends the kernel kills every process left in the namespace.

Inside side (`FakeJetson`): writes the emulated board from a fixture tree of tests/fixtures/sysfs,
fakes `nvpmodel` and `jetson_clocks`, creates group `jtop`, and starts/kills the real service
(`jtop.service.JtopServer`, JTOP_TESTING=true so it reads /fake_sys, which points at the same rails).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "sysfs"
READY = "EDGEBENCH-SANDBOX-READY"

_SETUP = r"""
set -eu
T="$1"; REPO="$2"; shift 2
BINDS=""
while [ "$1" != "--" ]; do BINDS="$BINDS $1"; shift; done
shift
mount -t tmpfs -o size=512m,mode=700 edgebench-sandbox "$T"
mkdir "$T/upper" "$T/work" "$T/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$T/upper,workdir=$T/work" "$T/root"
R="$T/root"
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
mount -t tmpfs -o size=16m,mode=755 edgebench-run "$R/run"
for d in "$REPO" $BINDS; do
  mkdir -p "$R$d"
  mount --bind "$d" "$R$d"
  mount -o remount,bind,ro "$R$d"
done
echo "$READY" >&2
cd /
exec chroot "$R" "$@"
"""


def sandbox_unavailable() -> str | None:
    """Why the sandbox cannot run here (None when it may): checked before trying."""
    if not sys.platform.startswith("linux"):
        return f"the jtop sandbox needs Linux namespaces (platform is {sys.platform})"
    if os.geteuid() != 0:
        return "the jtop sandbox needs root (unshare --mount, overlay and chroot need CAP_SYS_ADMIN/CAP_SYS_CHROOT)"
    for tool in ("unshare", "chroot", "mount", "bash"):
        if shutil.which(tool) is None:
            return f"the jtop sandbox needs `{tool}` on PATH (util-linux / coreutils)"
    return None


def _extra_binds() -> list[str]:
    """Python install dirs that the overlay of / would not show (they live on another mount)."""
    root_dev = os.stat("/").st_dev
    out: list[str] = []
    for p in {sys.prefix, sys.base_prefix, str(Path(os.path.realpath(sys.executable)).parent.parent)}:
        if os.stat(p).st_dev != root_dev and not p.startswith(str(REPO)) and p not in out:
            out.append(p)
    return sorted(out)


class SandboxUnavailable(RuntimeError):
    """The sandbox could not be set up here (namespaces, overlay or chroot refused)."""


def run_sandboxed(argv: list[str], timeout_s: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run argv inside a fresh sandbox (cwd = the repo); raises SandboxUnavailable when setup fails."""
    tmp = tempfile.mkdtemp(prefix="edgebench-jetson-sandbox-")
    inner_env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
                 "LANG": "C.UTF-8", "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    inner = ["/usr/bin/env", "-i", *[f"{k}={v}" for k, v in inner_env.items()],
             "/bin/sh", "-c", 'cd "$0" && exec "$@"', str(REPO), *argv]
    cmd = ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child",
           "bash", "-c", _SETUP.replace("$READY", READY), "setup", tmp, str(REPO), *_extra_binds(), "--", *inner]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    finally:
        try:
            os.rmdir(tmp)  # the tmpfs was mounted only inside the namespace: here it is an empty dir
        except OSError:
            pass
    if READY not in out.stderr:
        tail = " | ".join(out.stderr.strip().splitlines()[-3:]) or f"exit {out.returncode}"
        raise SandboxUnavailable(f"unshare/overlay/chroot sandbox refused here: {tail}")
    return out



def driver_result(script: str, prefix: str, timeout_s: float, env: dict[str, str] | None = None) -> Any:
    """The JSON a test's own `script --inside` prints after `prefix`, run in a fresh sandbox. Skips (with the
    reason) where jetson-stats or the sandbox is missing; fails with the driver's output when it breaks."""
    import json

    import pytest

    pytest.importorskip("jtop", reason="jetson-stats is not installed (pip install 'edgebench[dev]')")
    why = sandbox_unavailable()
    if why:
        pytest.skip(why)
    try:
        proc = run_sandboxed([sys.executable, os.path.abspath(script), "--inside"], timeout_s=timeout_s, env=env)
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(prefix)]
    assert proc.returncode == 0 and lines, f"sandbox driver failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n" \
                                           f"{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len(prefix):])

# ---------------------------------------------------------------------------------------------- inside

NVPMODEL_SH = """#!/bin/sh
# fake nvpmodel: three modes, the current one in /tmp/edgebench_nvpmodel
MODE=$(cat /tmp/edgebench_nvpmodel 2>/dev/null || echo 2)
NAMES="MAXN 10W 15W"
case "$1" in
  -q) echo "NV Power Mode: $(echo $NAMES | cut -d' ' -f$((MODE + 1)))"; echo "$MODE" ;;
  -p) echo "NVPM VERB: PM_CONFIG: DEFAULT=15W(2)"
      i=0; for n in $NAMES; do echo "NVPM VERB: POWER_MODEL: ID=$i NAME=$n"; i=$((i + 1)); done ;;
  -m) echo "$2" > /tmp/edgebench_nvpmodel ;;
esac
"""

JETSON_CLOCKS_SH = """#!/bin/sh
# fake jetson_clocks: --show lists the GPU clock range from the emulated devfreq files
D=/fake_sys/devices/platform/17000000.gpu/devfreq/17000000.gpu
case "$1" in
  --show) echo "GPU MinFreq=$(cat $D/min_freq) MaxFreq=$(cat $D/max_freq) CurrentFreq=$(cat $D/cur_freq)" ;;
  --store) touch "$2"; echo "stored" ;;
esac
"""


def write(path: str | Path, value: object) -> None:
    """Replace a file in one step (a reader never sees it half-written, as with real sysfs)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(f"{value}\n")
    os.replace(tmp, path)


def open_way_for_others(paths: list[str | Path]) -> str | None:
    """Let another user (the tests' `nobody`) reach these files inside the sandbox: add o+rx to every folder on
    the way to each path, both as written (a venv's bin/python link) and resolved. A checkout may sit in a folder
    only its owner may enter (a home folder, any `mktemp -d`); the chmod lands in the overlay's upper dir and
    vanishes with the namespace, so the real folders keep their modes. A folder that cannot be changed here
    (the repo and extra installs are bound in read-only) and is closed to others is returned as the reason
    why another user cannot run the interpreter; None when the way is open."""
    if Path("/sys/kernel").exists():
        raise RuntimeError("open_way_for_others changes folder modes: use it only inside run_sandboxed")
    closed: list[str] = []
    for target in paths:
        for p in {Path(os.path.abspath(target)), Path(os.path.realpath(target))}:
            for d in [p.parent, *p.parent.parents] if not p.is_dir() else [p, *p.parents]:
                mode = os.stat(d).st_mode
                if mode & 0o005 == 0o005:
                    continue
                try:
                    os.chmod(d, mode | 0o005)
                except OSError as exc:
                    closed.append(f"{d} (mode {oct(mode & 0o777)}: {exc.strerror})")
    if closed:
        return ("another user cannot reach the interpreter or the checkout: " + "; ".join(sorted(set(closed)))
                + " (give those folders o+rx, or use a checkout others may read)")
    return None


class FakeJetson:
    """The emulated board inside the sandbox. Rails come from tests/fixtures/sysfs/<board>."""

    GPU = Path("/fake_sys/devices/platform/17000000.gpu")

    def __init__(self, board: str = "orin_nx") -> None:
        if not Path("/run").is_dir() or Path("/sys/kernel").exists():
            raise RuntimeError("FakeJetson writes /sys: use it only inside run_sandboxed (the real /sys is mounted)")
        self.board = board
        self.service: subprocess.Popen | None = None

    def install(self) -> None:
        i2c = Path("/sys/bus/i2c/devices")
        shutil.copytree(FIXTURES / self.board / "sys/bus/i2c/devices", i2c)
        Path("/fake_sys/bus").mkdir(parents=True)
        os.symlink("/sys/bus/i2c", "/fake_sys/bus/i2c")  # jtop (JTOP_TESTING) and ina3221 read the same rails
        cpu = Path("/fake_sys/devices/system/cpu")
        for n in range(4):
            write(cpu / f"cpu{n}/online", 1)
            for f, v in (("scaling_cur_freq", 1190400), ("scaling_max_freq", 1984000), ("scaling_min_freq", 115200),
                         ("cpuinfo_max_freq", 1984000), ("cpuinfo_min_freq", 115200), ("scaling_governor", "schedutil")):
                write(cpu / f"cpu{n}/cpufreq/{f}", v)
        shutil.copy("/proc/stat", "/fake_sys/stat")
        Path("/sys/devices/system/cpu").mkdir(parents=True, exist_ok=True)
        gpu, freq = self.GPU, self.GPU / "devfreq/17000000.gpu"
        for f, v in (("load", 0), ("railgate_enable", 1), ("tpc_pg_mask", 0), ("enable_3d_scaling", 1),
                     ("of_node/name", "gpu")):
            write(gpu / f, v)
        for f, v in (("cur_freq", 306000000), ("max_freq", 918000000), ("min_freq", 306000000),
                     ("governor", "nvhost_podgov")):
            write(freq / f, v)
        os.symlink("../..", freq / "device")
        Path("/fake_sys/class/devfreq").mkdir(parents=True)
        os.symlink(freq, "/fake_sys/class/devfreq/17000000.gpu")
        emc = Path("/fake_sys/kernel/debug/bpmp/debug/clk/emc")
        for f, v in (("rate", 2133000000), ("max_rate", 3199000000), ("min_rate", 204000000)):
            write(emc / f, v)
        self.set_emc_activity(0)
        for n, (kind, mdeg) in enumerate((("CPU-therm", 45500), ("GPU-therm", 44000))):
            write(f"/sys/devices/virtual/thermal/thermal_zone{n}/type", kind)
            write(f"/sys/devices/virtual/thermal/thermal_zone{n}/temp", mdeg)
        dmi = Path("/sys/devices/virtual/dmi/id")
        for f, v in (("board_name", "edgebench sandbox"), ("product_name", "emulated Jetson"), ("sys_vendor", "none")):
            write(dmi / f, v)
        for path, text in (("/usr/local/bin/nvpmodel", NVPMODEL_SH), ("/usr/bin/jetson_clocks", JETSON_CLOCKS_SH)):
            Path(path).write_text(text)
            os.chmod(path, 0o755)
        subprocess.run(["groupadd", "-f", "jtop"], check=True)

    # -------------------------------------------------------------- knobs

    def rail_dir(self, label: str) -> tuple[Path, int]:
        for lab in Path("/sys/bus/i2c/devices").glob("*/hwmon/hwmon*/in*_label"):
            if lab.read_text().strip() == label:
                return lab.parent, int(lab.name[2:].split("_")[0])
        raise KeyError(label)

    def set_rail(self, label: str, mv: int | None = None, ma: int | None = None) -> None:
        d, k = self.rail_dir(label)
        if mv is not None:
            write(d / f"in{k}_input", mv)
        if ma is not None:
            write(d / f"curr{k}_input", ma)

    def add_power_supply(self, name: str, microvolt: int, microamp: int, kind: str = "USB") -> None:
        """A /sys/class/power_supply sensor (e.g. a USB-C input) as jetson-stats 4.2+ finds and lists among its
        rails; call before start_service (the service looks for sensors once). Units as the kernel's: uV, uA."""
        d = Path("/sys/class/power_supply") / name
        for f, v in (("type", kind), ("online", 1), ("voltage_now", microvolt), ("current_now", microamp)):
            write(d / f, v)
        if not Path("/fake_sys/class/power_supply").exists():
            Path("/fake_sys/class").mkdir(parents=True, exist_ok=True)
            os.symlink("/sys/class/power_supply", "/fake_sys/class/power_supply")  # JTOP_TESTING reads /fake_sys

    def set_gpu(self, load_pct: float, jetson_clocks: bool = False) -> None:
        write(self.GPU / "load", int(load_pct * 10))  # sysfs load is in per mille
        freq = self.GPU / "devfreq/17000000.gpu"
        write(freq / "min_freq", 918000000 if jetson_clocks else 306000000)  # jtop: min == max -> clocks pinned

    def set_emc_activity(self, value: int) -> None:
        write("/fake_sys/kernel/actmon_avg_activity/mc_all", value)

    def set_temp(self, zone: int, celsius: float) -> None:
        write(f"/sys/devices/virtual/thermal/thermal_zone{zone}/temp", int(celsius * 1000))

    # -------------------------------------------------------------- the real service

    def start_service(self, fake_version: str | None = None, timeout_s: float = 20.0) -> subprocess.Popen:
        """Start jtop.service's server (own session, so it can be killed as a group); wait for its socket."""
        code = ("import sys\nfrom jtop.service import JtopServer\ns = JtopServer(force=True)\n"
                + (f"s._version = {fake_version!r}\n" if fake_version else "")
                + "s.loop_for_ever()\n")
        env = {**os.environ, "JTOP_TESTING": "true", "JTOP_SERVICE": "True"}
        log = open(f"/tmp/jtop-service-{time.monotonic_ns()}.log", "w")  # noqa: SIM115 - lives with the process
        self.service = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.service_log = log.name
        deadline = time.monotonic() + timeout_s
        while not os.path.exists("/run/jtop.sock"):
            if self.service.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"jtop service did not start: {Path(log.name).read_text()[-2000:]}")
            time.sleep(0.05)
        return self.service

    def kill_service(self) -> None:
        """SIGKILL the service and its manager process (a crash, not a clean stop)."""
        if self.service is None:
            return
        try:
            os.killpg(self.service.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.service.wait(10)
        self.service = None
        if os.path.exists("/run/jtop.sock"):
            os.unlink("/run/jtop.sock")
