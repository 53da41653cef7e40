"""tegrastats: parser against real captured lines (tests/fixtures/tegrastats, sources in SOURCES.md),
sampler against a real subprocess that prints those lines."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest
import repo_paths

from edgebench.errors import ConfigError
from edgebench.telemetry.registry import make_sampler, power_summary, sampler_availability
from edgebench.telemetry.tegrastats import TegrastatsSampler, parse_line, tegrastats_status

FIXTURES = repo_paths.FIXTURES / "tegrastats"


def lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


# ----------------------------------------------------------------------------- parser, per board


def test_nano_jp461_old_rail_form_input_rail_is_the_total():
    s = parse_line(lines("nano_jp461.txt")[0])
    assert s.unknown == []
    assert s.rails["POM_5V_IN"].current_mw == 1750 and s.rails["POM_5V_IN"].average_mw == 1628
    assert s.rails["POM_5V_CPU"].current_mw == 366 and s.rails["POM_5V_CPU"].average_mw == 406
    total, how = s.power_total()
    assert total == 1750  # POM_5V_IN alone, not 1750 + 0 + 366
    assert "POM_5V_IN" in how
    assert (s.ram_used_mib, s.ram_total_mib) == (1923, 3964)
    assert (s.swap_used_mib, s.swap_total_mib, s.swap_cached_mib) == (191, 1982, 6)
    assert (s.iram_used_kib, s.iram_total_kib) == (0, 252)
    assert [c.freq_mhz for c in s.cpus] == [1224] * 4
    assert [c.load_pct for c in s.cpus] == [5, 4, 3, 6]
    assert s.gpu_load_pct == 0 and s.loads["GR3D_FREQ"].freq_mhz == 76
    assert s.loads["EMC_FREQ"].freq_mhz == 1600
    assert s.temps_c["CPU"] == 40.0 and s.temps_c["PMIC"] == 50.0
    assert s.clocks_mhz["APE"] == 25


def test_nano_jp4_nvenc_nvdec_clocks_and_cpu_mean():
    s = parse_line(lines("nano_jp4.txt")[0])
    assert s.unknown == []
    assert s.clocks_mhz["NVENC"] == 716 and s.clocks_mhz["NVDEC"] == 716
    assert s.cpu_util_pct == pytest.approx((30 + 33 + 28 + 26) / 4)
    assert s.emc_load_pct == 10
    ch = s.channels()
    assert ch["power_total_mw"] == 4520 and ch["rail_POM_5V_CPU_mw"] == 1078
    assert ch["temp_cpu_c"] == 60.5 and ch["temp_thermal_c"] == 59.75


def test_tx2_two_captures():
    first, second = (parse_line(x) for x in lines("tx2_jp4.txt"))
    assert first.unknown == [] and second.unknown == []
    assert first.rails["VDD_IN"].current_mw == 3140 and first.rails["VDD_IN"].average_mw == 3208
    assert first.power_total()[0] == 3140
    assert first.rails["VDD_4V0_WIFI"].current_mw == 633
    assert first.loads["GR3D_FREQ"].freq_mhz is None and first.gpu_load_pct == 0  # "GR3D_FREQ 0%" has no clock
    assert first.temps_c["BCPU"] == 42.5 and first.temps_c["Tdiode"] == 41.25
    assert second.power_total()[0] == 5297
    assert (second.mts_fg_pct, second.mts_bg_pct) == (1, 1)
    assert second.loads["GR3D_FREQ"].freq_mhz == 114
    assert [c.freq_mhz for c in second.cpus] == [1421, 2031, 2034, 1420, 1419, 1420]


def test_agx_xavier_has_no_input_rail_total_is_the_documented_sum():
    s = parse_line(lines("agx_xavier_jp42.txt")[0])
    assert s.unknown == []
    assert {k: r.current_mw for k, r in s.rails.items()} == {
        "GPU": 463, "CPU": 618, "SOC": 2936, "CV": 0, "VDDRQ": 309, "SYS5V": 3306}
    total, how = s.power_total()
    assert total == 463 + 618 + 2936 + 0 + 309 + 3306
    assert how.startswith("sum of GPU+CPU+SOC+CV+VDDRQ+SYS5V")
    assert len(s.cpus) == 8 and s.temps_c["Tboard"] == 31.0
    # "GPU 463/463" is a rail, "GPU@30.5C" a temperature: both read, neither confused
    assert s.temps_c["GPU"] == 30.5


def test_xavier_nx_jp4_and_jp512_both_rail_forms():
    old = parse_line(lines("xavier_nx_jp4.txt")[0])
    new = parse_line(lines("xavier_nx_jp512.txt")[0])
    assert old.unknown == [] and new.unknown == []
    assert (old.rails["VDD_IN"].current_mw, old.rails["VDD_IN"].average_mw) == (6140, 5510)
    assert (new.rails["VDD_IN"].current_mw, new.rails["VDD_IN"].average_mw) == (2763, 2846)
    assert new.rails["VDD_SOC"].average_mw == 711
    assert old.temps_c["CPU"] == 33.5 and new.temps_c["CPU"] == 46.5
    assert old.cpu_util_pct == pytest.approx((47 + 23 + 32 + 22 + 31 + 96) / 6)
    assert (old.mts_fg_pct, old.mts_bg_pct) == (1, 9)
    assert old.timestamp is None and new.timestamp == "07-09-2024 13:31:31"
    assert new.loads["GR3D_FREQ"].freqs_mhz == (114,)  # "0%@[114]"
    assert new.clocks_mhz["VIC_FREQ"] == 115


def test_orin_agx_sensors_off_nc_rails_and_per_gpc_clocks():
    s = parse_line(lines("orin_agx_jp5plus.txt")[0])
    assert s.unknown == []
    assert s.sensors_off == ["CV0", "CV1", "GPU", "CV2"]
    assert "GPU" not in s.temps_c  # -256C is "off", never a temperature
    assert s.temps_c["tj"] == 44.343 and s.temps_c["CPU"] == 44.562
    assert "NC" not in s.rails
    assert s.rails["VIN_SYS_5V0"].current_mw == 4025
    total, how = s.power_total()
    assert total == 2340 + 390 + 4025 + 301
    assert "VDD_GPU_SOC+VDD_CPU_CV+VIN_SYS_5V0+VDDQ_VDD2_1V8AO" in how
    assert s.loads["GR3D_FREQ"].freqs_mhz == (0, 0)
    assert len(s.cpus) == 12 and s.ram_total_mib == 62801
    assert "temp_gpu_c" not in s.channels() and s.channels()["temp_tj_c"] == 44.343


def test_orin_nano_jp621_lines_with_trailing_spaces():
    parsed = [parse_line(x) for x in lines("orin_nano_jp621.txt")]
    assert all(p.unknown == [] for p in parsed)
    assert [p.rails["VDD_IN"].current_mw for p in parsed] == [4761, 4761, 4761, 6626, 6626, 6626]
    assert parsed[0].rails["VDD_IN"].average_mw == 4778
    assert parsed[3].rails["VDD_CPU_GPU_CV"].current_mw == 1228
    assert parsed[0].temps_c["cpu"] == 48.468 and parsed[3].temps_c["tj"] == 50.562
    assert parsed[1].temps_c["soc0"] == 48.0  # "soc0@48C": no decimals
    assert [c.freq_mhz for c in parsed[3].cpus] == [1344] * 6
    assert parsed[0].emc_load_pct is None  # Orin Nano JP6 prints no EMC_FREQ without root
    assert parsed[0].channels()["gpu_load_pct"] == 0


def test_tx1_l4t28_format_shared_cpu_clock_and_old_engine_names():
    a, b, c = (parse_line(x) for x in lines("tx1_jp3.txt"))
    assert a.unknown == [] and b.unknown == [] and c.unknown == []
    assert [core.load_pct for core in a.cpus] == [17, 13, 29, 5]
    assert [core.freq_mhz for core in a.cpus] == [408] * 4  # "cpu [..]@408"
    assert a.gpu_load_pct == 3 and b.gpu_load_pct == 39  # "GR3D 3%@76"
    assert b.emc_load_pct == 1 and b.loads["EMC"].freq_mhz == 1600
    total, how = a.power_total()
    assert total is None and "no power rails" in how
    assert "power_total_mw" not in a.channels()
    assert c.loads["AVP"].load_pct == 1 and c.clocks_mhz["MSENC"] == 192 and c.edp_limit_mhz == 1734


def test_offline_cores_and_unknown_tokens_do_not_crash():
    # a real Xavier NX line with three cores switched off and two tokens no tegrastats prints
    line = lines("xavier_nx_jp4.txt")[0].replace("22%@1420,31%@1420,96%@1420", "off,off,off") + " FOO? 12x"
    s = parse_line(line)
    assert [c.online for c in s.cpus] == [True, True, True, False, False, False]
    assert s.cpu_util_pct == pytest.approx((47 + 23 + 32) / 3)  # off cores are not 0 %
    assert s.unknown == ["FOO?", "12x"]
    assert s.rails["VDD_IN"].current_mw == 6140  # the rest is still read
    junk = parse_line("this is not tegrastats [at all")
    assert junk.rails == {} and junk.unknown == ["this", "is", "not", "tegrastats", "[at", "all"]
    assert parse_line("CPU [5%@1224,weird]").unknown == ["CPU entry 'weird'"]


# ----------------------------------------------------------------------------- sampler, real subprocess


def fake_tegrastats(tmp_path: Path, fixture: str, exit_code: int | None = None, name: str = "tegrastats") -> Path:
    """An executable that behaves like tegrastats: `--interval MS`, prints captured lines forever."""
    script = tmp_path / name
    argv_file = tmp_path / "argv.txt"
    body = f"""#!{sys.executable}
