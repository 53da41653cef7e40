"""Every sampler table comes from the classes' declarations: a toy sampler declared here appears in all of
them once it is in SAMPLER_CLASSES, and its row channels fill row columns through telemetry_fields."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import repo_paths

from edgebench.config.profile import profile_from_dict
from edgebench.errors import ConfigError
from edgebench.telemetry import catalog, registry
from edgebench.telemetry.base import Channel, PollingSampler, RowChannel, SamplerBase, Timeline
from edgebench.telemetry.host import HostSampler
from edgebench.telemetry.nvml import NvmlSampler
from edgebench.telemetry.row_fields import telemetry_fields

S = 1_000_000_000


class ToySampler(PollingSampler):
    """A sampler that exists only in this test: a busy gauge, a temperature and an energy counter."""

    name = "toy"
    power_scope = "toy-rail"
    counter_label = "toyctr"
    row_channels = (RowChannel("gpu_util_pct_mean", "toy_busy_pct"),
                    RowChannel("gpu_temp_c_max", "toy_temp_c", "max"))

    @classmethod
    def missing(cls, sysfs_root: str | Path = "/") -> str | None:
        return None if (Path(sysfs_root) / "toy").exists() else f"no toy device under {sysfs_root}"

    def __init__(self, interval_s: float = 3600.0, sysfs_root: str | Path = "/") -> None:
        super().__init__(interval_s)
        self.sysfs_root = Path(sysfs_root)

    def _begin(self) -> Timeline:
        tl = Timeline(self.name, interval_s=self.interval_s)
        tl.add_channel(Channel("toy_busy_pct", "%"))
        return tl

    def _sample(self) -> None:
        assert self._timeline is not None
        self._timeline.append(time.monotonic_ns(), {"toy_busy_pct": 50.0})


def toy_timeline() -> Timeline:
    """0..2 s: busy 60, 62, .., 68 %; temperature 30..34 C; energy +10 J per 0.5 s (20 W)."""
    tl = Timeline("toy", interval_s=0.5)
    for ch in (Channel("toy_busy_pct", "%"), Channel("toy_temp_c", "C"), Channel("energy_total_mj", "mJ", "counter")):
        tl.add_channel(ch)
    for i in range(5):
        tl.append(i * S // 2, {"toy_busy_pct": 60.0 + 2 * i, "toy_temp_c": 30.0 + i, "energy_total_mj": 10_000.0 * i})
    return tl


def nvml_timeline() -> Timeline:
    tl = Timeline("nvml", interval_s=0.5)
    for ch in (Channel("gpu_util_pct", "%"), Channel("temperature_c", "C")):
        tl.add_channel(ch)
    for i in range(5):
        tl.append(i * S // 2, {"gpu_util_pct": 90.0, "temperature_c": 70.0})
    return tl


@pytest.fixture
def with_toy(monkeypatch):
    """The one line a developer adds: the toy class at the end of SAMPLER_CLASSES."""
    monkeypatch.setattr(catalog, "SAMPLER_CLASSES", (*catalog.SAMPLER_CLASSES, ToySampler))


# ---------------------------------------------------------------- the shipped tables


def test_the_shipped_tables_are_what_the_classes_declare():
    t = catalog.tables()
    assert t.names == catalog.SAMPLER_NAMES == ("host", "ina3221", "jetson_throttle", "jtop", "nvml", "tegrastats")
    # the tables that registry.py held by hand before, unchanged
    assert t.power_scopes == {"host": "cpu-package", "nvml": "gpu-board", "jtop": "soc-total",
                              "ina3221": "soc-total", "tegrastats": "soc-total"}
    assert t.counter_labels == {"host": "rapl", "nvml": "nvml"}
    assert {(n, rc.column, rc.channel, rc.aggregation) for n, rcs in t.row_channels.items() for rc in rcs} == {
        ("host", "cpu_util_pct_mean", "cpu_util_pct", "mean"), ("host", "proc_cpu_pct_mean", "proc_cpu_pct", "mean"),
        ("host", "rss_mib_max", "rss_mib", "max"), ("host", "mem_used_mib_max", "mem_used_mib", "max"),
        ("nvml", "gpu_util_pct_mean", "gpu_util_pct", "mean"), ("nvml", "gpu_temp_c_max", "temperature_c", "max"),
        ("nvml", "gpu_sm_clock_mhz_mean", "sm_clock_mhz", "mean"), ("nvml", "mem_used_mib_max", "mem_used_mib", "max"),
        ("jtop", "gpu_util_pct_mean", "gpu_util_pct", "mean"), ("jtop", "gpu_temp_c_max", "temp_gpu_c", "max"),
        ("jtop", "gpu_sm_clock_mhz_mean", "gpu_freq_mhz", "mean"),
        ("tegrastats", "cpu_util_pct_mean", "cpu_util_pct", "mean"),
        ("tegrastats", "gpu_util_pct_mean", "gpu_load_pct", "mean"),
        ("tegrastats", "gpu_temp_c_max", "temp_gpu_c", "max"),
        ("tegrastats", "gpu_sm_clock_mhz_mean", "gpu_freq_mhz", "mean"),
    }
    # make_sampler's table is each class's own factory and availability check
    assert list(registry.SAMPLERS) == [cls.name for cls in catalog.SAMPLER_CLASSES]
    assert registry.SAMPLERS["host"] == (HostSampler.create, HostSampler.missing)
    assert registry.SAMPLERS["nvml"] == (NvmlSampler.create, NvmlSampler.missing)


def test_every_row_column_a_sampler_declares_is_a_results_column():
    from edgebench.results.schema import COLUMN_NAMES

    declared = {rc.column for rcs in catalog.tables().row_channels.values() for rc in rcs}
    assert declared and declared <= set(COLUMN_NAMES), declared - set(COLUMN_NAMES)


def test_nvml_factory_samples_every_gpu_of_the_row():
    factory, _missing = registry.SAMPLERS["nvml"]
    assert factory(0.1, "/", ("cuda:0", "cuda:1")).devices == [0, 1]
    assert factory(0.1, "/", ()).devices == [0]


def test_importing_the_catalog_imports_no_framework():
    """Config validates sampler names from the declarations: that must not pull in a framework."""
    code = ("import sys, edgebench.telemetry.catalog as c; "
            "print(sorted(m for m in ('torch', 'onnx', 'onnxruntime', 'numpy', 'pynvml', 'jtop', 'psutil', "
            "'tensorrt', 'yaml') if m in sys.modules)); print(','.join(c.SAMPLER_NAMES))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=repo_paths.REPO, env={"PYTHONPATH": str(repo_paths.REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "host,ina3221,jetson_throttle,jtop,nvml,tegrastats"]


# ---------------------------------------------------------------- a new sampler: one class + one line


def test_a_toy_sampler_appears_in_every_derived_table(with_toy, tmp_path):
    t = catalog.tables()
    assert "toy" in t.names and t.classes["toy"] is ToySampler
    assert t.power_scopes["toy"] == "toy-rail"
    assert t.counter_labels["toy"] == "toyctr"
    assert t.row_channels["toy"] == ToySampler.row_channels
    # make_sampler and doctor read registry.SAMPLERS, built from the same tables
    entries = registry.sampler_entries(t)
    factory, missing = entries["toy"]
    assert missing(tmp_path) == f"no toy device under {tmp_path}"
    (tmp_path / "toy").mkdir()
    assert missing(tmp_path) is None
    made = factory(0.25, tmp_path, ())
    assert type(made) is ToySampler and made.interval_s == 0.25 and made.sysfs_root == tmp_path


def test_make_sampler_builds_and_refuses_a_toy_by_its_declarations(with_toy, monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "SAMPLERS", registry.sampler_entries(catalog.tables()))
    with pytest.raises(ConfigError, match=r"sampler 'toy' cannot run here: no toy device under"):
        registry.make_sampler("toy", 0.5, sysfs_root=tmp_path)
    (tmp_path / "toy").mkdir()
    s = registry.make_sampler("toy", 0.5, sysfs_root=tmp_path)
    s.start()
    tl = s.stop()
    assert tl.source == "toy" and tl.values["toy_busy_pct"] == [50.0, 50.0]  # start's and stop's samples
    assert registry.sampler_availability(tmp_path)["toy"] is None


def test_a_toy_row_channel_fills_a_row_column_through_telemetry_fields(with_toy):
    fields = telemetry_fields([toy_timeline()], 0, 2 * S)
    assert fields["gpu_util_pct_mean"] == pytest.approx(64.0)  # mean of 60..68
    assert fields["gpu_temp_c_max"] == 34.0
    assert fields["energy_source"] == "counter:toyctr" and fields["energy_j"] == pytest.approx(40.0)
    assert fields["power_scope"] == "toy-rail" and fields["power_w_mean"] == pytest.approx(20.0)
    assert fields["telemetry_source"] == "toy"


def test_without_its_line_in_the_list_the_toy_fills_no_declared_column():
    fields = telemetry_fields([toy_timeline()], 0, 2 * S)
    assert "gpu_util_pct_mean" not in fields and "gpu_temp_c_max" not in fields
    # power and energy are read from the common channel names whatever the source; scope and counter
    # fall back to the source's name
    assert fields["energy_source"] == "counter:toy" and fields["power_scope"] == "toy"


def test_the_earlier_listed_sampler_wins_a_column_two_declare(with_toy):
    first_toy = telemetry_fields([toy_timeline(), nvml_timeline()], 0, 2 * S)
    assert first_toy["gpu_util_pct_mean"] == pytest.approx(64.0) and first_toy["gpu_temp_c_max"] == 34.0
    first_nvml = telemetry_fields([nvml_timeline(), toy_timeline()], 0, 2 * S)
    assert first_nvml["gpu_util_pct_mean"] == pytest.approx(90.0) and first_nvml["gpu_temp_c_max"] == 70.0
    assert first_nvml["telemetry_source"] == "nvml+toy"


def test_a_throttle_verdict_declared_on_a_class_marks_the_row(monkeypatch):
    class HotToy(ToySampler):
        name = "hot_toy"

        @classmethod
        def throttle_verdict(cls, timeline, start_ns, end_ns):
            return True, ["toy: too hot"]

    monkeypatch.setattr(catalog, "SAMPLER_CLASSES", (*catalog.SAMPLER_CLASSES, HotToy))
    tl = toy_timeline()
    tl.source = "hot_toy"
    fields = telemetry_fields([nvml_timeline(), tl], 0, 2 * S)
    assert fields["throttled"] is True and fields["throttle_reasons"] == "toy: too hot"
    assert "throttled" not in telemetry_fields([toy_timeline()], 0, 2 * S)  # the plain toy gives no verdict


def test_config_accepts_exactly_the_catalogued_names():
    base = {"name": "p", "device": "dgpu", "sweep": {"models": ["tiny_cnn"], "backends": ["null"]}}
    ok = profile_from_dict({**base, "telemetry": {"samplers": list(catalog.SAMPLER_NAMES)}}, "p.yaml")
    assert list(ok.telemetry["samplers"]) == list(catalog.SAMPLER_NAMES)
    with pytest.raises(ConfigError) as info:
        profile_from_dict({**base, "telemetry": {"samplers": ["host", "toy"]}}, "p.yaml")
    text = str(info.value)
    assert "p.yaml" in text and "'telemetry.samplers'" in text
    assert "unknown sampler 'toy' (known: host, ina3221, jetson_throttle, jtop, nvml, tegrastats)" in text


# ---------------------------------------------------------------- declarations that cannot work


def test_derive_refuses_a_name_declared_twice_naming_both_classes():
    class HostAgain(HostSampler):
        pass  # inherits name = "host"

    with pytest.raises(ValueError, match=r"HostAgain: sampler name 'host' is already declared by "
                                         r"edgebench\.telemetry\.host\.HostSampler"):
        catalog.derive((HostSampler, HostAgain))


@pytest.mark.parametrize("name", ["", "two words", None])
def test_derive_refuses_a_class_without_a_usable_name(name):
    Nameless = type("Nameless", (SamplerBase,), {"name": name})
    with pytest.raises(ValueError, match=r"Nameless: sampler name .* is not a plain identifier"):
        catalog.derive((Nameless,))


def test_derive_refuses_what_is_not_a_sampler_class_or_row_channel():
    with pytest.raises(ValueError, match="must subclass telemetry.base.SamplerBase"):
        catalog.derive((HostSampler, dict))  # type: ignore[arg-type]
    Loose = type("Loose", (SamplerBase,), {"name": "loose", "row_channels": (("gpu_util_pct_mean", "x"),)})
    with pytest.raises(ValueError, match=r"Loose: row_channels must be RowChannel"):
        catalog.derive((Loose,))
    with pytest.raises(ValueError, match=r"aggregation 'median' is not one of mean, max"):
        RowChannel("gpu_util_pct_mean", "x", "median")
