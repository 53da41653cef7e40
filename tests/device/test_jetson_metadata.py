"""edgebench.device.jetson and the Jetson part of `edgebench doctor`, against fixture root trees
(tests/fixtures/jetson_root, copied to a temporary directory) and fake nvpmodel / jetson_clocks /
systemctl executables run as real subprocesses."""

from __future__ import annotations

import shutil
import stat
import sys
from pathlib import Path

import pytest
from repo_paths import FIXTURES

from edgebench.device import jetson
from edgebench.device.jetson import (
    board_model,
    cuda_version,
    dla_count,
    doctor_lines,
    jetpack_for_l4t,
    jetson_info,
    parse_jetson_clocks_show,
    parse_l4t_release,
    parse_nvpmodel_query,
    parse_power_models,
    read_l4t_release,
    tensorrt_version,
)

ROOTS = FIXTURES / "jetson_root"

# `sudo jetson_clocks --show` on an AGX Orin dev kit with clocks not pinned (first lines of the output in
# https://github.com/rbonghi/jetson_stats/issues/381, plus a GPU line in the same format)
SHOW_OFF = """SOC family:tegra234  Machine:NVIDIA Orin Jetson-Small Developer Kit
Online CPUs: 0-11
cpu0: Online=1 Governor=schedutil MinFreq=115200 MaxFreq=2201600 CurrentFreq=2112000 IdleStates: WFI=1 c7=1
cpu1: Online=1 Governor=schedutil MinFreq=115200 MaxFreq=2201600 CurrentFreq=2201600 IdleStates: WFI=1 c7=1
GPU MinFreq=306000000 MaxFreq=1300500000 CurrentFreq=306000000
"""
SHOW_ON = SHOW_OFF.replace("MinFreq=115200", "MinFreq=2201600").replace("MinFreq=306000000", "MinFreq=1300500000")


@pytest.fixture
def root(tmp_path):
    def copy(board: str) -> Path:
        dest = tmp_path / board
        shutil.copytree(ROOTS / board, dest)
        return dest
    return copy