import os, sys, time
open({str(argv_file)!r}, "w").write(" ".join(sys.argv[1:]) + "\\n" + str(os.getpid()))
ms = int(sys.argv[sys.argv.index("--interval") + 1])
lines = open({str(FIXTURES / fixture)!r}).read().splitlines()
if {exit_code!r} is not None:
    print("tegrastats: permission denied reading sensors", file=sys.stderr, flush=True)
    sys.exit({exit_code!r})
i = 0
while True:
    time.sleep(ms / 1000.0)
    print(lines[i % len(lines)], flush=True)
    i += 1
"""
    script.write_text(body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def test_sampler_runs_the_binary_and_spans_the_window(tmp_path):
    script = fake_tegrastats(tmp_path, "orin_nano_jp621.txt")
    sampler = TegrastatsSampler(interval_s=0.02, binary=str(script))
    sampler.start()
    after_start = time.monotonic_ns()
    time.sleep(0.3)
    before_stop = time.monotonic_ns()
    tl = sampler.stop()
    argv, pid = (tmp_path / "argv.txt").read_text().split("\n")
    assert argv == "--interval 20"
    assert tl.interval_s == 0.02
    assert len(tl.t_ns) >= 5
    assert tl.t_ns == sorted(tl.t_ns)
    assert tl.t_ns[0] <= after_start and tl.t_ns[-1] >= before_stop  # a sample on each side of the window
    assert sampler.start_ns <= tl.t_ns[0] and tl.t_ns[-1] <= sampler.stop_ns
    # values in the order the fake printed the captured lines
    expected = [4761, 4761, 4761, 6626, 6626, 6626]
    got = tl.values["power_total_mw"]
    assert got == [float(expected[i % 6]) for i in range(len(got))]
    assert tl.values["rail_VDD_SOC_mw"][3] == 2380
    assert tl.channels["rail_VDD_IN_mw"].unit == "mW" and tl.channels["temp_tj_c"].unit == "C"
    assert tl.channels["gpu_load_pct"].unit == "%" and tl.channels["ram_used_mib"].unit == "MiB"
    assert any(n.startswith("power_total_mw: VDD_IN") for n in tl.notes)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)  # the tegrastats it started is gone
    # the registry's summary reads it like any sampler: energy integrated from power_total_mw
    fields = power_summary(tl, after_start, before_stop)
    assert fields["energy_source"] == "integrated"
    assert 4.761 <= fields["power_w_mean"] <= 6.626


def test_sampler_notes_sum_and_sensors_off_on_agx_orin(tmp_path):
    script = fake_tegrastats(tmp_path, "orin_agx_jp5plus.txt")
    sampler = TegrastatsSampler(interval_s=0.02, binary=str(script))
    sampler.start()
    time.sleep(0.1)
    tl = sampler.stop()
    assert set(tl.values["power_total_mw"]) == {7056.0}
    assert any("sum of VDD_GPU_SOC+VDD_CPU_CV+VIN_SYS_5V0+VDDQ_VDD2_1V8AO" in n for n in tl.notes)
    assert any("CV0, CV1, GPU, CV2" in n for n in tl.notes)
    assert "temp_gpu_c" not in tl.channels


def test_sampler_when_tegrastats_dies_says_why(tmp_path):
    script = fake_tegrastats(tmp_path, "nano_jp461.txt", exit_code=3)
    sampler = TegrastatsSampler(interval_s=0.02, binary=str(script), line_timeout_s=1.0)
    sampler.start()
    tl = sampler.stop()
    assert tl.t_ns == [] and "power_total_mw" not in tl.channels
    assert any("exited by itself with code 3" in n for n in tl.notes)
    assert any("permission denied reading sensors" in n for n in tl.notes)


def test_availability_names_the_reason_and_registry_knows_the_sampler(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    why = tegrastats_status()
    assert why is not None and "not on PATH" in why and "JetPack" in why
    assert sampler_availability()["tegrastats"] == why
    with pytest.raises(ConfigError, match="tegrastats.*cannot run here"):
        make_sampler("tegrastats", 0.1)
    fake_tegrastats(tmp_path, "nano_jp461.txt")
    assert tegrastats_status() is None
    sampler = make_sampler("tegrastats", 0.05)
    assert isinstance(sampler, TegrastatsSampler) and sampler.interval_ms == 50
    assert "not an executable" in (tegrastats_status(str(tmp_path / "missing")) or "")
