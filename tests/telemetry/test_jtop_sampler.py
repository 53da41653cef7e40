"""JtopSampler against the REAL jtop service (jetson-stats) on an emulated Jetson, in a sandbox.

One sandbox per module (tests/jetson_sandbox.py): this file runs itself inside it (`inside_main`),
drives the real service through the scenarios below, prints the timelines as JSON, and the tests here
assert on them with edgebench's own row code. The emulated board is tests/fixtures/sysfs/orin_nx
(VDD_IN = the module input, VDD_CPU_GPU_CV, VDD_SOC), so power_total_mw must equal VDD_IN's mV*mA.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from edgebench.telemetry.base import Channel, Timeline

RESULT = "EDGEBENCH-JTOP-RESULT "
INTERVAL_S = 0.5  # the service rate used throughout (the jtop maintainer's advised minimum)
PHASE_S = 2.0  # seconds before and after the mid-run change

# Rails written inside the sandbox: (label, mV, mA) before and after the change at t_change.
BEFORE = {"VDD_IN": (5000, 1000), "VDD_CPU_GPU_CV": (5064, 312), "VDD_SOC": (5064, 280)}
AFTER = {"VDD_IN": (5000, 3000), "VDD_CPU_GPU_CV": (5064, 1500), "VDD_SOC": (5064, 280)}
USB_C, USB_C_UV_UA = "usb-c-input", (20_000_000, 1_500_000)  # a /sys/class/power_supply sensor: 20 V, 1.5 A


# ---------------------------------------------------------------------------------------------- inside


def _dump(tl: Timeline) -> dict[str, Any]:
    return {"source": tl.source, "interval_s": tl.interval_s, "notes": tl.notes, "t_ns": tl.t_ns,
            "channels": {n: [c.unit, c.kind] for n, c in tl.channels.items()},
            "values": {n: [None if math.isnan(v) else v for v in vs] for n, vs in tl.values.items()}}


def inside_main() -> None:
    """Runs inside the sandbox (as root, in the chroot): every scenario against the real service."""
    from jetson_sandbox import REPO, FakeJetson, open_way_for_others

    from edgebench.telemetry.ina3221 import Ina3221Sampler
    from edgebench.telemetry.jtop import JtopSampler, jtop_status
    from edgebench.telemetry.registry import sampler_availability

    out: dict[str, Any] = {}
    # 1. no service yet
    s = JtopSampler(INTERVAL_S)
    s.start()
    out["not_active"] = {"timeline": _dump(s.stop()), "status": jtop_status(),
                         "availability": sampler_availability("/")["jtop"]}

    fj = FakeJetson("orin_nx")
    fj.install()
    for label, (mv, ma) in BEFORE.items():
        fj.set_rail(label, mv, ma)
    fj.set_gpu(load_pct=10.0)
    fj.add_power_supply(USB_C, *USB_C_UV_UA)  # jtop lists it among its rails; it is no power monitor
    fj.start_service()
    out["availability_running"] = sampler_availability("/")["jtop"]

    # 2. a user outside group jtop
    # let `nobody` reach the interpreter, its site-packages and the checkout (overlay only: the checkout may sit
    # in a folder only its owner may enter)
    closed = open_way_for_others([sys.executable, sys.prefix, sys.base_prefix, REPO])
    if closed:
        out["permission"] = {"unreachable": closed}
    else:
        code = ("import json; from edgebench.telemetry.jtop import JtopSampler; s = JtopSampler(0.5); s.start(); "
                "print(json.dumps(s.stop().notes))")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                              user=65534, group=65534, extra_groups=[])
        out["permission"] = {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr[-2000:]}

    # 3. power, energy, interval, modes; ina3221 on the same rails alongside
    main, slow, ina = JtopSampler(INTERVAL_S), JtopSampler(1.0), Ina3221Sampler(0.05, sysfs_root="/")
    main.start()
    slow.start()  # asks 1.0 s while `main` holds the service at 0.5 s
    ina.start()
    t0 = time.monotonic_ns()
    time.sleep(PHASE_S)
    for label, (mv, ma) in AFTER.items():
        fj.set_rail(label, mv, ma)
    fj.set_gpu(load_pct=60.0, jetson_clocks=True)
    fj.set_temp(0, 71.5)
    with open("/tmp/edgebench_nvpmodel", "w") as fh:
        fh.write("0\n")  # MAXN
    t_change = time.monotonic_ns()
    time.sleep(PHASE_S)
    t1 = time.monotonic_ns()
    out["main"] = {"t0": t0, "t_change": t_change, "t1": t1, "device_info": main.device_info,
                   "jtop": _dump(main.stop()), "slow": _dump(slow.stop()), "ina3221": _dump(ina.stop())}

    # 4. a service of another jetson-stats version
    fj.kill_service()
    fj.start_service(fake_version="6.0.0")
    s = JtopSampler(INTERVAL_S)
    s.start()
    out["mismatch"] = _dump(s.stop())
    fj.kill_service()

    # 5. the service dies mid-window
    fj.start_service()
    s = JtopSampler(INTERVAL_S)
    s.start()
    t0 = time.monotonic_ns()
    time.sleep(1.6)
    t_kill = time.monotonic_ns()
    fj.kill_service()
    time.sleep(1.5)
    t1 = time.monotonic_ns()
    out["killed"] = {"t0": t0, "t_kill": t_kill, "t1": t1, "timeline": _dump(s.stop())}
    print(RESULT + json.dumps(out), flush=True)


# ---------------------------------------------------------------------------------------------- host


def _load(d: dict[str, Any]) -> Timeline:
    tl = Timeline(d["source"], notes=list(d["notes"]), interval_s=d["interval_s"])
    tl.channels = {n: Channel(n, u, k) for n, (u, k) in d["channels"].items()}
    tl.t_ns = list(d["t_ns"])
    tl.values = {n: [math.nan if v is None else v for v in vs] for n, vs in d["values"].items()}
    return tl


@pytest.fixture(scope="module")
def sandbox() -> dict[str, Any]:
    from jetson_sandbox import driver_result

    return driver_result(__file__, RESULT, timeout_s=150)


def test_service_not_active_is_a_stated_fault_with_the_fix(sandbox):
    tl = _load(sandbox["not_active"]["timeline"])
    assert tl.t_ns == [] and tl.interval_s is None
    fault = [n for n in tl.notes if n.startswith("telemetry: ")]
    assert len(fault) == 1 and "jtop service is not active" in fault[0]
    assert "systemctl restart jtop.service" in fault[0]
    assert "does not exist" in sandbox["not_active"]["status"]
    assert sandbox["not_active"]["availability"] == sandbox["not_active"]["status"]
    assert sandbox["availability_running"] is None  # with the service up the registry says it can run


def test_user_outside_group_jtop_gets_permission_denied_with_the_fix(sandbox):
    perm = sandbox["permission"]
    if "unreachable" in perm:
        pytest.skip(perm["unreachable"])
    assert perm["rc"] == 0, perm["stderr"]
    notes = json.loads(perm["stdout"])
    fault = [n for n in notes if n.startswith("telemetry: ")]
    assert len(fault) == 1 and "permission denied" in fault[0] and "usermod -aG jtop" in fault[0]


def test_power_total_is_what_the_written_rails_imply(sandbox):
    m = sandbox["main"]
    tl = _load(m["jtop"])
    assert tl.interval_s == INTERVAL_S
    # a tick's reads may land up to one interval from its stamp on a busy machine (below), on either side
    before = [i for i, t in enumerate(tl.t_ns) if t < m["t_change"] - INTERVAL_S * 1e9 - 0.05e9]
    after = [i for i, t in enumerate(tl.t_ns) if t > m["t_change"] + INTERVAL_S * 1e9 + 0.05e9]
    assert len(before) >= 3 and len(after) >= 2
    vin0, vin1 = (BEFORE["VDD_IN"][0] * BEFORE["VDD_IN"][1] / 1000, AFTER["VDD_IN"][0] * AFTER["VDD_IN"][1] / 1000)
    assert {tl.values["power_total_mw"][i] for i in before} == {vin0}  # Orin NX: total = VDD_IN, not a sum
    assert {tl.values["power_total_mw"][i] for i in after} == {vin1}
    cv1 = AFTER["VDD_CPU_GPU_CV"][0] * AFTER["VDD_CPU_GPU_CV"][1] / 1000
    assert tl.values["power_cpu_gpu_cv_mw"][after[-1]] == pytest.approx(cv1, abs=1.0)  # jtop truncates to int
    assert tl.values["rail_VDD_IN_mw"][after[-1]] == vin1 == tl.values["power_jtop_tot_mw"][after[-1]]
    assert any("power_total_mw = VDD_IN (the measured module/board input)" in n for n in tl.notes)
    # the real service lists the power_supply sensor as a rail: kept as a channel, named in a note, not in totals
    usb = [v for v in tl.values.get("rail_usb_c_input_mw", []) if not math.isnan(v)]
    assert usb and set(usb) == {30000.0}, usb  # jtop: uV * uA -> mW
    assert any(n.startswith(f"jtop also lists {USB_C} from /sys/class/power_supply") for n in tl.notes), tl.notes
    # samples are ~one interval apart: each service tick recorded once (never two within 0.3 s); a loaded CI
    # machine may delay a tick, so the upper bound allows about two missed intervals
    gaps = [(b - a) / 1e9 for a, b in zip(tl.t_ns, tl.t_ns[1:])]
    assert all(0.3 < g < 1.6 for g in gaps) and sorted(gaps)[len(gaps) // 2] < 0.75, gaps


def test_energy_integrates_power_across_the_change(sandbox):
    from edgebench.telemetry.registry import power_summary

    m = sandbox["main"]
    tl = _load(m["jtop"])
    t0, tc, t1 = m["t0"], m["t_change"], m["t1"]
    assert tl.t_ns[0] <= t0 and tl.t_ns[-1] >= t1  # stop() waited for the tick that closes the window
    fields = power_summary(tl, t0, t1)
    assert fields["energy_source"] == "integrated"
    p0, p1 = 5000.0, 15000.0  # mW, VDD_IN before / after
    exact_mj = p0 * (tc - t0) / 1e9 + p1 * (t1 - tc) / 1e9
    # A tick is stamped with the service's uptime when it computed its stats; its file reads may land up to
    # one interval away from that stamp on a busy machine (seen on 2 loaded cores: +3.5 J), so the step can
    # be misplaced by one interval: error <= step * interval (+ 2 % stamping jitter)
    tolerance_mj = (p1 - p0) * INTERVAL_S + 0.02 * exact_mj
    assert abs(fields["energy_j"] * 1e3 - exact_mj) <= tolerance_mj, (fields["energy_j"], exact_mj)
    assert fields["power_w_max"] == pytest.approx(15.0)
    # jtop's `avg` is never used: a time average of the two plateaus sits between them
    assert 5.0 < fields["power_w_mean"] < 15.0


def test_interval_actually_used_is_recorded_with_a_note(sandbox):
    slow = _load(sandbox["main"]["slow"])
    assert slow.interval_s == INTERVAL_S  # asked 1.0 s, the service runs at 0.5 s for the first client
    assert any("runs at 0.5 s, not the 1 s asked for" in n for n in slow.notes)
    gaps = [(b - a) / 1e9 for a, b in zip(slow.t_ns, slow.t_ns[1:])]
    # every 0.5 s tick recorded (a sampler at the 1 s asked for would have a median gap of 1 s); a loaded CI
    # machine may delay one tick, not the run of them
    assert gaps and sorted(gaps)[len(gaps) // 2] < 0.75 and max(gaps) < 1.6 and len(slow.t_ns) >= 6
    assert len(set(slow.t_ns)) == len(slow.t_ns)


def test_gpu_emc_temperature_nvpmodel_and_jetson_clocks_are_recorded(sandbox):
    m = sandbox["main"]
    tl = _load(m["jtop"])
    first, last = 0, len(tl.t_ns) - 1
    assert tl.values["gpu_util_pct"][first] == 10.0 and tl.values["gpu_util_pct"][last] == 60.0
    assert tl.values["gpu_freq_mhz"][first] == 306.0
    assert tl.values["emc_freq_mhz"][first] == 2133.0
    assert tl.values["temp_cpu_c"][first] == 45.5 and tl.values["temp_cpu_c"][last] == 71.5
    assert tl.values["temp_gpu_c"][last] == 44.0
    assert tl.values["nvpmodel_id"][first] == 2 and tl.values["nvpmodel_id"][last] == 0
    assert tl.values["jetson_clocks_on"][first] == 0 and tl.values["jetson_clocks_on"][last] == 1
    assert m["device_info"]["nvpmodel"] == "15W (id 2)" and m["device_info"]["jetson_clocks"] == "off"
    assert any("nvpmodel changed from 15W (id 2) to MAXN (id 0)" in n for n in tl.notes)
    assert any("jetson_clocks turned on" in n for n in tl.notes)


def test_ina3221_and_jtop_agree_on_the_same_rails(sandbox):
    from edgebench.telemetry.registry import power_summary

    m = sandbox["main"]
    jt, ina = _load(m["jtop"]), _load(m["ina3221"])
    assert ina.interval_s == 0.05 and len(ina.t_ns) > 5 * len(jt.t_ns)
    # per sample, away from the change: the same files give the same power (jtop truncates each rail
    # to an int mW: <= 1 mW per rail)
    compared = 0
    for i, t in enumerate(jt.t_ns):
        if abs(t - m["t_change"]) < (INTERVAL_S + 0.1) * 1e9:
            continue
        j = min(range(len(ina.t_ns)), key=lambda k: abs(ina.t_ns[k] - t))
        for ch in ("power_total_mw", "rail_VDD_CPU_GPU_CV_mw", "rail_VDD_SOC_mw"):
            assert abs(jt.values[ch][i] - ina.values[ch][j]) <= 1.0, (ch, jt.values[ch][i], ina.values[ch][j])
        compared += 1
    assert compared >= 5
    # over the window: within what jtop's coarser grid and tick stamping can misplace of the step
    # (10 W x one 0.5 s interval, see test_energy_integrates_power_across_the_change) + 2 %
    e_jtop = power_summary(jt, m["t0"], m["t1"])["energy_j"]
    e_ina = power_summary(ina, m["t0"], m["t1"])["energy_j"]
    assert abs(e_jtop - e_ina) <= 10.0 * INTERVAL_S + 0.02 * e_ina, (e_jtop, e_ina)


def test_version_mismatch_is_a_stated_fault_with_the_fix(sandbox):
    tl = _load(sandbox["mismatch"])
    fault = [n for n in tl.notes if n.startswith("telemetry: ")]
    assert tl.t_ns == [] and len(fault) == 1
    assert "version mismatch" in fault[0] and "6.0.0" in fault[0] and "pip3 install -U jetson-stats" in fault[0]


def test_service_killed_mid_window_keeps_samples_and_invalidates_the_row(sandbox):
    from edgebench.telemetry.registry import power_summary
    from edgebench.telemetry.row_fields import telemetry_faults

    k = sandbox["killed"]
    tl = _load(k["timeline"])
    assert len(tl.t_ns) >= 3  # what it had before the kill is returned
    assert tl.t_ns[-1] <= k["t_kill"] + 0.1e9  # and nothing after it
    faults = telemetry_faults([tl])
    assert len(faults) == 1 and "lost connection" in faults[0] and "journalctl -u jtop" in faults[0]
    fields = power_summary(tl, k["t0"], k["t1"])
    assert fields["energy_j"] is None and fields["energy_source"].startswith("none: jtop timeline does not span")


def _jtop_42_power(rails_mw: dict[str, int], supplies_mw: dict[str, int], tot_name: str | None) -> dict[str, Any]:
    """client.power as jetson-stats 4.2.x builds it (jtop/core/power.py): INA3221 rails carry volt/curr/warn/crit,
    /sys/class/power_supply sensors volt/curr/online(/status); `tot` is POM_5V_IN or VDD_IN taken out of the
    rails, else the sum of ALL rails (supplies included), without a name."""
    rail = {n: {"volt": 5000, "curr": p // 5, "warn": 32760, "crit": 32760, "power": p, "online": True, "avg": p}
            for n, p in rails_mw.items()}
    rail.update({n: {"volt": 20000, "curr": p // 20, "online": True, "status": "Charging", "power": p, "avg": p}
                 for n, p in supplies_mw.items()})
    if tot_name:
        tot = {**rail.pop(tot_name), "name": tot_name}
    else:
        tot = {"power": sum(r["power"] for r in rail.values()), "avg": sum(r["avg"] for r in rail.values())}
    return {"rail": rail, "tot": tot}


@pytest.mark.parametrize("rails, tot_name, total, jtop_tot", [
    # an unknown rail set without an input rail: the sum of the monitor rails, not of the USB-C supply too
    ({"VDD_A": 4000, "VDD_B": 3000}, None, 7000.0, 37000.0),
    # AGX Orin: a sum of its rails (board map), jtop's own tot includes the supply
    ({"VDD_GPU_SOC": 6000, "VDD_CPU_CV": 2000, "VIN_SYS_5V0": 3000, "VDDQ_VDD2_1V8AO": 500}, None, 11500.0, 41500.0),
    # Orin NX: VDD_IN is the total for both
    ({"VDD_IN": 9000, "VDD_CPU_GPU_CV": 3000, "VDD_SOC": 2000}, "VDD_IN", 9000.0, 9000.0),
])
def test_power_supply_sensors_never_enter_the_total(tmp_path: Path, rails: dict, tot_name: str | None, total: float,
                                                    jtop_tot: float) -> None:
    from edgebench.telemetry.jetson_rails import power_supply_rails
    from edgebench.telemetry.jtop import JtopSampler

    (tmp_path / "sys/class/power_supply/ucsi-source-psy-USBC000:001").mkdir(parents=True)
    supplies = power_supply_rails(tmp_path)
    assert "USBC000:001" in supplies  # jetson-stats 4.2-7.2.0 strip the UCSI prefix from the rail name
    s = JtopSampler(0.5, sysfs_root=tmp_path)
    s._timeline, s._supplies = Timeline("jtop"), supplies
    sample: dict[str, float] = {}
    s._power(_jtop_42_power(rails, {"USBC000:001": 30000}, tot_name), sample)
    assert sample["power_total_mw"] == total
    assert sample["power_jtop_tot_mw"] == jtop_tot
    assert sample["rail_USBC000_001_mw"] == 30000.0
    note = [n for n in s._timeline.notes if n.startswith("jtop also lists USBC000:001")]
    assert len(note) == 1 and ("a sum that includes it" in note[0]) == (tot_name is None)
    assert power_supply_rails(tmp_path / "nowhere") == frozenset()


def test_fault_prefix_matches_the_sweeps():
    from edgebench.telemetry.jtop import FAULT_PREFIX
    from edgebench.telemetry.row_fields import TELEMETRY_FAULT_PREFIX

    assert FAULT_PREFIX == TELEMETRY_FAULT_PREFIX


@pytest.mark.parametrize("message, cause", [
    # the texts jetson-stats' jtop.start() raises (jtop/jtop.py), for the causes the sandbox cannot stage
    ("Mismatch of Python versions between library and service", "different Python versions"),
    ("Authentication with jetson-stats server failed", "could not authenticate"),
    ("Mismatch version jtop service: [6.0.0] and client: [7.2.2]. Please run:\n\nsudo jtop --install-service",
     "version mismatch"),
])
def test_every_jtop_start_error_gets_its_cause_and_a_fix(message: str, cause: str) -> None:
    from edgebench.telemetry.jtop import INSTALL_HINT, explain_jtop_error

    text = explain_jtop_error(Exception(message))
    assert cause in text and not text.startswith("jtop failed:")
    assert "pip3 install -U jetson-stats" in text or INSTALL_HINT in text


if __name__ == "__main__" and "--inside" in sys.argv:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: jetson_sandbox
    inside_main()
