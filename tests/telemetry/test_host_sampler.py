"""HostSampler against fixture powercap trees (passed in as sysfs_root) and real psutil channels,
plus power_summary on hand-built timelines and the sampler registry."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import repo_paths

from edgebench.errors import ConfigError
from edgebench.telemetry.base import Channel, Timeline
from edgebench.telemetry.host import HostSampler, rapl_status
from edgebench.telemetry.registry import make_sampler, power_summary, sampler_availability

FIXTURES = repo_paths.FIXTURES / "powercap"
PARKED_S = 3600.0  # an interval so long that only start() and stop() sample: fully deterministic


def _tree(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    return root


def _zone(root: Path, zone: str) -> Path:
    return root / "sys" / "class" / "powercap" / zone


def _write(path: Path, value: int) -> None:
    """Replace the file atomically, as the kernel never shows a half-written counter."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{value}\n")
    os.replace(tmp, path)


def _power_names(tl: Timeline) -> list[str]:
    return [n for n in tl.channels if "power" in n or "energy" in n]


# ---------------------------------------------------------------- RAPL from fixture trees


def test_wrap_around_gives_exact_energy_and_power(tmp_path):
    root = _tree(tmp_path, "xeon_2socket")
    z0, z1 = _zone(root, "intel-rapl:0"), _zone(root, "intel-rapl:1")
    max0 = int((z0 / "max_energy_range_uj").read_text())
    _write(z0 / "energy_uj", max0 - 1_000)  # 1 mJ before the wrap
    _write(z1 / "energy_uj", 5_000_000)
    s = HostSampler(PARKED_S, sysfs_root=root)
    s.start()
    _write(z0 / "energy_uj", 500)  # wrapped: +1000 + 500 uJ
    _write(z1 / "energy_uj", 7_500_000)  # +2.5 J
    tl = s.stop()

    assert len(tl.t_ns) == 2
    assert tl.channels["rapl_package0_energy_mj"] == Channel("rapl_package0_energy_mj", "mJ", "counter")
    assert tl.values["rapl_package0_energy_mj"] == [0.0, 1.5]
    assert tl.values["rapl_package1_energy_mj"] == [0.0, 2500.0]
    assert tl.values["energy_total_mj"] == [0.0, 2501.5]
    dt_ns = tl.t_ns[1] - tl.t_ns[0]
    assert math.isnan(tl.values["power_total_mw"][0])  # no interval before the first sample
    assert tl.values["rapl_package0_power_mw"][1] == pytest.approx(1500 / dt_ns * 1e6)
    assert tl.values["power_total_mw"][1] == pytest.approx(2_501_500 / dt_ns * 1e6)
    # DRAM subzones (intel-rapl:N:0) are not package zones
    assert not any("dram" in n for n in tl.channels)
    assert tl.interval_s == PARKED_S