def make_tool(bindir: Path, name: str, stdout: str, code: int = 0) -> None:
    bindir.mkdir(exist_ok=True)
    path = bindir / name
    path.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write({stdout!r})\nsys.exit({code})\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """A PATH with only the fake tools a test creates (no real nvpmodel/systemctl can leak in)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    return bindir


def test_l4t_release_lines_and_jetpack_mapping(root):
    orin = read_l4t_release(root("orin_agx_jp6"))
    assert (orin.major, orin.revision, orin.version, orin.board) == (36, "3.0", "36.3.0", "generic")
    nx = read_l4t_release(root("xavier_nx_jp512"))
    assert (nx.version, nx.board) == ("35.4.1", "t186ref")
    nano = read_l4t_release(root("nano_jp461"))
    assert (nano.version, nano.board) == ("32.7.1", "t210ref")
    assert jetpack_for_l4t("36.3.0")[0] == "6.0"
    assert jetpack_for_l4t("35.4.1")[0] == "5.1.2"
    assert jetpack_for_l4t("32.7.1")[0] == "4.6.1"
    assert jetpack_for_l4t("36.4.3")[0] == "6.2"
    family, why = jetpack_for_l4t("36.9.9")
    assert family == "6.x" and "not in edgebench's table" in why
    assert jetpack_for_l4t("32.7.9")[0] == "4.6.x"
    assert jetpack_for_l4t("35.9.0")[0] == "5.x"
    assert jetpack_for_l4t("99.1.0")[0] is None
    assert parse_l4t_release("# R35 (release), REVISION: 4.1").version == "35.4.1"
    with pytest.raises(ValueError, match="not an L4T release line"):
        parse_l4t_release("Ubuntu 22.04")


def test_board_cuda_tensorrt_dla_from_the_trees(root):
    orin, nx, nano = root("orin_agx_jp6"), root("xavier_nx_jp512"), root("nano_jp461")
    assert board_model(orin) == "NVIDIA Jetson AGX Orin Developer Kit"  # NUL stripped
    assert board_model(nano) == "NVIDIA Jetson Nano Developer Kit"
    assert cuda_version(orin) == "12.2.140"  # version.json
    assert cuda_version(nano) == "10.2.300"  # version.txt (CUDA 10)
    assert tensorrt_version(orin) == {"version": "8.6.2.3-1+cuda12.2", "source": "dpkg: tensorrt"}
    assert tensorrt_version(nano) == {"version": "8.2.1-1+cuda10.2", "source": "dpkg: libnvinfer8"}
    with pytest.raises(LookupError, match="sudo apt install nvidia-tensorrt"):
        tensorrt_version(nx)  # libnvinfer8 is "deinstall ok config-files": not installed
    assert dla_count(orin) == {"count": 2, "source": "sysfs: nvdla0, nvdla1"}
    assert dla_count(nx) == {"count": 2, "source": "dev: nvhost-nvdla0, nvhost-nvdla1"}
    assert dla_count(nano)["count"] == 0
    with pytest.raises(LookupError):
        cuda_version(nano.parent / "empty")


def test_nvpmodel_and_jetson_clocks_output_parsing():
    assert parse_nvpmodel_query("NV Power Mode: MAXN\n0\n") == jetson.PowerMode(0, "MAXN")
    noisy = "NVPM WARN: fan mode is not set!\nNV Power Mode: MODE_30W\n2\n"
    assert parse_nvpmodel_query(noisy) == jetson.PowerMode(2, "MODE_30W")
    with pytest.raises(ValueError):
        parse_nvpmodel_query("NVPM ERROR: failed to read PM_CONFIG\n")
    conf = (ROOTS / "orin_agx_jp6" / "etc" / "nvpmodel.conf").read_text()
    assert parse_power_models(conf) == {0: "MAXN", 1: "MODE_15W", 2: "MODE_30W", 3: "MODE_50W"}
    assert parse_power_models("NVPM VERB: POWER_MODEL: ID=0 NAME=MAXN\nNVPM VERB: POWER_MODEL: ID=1 NAME=10W\n") \
        == {0: "MAXN", 1: "10W"}
    assert parse_jetson_clocks_show(SHOW_OFF)["state"] == "off"
    on = parse_jetson_clocks_show(SHOW_ON)
    assert on["state"] == "on" and "MinFreq == MaxFreq" in on["how"]
    with pytest.raises(ValueError):
        parse_jetson_clocks_show("SOC family:tegra234\n")


def test_jetson_info_runs_the_tools(root, tools):
    make_tool(tools, "nvpmodel", "NV Power Mode: MODE_30W\n2\n")
    make_tool(tools, "jetson_clocks", SHOW_ON)
    make_tool(tools, "systemctl", "active\n")
    info = jetson_info(root("orin_agx_jp6"))
    assert info["l4t"] == "36.3.0" and info["jetpack"] == "6.0"
    assert info["nvpmodel"] == {"id": 2, "name": "MODE_30W"}
    assert info["jetson_clocks"]["state"] == "on"
    assert info["jtop_service"] == {"active": True, "how": "systemctl is-active jtop: active"}
    assert info["unavailable"] == {}


def test_jetson_info_states_why_when_tools_are_missing_or_fail(root, tools):
    make_tool(tools, "nvpmodel", "", code=1)
    info = jetson_info(root("nano_jp461"))
    assert info["nvpmodel"] is None and "nvpmodel -q failed (exit 1)" in info["unavailable"]["nvpmodel"]
    assert info["jetson_clocks"] is None and "not found on PATH" in info["unavailable"]["jetson_clocks"]
    assert info["jetpack"] == "4.6.1" and info["board_model"] == "NVIDIA Jetson Nano Developer Kit"


def test_doctor_on_a_jetson_tree(root, tools):
    make_tool(tools, "nvpmodel", "NV Power Mode: MAXN\n0\n")
    make_tool(tools, "jetson_clocks", SHOW_OFF)
    orin = root("orin_agx_jp6")
    text = "\n".join(doctor_lines(orin))
    assert "L4T R36.3.0 -> JetPack 6.0" in text
    assert "NVIDIA Jetson AGX Orin Developer Kit" in text
    assert "MAXN (id 0)" in text
    assert "TensorRT       8.6.2.3-1+cuda12.2" in text
    assert "DLA cores      2" in text
    assert "jtop service   not running" in text and "sudo pip3 install jetson-stats" in text
    assert text.splitlines()[-1] == "  missing: jtop service"
    (orin / "run").mkdir()
    (orin / "run" / "jtop.sock").touch()  # no systemctl on this PATH: the socket decides
    text = "\n".join(doctor_lines(orin))
    assert "jtop service   active" in text and text.splitlines()[-1] == "  missing: nothing"


def test_doctor_names_missing_tensorrt_with_the_jetpack_hint(root, tools):
    text = "\n".join(doctor_lines(root("xavier_nx_jp512")))
    assert "L4T R35.4.1 -> JetPack 5.1.2" in text
    assert "TensorRT       MISSING" in text and "sudo apt install nvidia-tensorrt" in text
    assert "python3-libnvinfer" in text
    assert "nvpmodel       MISSING" in text and "not found on PATH" in text
    assert "missing: nvpmodel, jetson_clocks, TensorRT, jtop service" in text


def test_doctor_on_a_machine_that_is_not_a_jetson(tmp_path):
    lines = doctor_lines(tmp_path)
    assert lines[0].startswith("  not a Jetson")
    assert "JetPack provides" in lines[1] and "TensorRT" in lines[1] and "nvpmodel" in lines[1]
    # the doctor command uses the same function for the real root
    from edgebench.commands.doctor import jetson_lines

    assert jetson_lines(tmp_path) == lines


def test_system_json_includes_jetson_metadata_only_on_a_jetson(monkeypatch):
    from edgebench.device.system import collect_system_info

    monkeypatch.setattr(jetson, "is_jetson", lambda root="/": False)
    assert "jetson" not in collect_system_info()
    monkeypatch.setattr(jetson, "is_jetson", lambda root="/": True)
    monkeypatch.setattr(jetson, "jetson_info", lambda root="/": {"l4t": "36.3.0", "jetpack": "6.0"})
    assert collect_system_info()["jetson"] == {"l4t": "36.3.0", "jetpack": "6.0"}