def test_live_power_matches_the_rate_written_to_energy_uj(tmp_path):
    """A writer thread advances energy_uj at 2 W (package-0, wrapping every 2.5 s) and 3 W
    (package-1) on the monotonic clock while the sampler runs at 50 ms."""
    root = _tree(tmp_path, "xeon_2socket")
    z0, z1 = _zone(root, "intel-rapl:0"), _zone(root, "intel-rapl:1")
    max0 = 5_000_000  # 5 J range: the counter wraps during the test
    _write(z0 / "max_energy_range_uj", max0)
    start0, start1 = 4_000_000, 1_000_000
    _write(z0 / "energy_uj", start0)
    _write(z1 / "energy_uj", start1)
    rate0_uw, rate1_uw = 2_000_000, 3_000_000  # uJ per second
    written = {"e0": 0, "e1": 0}
    done = threading.Event()

    def writer() -> None:
        t0 = time.monotonic_ns()
        while not done.is_set():
            el_s = (time.monotonic_ns() - t0) / 1e9
            written["e0"], written["e1"] = int(rate0_uw * el_s), int(rate1_uw * el_s)
            _write(z0 / "energy_uj", (start0 + written["e0"]) % max0)
            _write(z1 / "energy_uj", start1 + written["e1"])
            time.sleep(0.005)

    s = HostSampler(0.05, sysfs_root=root)
    s.start()
    w = threading.Thread(target=writer)
    w.start()
    time.sleep(1.6)
    done.set()
    w.join()
    tl = s.stop()

    # Energy is exact: the first sample read the start values, the last one the final values.
    assert written["e0"] > max0 - start0  # the counter really wrapped
    assert tl.values["rapl_package0_energy_mj"][-1] == pytest.approx(written["e0"] / 1e3)
    assert tl.values["rapl_package1_energy_mj"][-1] == pytest.approx(written["e1"] / 1e3)
    assert tl.values["energy_total_mj"][-1] == pytest.approx((written["e0"] + written["e1"]) / 1e3)
    # The power gauge uses each sample's real interval: sum(P_i * dt_i) gives the energy back.
    dts = [(b - a) / 1e9 for a, b in zip(tl.t_ns, tl.t_ns[1:], strict=False)]
    energy_from_gauge_mj = sum(p * dt for p, dt in zip(tl.values["power_total_mw"][1:], dts, strict=True))
    assert energy_from_gauge_mj == pytest.approx(tl.values["energy_total_mj"][-1], rel=1e-9)
    # Mean power over an inner window matches the written 5 W (writer lag is the only error).
    a, b = tl.t_ns[0] + 200_000_000, tl.t_ns[0] + 1_400_000_000
    summary = power_summary(tl, a, b)
    assert summary["energy_source"] == "counter:rapl"
    assert summary["power_w_mean"] == pytest.approx(5.0, rel=0.15)
    assert summary["energy_j"] == pytest.approx(5.0 * 1.2, rel=0.15)


def test_psys_and_mmio_are_kept_out_of_the_package_total(tmp_path):
    root = _tree(tmp_path, "laptop_psys")
    pkg, psys = _zone(root, "intel-rapl:0"), _zone(root, "intel-rapl:1")
    e_pkg, e_psys = int((pkg / "energy_uj").read_text()), int((psys / "energy_uj").read_text())
    s = HostSampler(PARKED_S, sysfs_root=root)
    s.start()
    _write(pkg / "energy_uj", e_pkg + 1_000_000)
    _write(psys / "energy_uj", e_psys + 4_000_000)
    _write(_zone(root, "intel-rapl-mmio:0") / "energy_uj", e_pkg + 9_000_000)
    tl = s.stop()
    assert tl.values["rapl_package0_energy_mj"][-1] == 1000.0
    assert tl.values["rapl_psys_energy_mj"][-1] == 4000.0
    assert tl.values["energy_total_mj"][-1] == 1000.0  # package only
    assert any("psys" in n and "out of the total" in n for n in tl.notes)
    assert not any("mmio" in n for n in tl.channels)


def test_energy_uj_that_is_a_directory_is_a_stated_absence(tmp_path):
    """Tests run as root here, so chmod 000 would not stop a read. A directory where the
    energy_uj file should be makes open() fail for real (IsADirectoryError)."""
    root = _tree(tmp_path, "xeon_2socket")
    for zone in ("intel-rapl:0", "intel-rapl:1"):
        (_zone(root, zone) / "energy_uj").unlink()
        (_zone(root, zone) / "energy_uj").mkdir()
    s = HostSampler(PARKED_S, sysfs_root=root)
    s.start()
    tl = s.stop()
    path = _zone(root, "intel-rapl:0") / "energy_uj"
    assert f"RAPL not readable: {path}: Is a directory" in tl.notes
    assert _power_names(tl) == []
    summary = power_summary(tl, tl.t_ns[0], tl.t_ns[-1])
    assert summary["energy_j"] is None and summary["power_w_mean"] is None
    assert summary["energy_source"].startswith(f"none: RAPL not readable: {path}")
    assert rapl_status(root) is not None and "Is a directory" in rapl_status(root)


def test_garbage_energy_uj_is_a_stated_absence(tmp_path):
    root = _tree(tmp_path, "laptop_psys")
    (_zone(root, "intel-rapl:0") / "energy_uj").write_text("n/a\n")
    (_zone(root, "intel-rapl:1") / "energy_uj").write_text("")
    s = HostSampler(PARKED_S, sysfs_root=root)
    s.start()
    tl = s.stop()
    assert any(n.startswith("RAPL not readable:") and "intel-rapl:0/energy_uj: not an integer: 'n/a'" in n
               for n in tl.notes)
    assert _power_names(tl) == []


def test_one_unreadable_package_means_no_total(tmp_path):
    root = _tree(tmp_path, "xeon_2socket")
    (_zone(root, "intel-rapl:1") / "energy_uj").write_text("garbage")
    s = HostSampler(PARKED_S, sysfs_root=root)
    s.start()
    tl = s.stop()
    assert "rapl_package0_energy_mj" in tl.channels  # the readable package is still reported
    assert "power_total_mw" not in tl.channels and "energy_total_mj" not in tl.channels
    assert any("some RAPL package zone is unreadable" in n for n in tl.notes)


def test_powercap_that_cannot_be_listed_is_a_stated_absence(tmp_path):
    base = tmp_path / "sys" / "class" / "powercap"
    base.parent.mkdir(parents=True)
    base.write_text("not a directory")  # listing it fails for real, even as root
    s = HostSampler(PARKED_S, sysfs_root=tmp_path)
    s.start()
    tl = s.stop()
    assert f"RAPL not readable: {base}: Not a directory" in tl.notes
    assert _power_names(tl) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file; the directory test covers the path")
def test_permission_denied_energy_uj(tmp_path):
    root = _tree(tmp_path, "xeon_2socket")
    for zone in ("intel-rapl:0", "intel-rapl:1"):
        os.chmod(_zone(root, zone) / "energy_uj", 0)
    s = HostSampler(PARKED_S, sysfs_root=root)
    s.start()
    tl = s.stop()
    assert f"RAPL not readable: {_zone(root, 'intel-rapl:0') / 'energy_uj'}: Permission denied" in tl.notes
    assert _power_names(tl) == []


def test_absent_powercap_is_noted_and_gives_no_power_channels(tmp_path):
    s = HostSampler(PARKED_S, sysfs_root=tmp_path)
    s.start()
    tl = s.stop()
    assert _power_names(tl) == []
    assert any(n.startswith("RAPL not available:") and str(tmp_path) in n for n in tl.notes)
    assert power_summary(tl, tl.t_ns[0], tl.t_ns[-1])["energy_source"].startswith("none: RAPL not available")
    assert rapl_status(tmp_path) is not None
    assert rapl_status(_tree(tmp_path, "xeon_2socket")) is None


# ---------------------------------------------------------------- real psutil channels

_ALLOC_CHILD = """
import sys, time
block = b"x" * (50 * 1024 * 1024)  # filled, so every page is resident
print("ready", flush=True)
sys.stdin.readline()
"""

_PARENT_OF_ALLOCATOR = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", {alloc!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
child.stdout.readline()
print("ready", flush=True)
sys.stdin.readline()
child.kill(); child.wait()
print("killed", flush=True)
sys.stdin.readline()
"""

_CPU_BURNER = """
import sys, time
sys.stdin.readline()
t = time.process_time()
while time.process_time() - t < 0.4:
    pass
print("done", flush=True)
sys.stdin.readline()
"""


def _spawn(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    proc.wait(timeout=30)


def test_real_channels_of_this_machine_and_a_watched_child(tmp_path):
    child = _spawn(_ALLOC_CHILD)
    try:
        assert child.stdout.readline().strip() == "ready"
        s = HostSampler(0.05, sysfs_root=tmp_path)
        s.watch_pids([child.pid])
        before_ns = time.monotonic_ns()
        s.start()
        time.sleep(0.5)
        tl = s.stop()
        after_ns = time.monotonic_ns()
    finally:
        _finish(child)

    assert len(tl.t_ns) >= 3
    assert all(a < b for a, b in zip(tl.t_ns, tl.t_ns[1:], strict=False))
    assert before_ns <= s.start_ns <= tl.t_ns[0] and tl.t_ns[-1] <= s.stop_ns <= after_ns
    ncpu = psutil.cpu_count()
    assert [f"cpu{i}_util_pct" for i in range(ncpu)] == [n for n in tl.channels if n[3:4].isdigit()]
    util = [v for v in tl.values["cpu_util_pct"] if not math.isnan(v)]
    # every sample but the first has an interval behind it; the final one (taken by stop()) may
    # follow the thread's last sample by less than one kernel tick (10 ms), which leaves it empty
    assert len(util) >= len(tl.t_ns) - 2
    assert all(0.0 <= v <= 100.0 for v in util)
    total_mib = psutil.virtual_memory().total / 2**20
    assert all(0 < v < total_mib for v in tl.values["mem_used_mib"])
    summary = power_summary(tl, tl.t_ns[0], tl.t_ns[-1])
    assert summary["rss_mib_max"] >= 40.0
    assert 0.0 <= summary["cpu_util_pct_mean"] <= 100.0
    assert s.cpu_cost_us_per_sample is not None and s.cpu_cost_us_per_sample > 0
    assert any(n.startswith("host sampler cost:") for n in tl.notes)


def test_rss_includes_children_and_skips_vanished_ones(tmp_path):
    parent = _spawn(_PARENT_OF_ALLOCATOR.format(alloc=_ALLOC_CHILD))
    try:
        assert parent.stdout.readline().strip() == "ready"
        parent_only_mib = psutil.Process(parent.pid).memory_info().rss / 2**20
        s = HostSampler(0.05, sysfs_root=tmp_path)
        s.watch_pids([parent.pid])
        s.start()
        time.sleep(0.2)
        parent.stdin.write("kill\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == "killed"
        tl = s.stop()  # the final sample is taken after the grandchild is gone
    finally:
        _finish(parent)
    assert parent_only_mib < 40.0  # so >= 40 below can only come from the child
    assert tl.values["rss_mib"][0] >= 40.0 + parent_only_mib * 0.5
    assert tl.values["rss_mib"][-1] < 40.0
    assert not math.isnan(tl.values["rss_mib"][-1])


def test_proc_cpu_pct_integrates_to_the_cpu_time_the_child_burned(tmp_path):
    """The child burns 0.4 s of CPU time (not wall time), so this holds on a loaded box."""
    child = _spawn(_CPU_BURNER)
    try:
        s = HostSampler(0.05, sysfs_root=tmp_path)
        s.watch_pids([child.pid])
        s.start()
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"
        tl = s.stop()
    finally:
        _finish(child)
    assert math.isnan(tl.values["proc_cpu_pct"][0])
    dts = [(b - a) / 1e9 for a, b in zip(tl.t_ns, tl.t_ns[1:], strict=False)]
    cpu_s = sum(p / 100.0 * dt for p, dt in zip(tl.values["proc_cpu_pct"][1:], dts, strict=True))
    assert 0.38 <= cpu_s <= 0.6


def test_vanished_watched_pid_gives_empty_rss_not_zero(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    s = HostSampler(PARKED_S, sysfs_root=tmp_path)
    s.watch_pids([proc.pid])
    s.start()
    tl = s.stop()
    assert all(math.isnan(v) for v in tl.values["rss_mib"])


def test_stop_before_start_and_double_start_are_errors(tmp_path):
    s = HostSampler(PARKED_S, sysfs_root=tmp_path)
    with pytest.raises(RuntimeError):
        s.stop()
    s.start()
    with pytest.raises(RuntimeError):
        s.start()
    s.stop()
    with pytest.raises(RuntimeError):
        s.stop()


# ---------------------------------------------------------------- power_summary


def _timeline(source: str, t_s: list[float], **channels: tuple[Channel, list[float]]) -> Timeline:
    tl = Timeline(source, interval_s=1.0)
    for ch, _ in channels.values():
        tl.add_channel(ch)
    for i, t in enumerate(t_s):
        tl.append(int(t * 1e9), {ch.name: vals[i] for ch, vals in channels.values()})
    return tl


def test_power_summary_prefers_the_counter():
    tl = _timeline(
        "host", [0.0, 1.0, 2.0],
        e=(Channel("energy_total_mj", "mJ", "counter"), [0.0, 1000.0, 2000.0]),
        p=(Channel("power_total_mw", "mW"), [9000.0, 9000.0, 9000.0]),  # disagrees on purpose
    )
    out = power_summary(tl, int(0.5e9), int(1.5e9))
    assert out["energy_source"] == "counter:rapl"
    assert out["energy_j"] == pytest.approx(1.0)
    assert out["power_w_mean"] == pytest.approx(1.0)
    assert out["power_w_max"] == pytest.approx(9.0)


def test_power_summary_integrates_a_known_trapezoid():
    tl = _timeline(
        "ina3221", [0.0, 1.0, 2.0],
        p=(Channel("power_total_mw", "mW"), [1000.0, 3000.0, 3000.0]),
    )
    out = power_summary(tl, int(0.5e9), int(2.0e9))
    # 0.5..1 s: (2000 + 3000) / 2 * 0.5 = 1250 mJ; 1..2 s: 3000 mJ
    assert out["energy_source"] == "integrated"
    assert out["energy_j"] == pytest.approx(4.25)
    assert out["power_w_mean"] == pytest.approx(4.25 / 1.5)
    assert out["telemetry_samples"] == 2


def test_power_summary_keys_are_results_columns():
    """So a row can take the summary as is: ResultsStore.append rejects unknown keys."""
    from edgebench.results.schema import COLUMN_NAMES

    tl = _timeline("host", [0.0, 1.0], p=(Channel("power_total_mw", "mW"), [1.0, 1.0]))
    tl.notes += ["RAPL not readable: x: Permission denied", "host sampler cost: 300 us CPU per sample"]
    out = power_summary(tl, 0, int(1e9))
    assert set(out) <= set(COLUMN_NAMES)
    assert out["telemetry_notes"] == "RAPL not readable: x: Permission denied"


def test_power_summary_outside_the_timeline_is_none_with_reason():
    tl = _timeline("host", [0.0, 1.0], p=(Channel("power_total_mw", "mW"), [1000.0, 1000.0]))
    out = power_summary(tl, int(0.5e9), int(3e9))
    assert out["energy_j"] is None and out["power_w_mean"] is None
    assert out["energy_source"].startswith("none: host timeline does not span the window")


# ---------------------------------------------------------------- registry


def test_registry_makes_host_and_rejects_unknown_names(tmp_path):
    s = make_sampler("host", 0.25, sysfs_root=tmp_path)
    assert isinstance(s, HostSampler) and s.interval_s == 0.25 and s.sysfs_root == tmp_path
    with pytest.raises(ConfigError, match=r"unknown sampler 'nvml2' \(known: host, ina3221, jetson_throttle, jtop, nvml, tegrastats\)"):
        make_sampler("nvml2", 0.1)
    availability = sampler_availability()
    assert availability["host"] is None  # psutil is installed here
    assert set(availability) == {"host", "nvml", "jtop", "ina3221", "tegrastats", "jetson_throttle"}
    if not Path("/proc/driver/nvidia").exists():  # no NVIDIA driver: NVML's absence is stated, not hidden
        assert availability["nvml"] and "NVML" in availability["nvml"]
