"""Throttle detection on a Jetson, from sysfs: NVML's clock-event reasons are NotSupported on Jetson (Orin
included), so a thermal or over-current slowdown is never flagged by the NVML path there.

The `jetson_throttle` sampler reads, every tick, from a sysfs root directory (`/` on a board; a fixture
tree in tests):

- GPU clock: `sys/class/devfreq/<dev>/{cur_freq,min_freq,max_freq}` (Hz) of the integrated GPU, found as
  jetson-stats 7.2.2 finds it (`jtop/core/gpu.py` find_igpu: `device/of_node/name` is gv11b, gp10b, ga10b,
  gb10b or contains "gpu");
- EMC clock: `sys/kernel/debug/bpmp/debug/clk/emc/{rate,min_rate,max_rate}` (Hz; debugfs, root only), the
  max capped by `sys/kernel/nvpmodel_emc_cap/emc_iso_cap` when present (`jtop/core/memory.py` read_emc);
- CPU clocks: `sys/devices/system/cpu/cpuN/cpufreq/{scaling_cur_freq,scaling_min_freq,scaling_max_freq}` (kHz);
- thermal zones: `sys/class/thermal/thermal_zoneN/{type,temp,trip_point_K_temp,trip_point_K_type}` (m°C;
  `sys/devices/virtual/thermal` where the class link is missing), the lowest `passive`/`hot`/`critical` trip;
- over-current events (Orin): the hwmon named `soctherm_oc` under `sys/class/hwmon/hwmonN/` with
  `oc{1,2,3}_event_cnt` (cumulative, never cleared) and `oc{1,2,3}_throt_en`. Registered by NVIDIA's
  tegra23x-oc-event driver (nvidia-oot drivers/thermal/tegra23x_oc_event.c: hwmon "soctherm_oc",
  SENSOR_DEVICE_ATTR_RO oc1..3_event_cnt / oc1..3_throt_en from BPMP MRQ_OC_STATUS), read the same way by
  jetson-stats 7.2.2 (`jtop/gui/psysfs.py` _read_oc_counters); what each OC event means (under-voltage,
  average or instantaneous over-current) is per board in the L4T r35/r36 "Platform Power and Performance"
  guide for Orin: the row names the counter, not a meaning.

`throttle_summary` then says whether the measured window was throttled, and why (pure, on the timeline):
- `over-current`: an ocN_event_cnt rose between the samples bracketing the window (the last sample before it
  and the first after it: conservative, an event just outside the window may count, none inside is missed);
- `thermal`: a zone reached its lowest passive/hot/critical trip point inside the window;
- `clock cap lowered`: a domain's max (GPU devfreq max_freq, CPU scaling_max_freq, EMC max) fell below its
  value at the start of the row (nvpmodel sets these to the power mode's max; thermal cooling devices lower
  them through frequency QoS);
- `clock below pinned max`: with clocks pinned (min == max, as `jetson_clocks` sets them) a domain's current
  clock fell more than CLOCK_TOLERANCE_PCT below its max. With DVFS governors active, a clock below max is
  the governor's normal choice and is NOT taken for throttling (only recorded in the timeline).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from edgebench.telemetry.base import Channel, PollingSampler, Timeline

GPU_OF_NAMES = {"gv11b", "gp10b", "ga10b", "gb10b", "gpu"}  # jtop/core/gpu.py KNOWN_GPU_DEVICE_NAMES
THROTTLING_TRIP_TYPES = ("passive", "hot", "critical")  # "active" trips switch fans on: not a slowdown
CLOCK_TOLERANCE_PCT = 3.0  # a pinned clock this far below its max counts as dropped (rate read-back jitter)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_") or "zone"


@dataclass
class ClockDomain:
    name: str            # gpu, emc, cpu0, ...
    cur: Path
    lo: Path | None
    hi: Path | None
    hz_per_mhz: float    # 1e6 for Hz files, 1e3 for kHz (cpufreq)
    cap: Path | None = None  # an extra cap on hi (EMC: nvpmodel_emc_cap)

    def read_mhz(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, path in (("cur", self.cur), ("min", self.lo), ("max", self.hi)):
            v = _read_int(path) if path is not None else None
            out[key] = math.nan if v is None else v / self.hz_per_mhz
        if self.cap is not None and (cap := _read_int(self.cap)) and cap > 0:
            cap_mhz = cap / self.hz_per_mhz
            if math.isnan(out["max"]) or cap_mhz < out["max"]:
                out["max"] = cap_mhz
        return out


@dataclass
class ThermalZone:
    slug: str
    kind: str
    temp: Path
    trips: list[tuple[str, Path]]  # (type, trip_point_K_temp), throttling types only


@dataclass
class ThrottleSources:
    clocks: list[ClockDomain] = field(default_factory=list)
    zones: list[ThermalZone] = field(default_factory=list)
    oc_dir: Path | None = None
    oc_names: list[str] = field(default_factory=list)  # oc1, oc2, ...
    notes: list[str] = field(default_factory=list)


def _gpu_devfreq(root: Path) -> Path | None:
    base = root / "sys/class/devfreq"
    if not base.is_dir():
        return None
    for d in sorted(base.iterdir()):
        name_file = d / "device/of_node/name"
        of_name = name_file.read_text().strip().lower() if name_file.is_file() else ""
        if of_name in GPU_OF_NAMES or "gpu" in of_name or d.name.split(".")[-1] in GPU_OF_NAMES:
            if (d / "cur_freq").is_file():
                return d
    return None


def discover(root: str | Path) -> ThrottleSources:
    """What this sysfs root offers for throttle detection; a note names each source that is absent."""
    root = Path(root)
    src = ThrottleSources()
    gpu = _gpu_devfreq(root)
    if gpu is not None:
        src.clocks.append(ClockDomain("gpu", gpu / "cur_freq", gpu / "min_freq", gpu / "max_freq", 1e6))
    else:
        src.notes.append("jetson_throttle: no GPU devfreq node under sys/class/devfreq (GPU clock not watched)")
    emc = root / "sys/kernel/debug/bpmp/debug/clk/emc"
    if (emc / "rate").is_file():
        src.clocks.append(ClockDomain("emc", emc / "rate", emc / "min_rate", emc / "max_rate", 1e6,
                                      cap=root / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap"))
    else:
        src.notes.append("jetson_throttle: EMC clock not readable (sys/kernel/debug/bpmp/debug/clk/emc/rate needs "
                         "debugfs and root)")
    cpus = sorted((root / "sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"),
                  key=lambda p: int(p.parent.parent.name[3:]))
    for cur in cpus:
        d = cur.parent
        online = _read_int(d.parent / "online")
        if online == 0:
            continue
        src.clocks.append(ClockDomain(d.parent.name, cur, d / "scaling_min_freq", d / "scaling_max_freq", 1e3))
    if not cpus:
        src.notes.append("jetson_throttle: no cpufreq under sys/devices/system/cpu (CPU clocks not watched)")
    thermal = root / "sys/class/thermal"
    if not any(thermal.glob("thermal_zone*")):
        thermal = root / "sys/devices/virtual/thermal"
    seen: dict[str, int] = {}
    for zdir in sorted(thermal.glob("thermal_zone*"), key=lambda p: int(p.name[12:] or 0)):
        type_file = zdir / "type"
        if not type_file.is_file() or not (zdir / "temp").is_file():
            continue
        kind = type_file.read_text().strip()
        slug = _slug(kind)
        seen[slug] = seen.get(slug, 0) + 1
        if seen[slug] > 1:
            slug = f"{slug}_{seen[slug]}"
        trips = []
        for tp in sorted(zdir.glob("trip_point_*_temp")):
            ttype_file = zdir / tp.name.replace("_temp", "_type")
            ttype = ttype_file.read_text().strip() if ttype_file.is_file() else ""
            if ttype in THROTTLING_TRIP_TYPES:
                trips.append((ttype, tp))
        src.zones.append(ThermalZone(slug, kind, zdir / "temp", trips))
    if not src.zones:
        src.notes.append("jetson_throttle: no thermal zones under sys/class/thermal")
    for hw in sorted((root / "sys/class/hwmon").glob("hwmon*")):
        name = hw / "name"
        if name.is_file() and name.read_text().strip() == "soctherm_oc":
            src.oc_dir = hw
            src.oc_names = sorted(p.name[:-len("_event_cnt")] for p in hw.glob("oc*_event_cnt"))
            break
    if src.oc_dir is None:
        src.notes.append("jetson_throttle: no soctherm_oc hwmon (over-current event counters; Orin, L4T r35+)")
    return src


def channels(src: ThrottleSources) -> list[Channel]:
    out: list[Channel] = []
    for c in src.clocks:
        out += [Channel(f"clk_{c.name}_cur_mhz", "MHz"), Channel(f"clk_{c.name}_min_mhz", "MHz"),
                Channel(f"clk_{c.name}_max_mhz", "MHz")]
    for z in src.zones:
        out.append(Channel(f"thermal_{z.slug}_c", "C"))
        if z.trips:
            out.append(Channel(f"thermal_{z.slug}_trip_c", "C"))
    for oc in src.oc_names:
        out += [Channel(f"{oc}_event_cnt", "events", kind="counter"), Channel(f"{oc}_throt_en", "bool")]
    return out


def read_sample(src: ThrottleSources) -> dict[str, float]:
    """One reading of every source; unreadable values are NaN."""
    sample: dict[str, float] = {}
    for c in src.clocks:
        for key, mhz in c.read_mhz().items():
            sample[f"clk_{c.name}_{key}_mhz"] = mhz
    for z in src.zones:
        temp = _read_int(z.temp)
        sample[f"thermal_{z.slug}_c"] = math.nan if temp is None else temp / 1000.0
        trips = [v / 1000.0 for _k, p in z.trips if (v := _read_int(p)) is not None]
        if z.trips:
            sample[f"thermal_{z.slug}_trip_c"] = min(trips) if trips else math.nan
    if src.oc_dir is not None:
        for oc in src.oc_names:
            for suffix in ("event_cnt", "throt_en"):
                count = _read_int(src.oc_dir / f"{oc}_{suffix}")
                sample[f"{oc}_{suffix}"] = math.nan if count is None else float(count)
    return sample


class JetsonThrottleSampler(PollingSampler):
    """Clocks, thermal zones and over-current counters from sysfs, on the runner's clock, in a daemon thread.
    One-shot: start() once, stop() once; each takes one sample synchronously (so the window is bracketed).
    No power channel; its row evidence is the throttle verdict. Process ids are ignored (the board's clocks)."""

    name = "jetson_throttle"

    @classmethod
    def missing(cls, sysfs_root: str | Path = "/") -> str | None:
        return jetson_throttle_missing(sysfs_root)

    @classmethod
    def throttle_verdict(cls, timeline: Timeline, start_ns: int, end_ns: int) -> tuple[bool, list[str]] | None:
        return throttle_summary(timeline, start_ns, end_ns)

    def __init__(self, interval_s: float = 0.5, sysfs_root: str | Path = "/") -> None:
        super().__init__(interval_s)
        self.sysfs_root = Path(sysfs_root)
        self._src: ThrottleSources | None = None

    def _begin(self) -> Timeline:
        self._src = discover(self.sysfs_root)
        tl = Timeline(self.name, interval_s=self.interval_s, notes=list(self._src.notes))
        for ch in channels(self._src):
            tl.add_channel(ch)
        return tl

    def _sample(self) -> None:
        assert self._timeline is not None and self._src is not None
        self._timeline.append(time.monotonic_ns(), read_sample(self._src))


def jetson_throttle_missing(sysfs_root: str | Path) -> str | None:
    """None when at least one throttle source exists under the root, else why not (for doctor/make_sampler)."""
    src = discover(sysfs_root)
    if src.clocks or src.zones or src.oc_dir is not None:
        return None
    return "no Jetson clocks, thermal zones or over-current counters under " + str(sysfs_root) + \
        " (" + "; ".join(src.notes) + ")"


# --------------------------------------------------------------------------- the verdict (pure)

def _bracket(tl: Timeline, start_ns: int, end_ns: int) -> list[int]:
    """Indexes of the samples inside [start_ns, end_ns] plus the last one before and the first one after."""
    inside = [i for i, t in enumerate(tl.t_ns) if start_ns <= t <= end_ns]
    before = [i for i, t in enumerate(tl.t_ns) if t < start_ns]
    after = [i for i, t in enumerate(tl.t_ns) if t > end_ns]
    return ([before[-1]] if before else []) + inside + ([after[0]] if after else [])


def _vals(tl: Timeline, name: str, idx: list[int]) -> list[float]:
    col = tl.values.get(name, [])
    return [col[i] for i in idx if i < len(col) and not math.isnan(col[i])]


def throttle_summary(tl: Timeline, start_ns: int, end_ns: int) -> tuple[bool, list[str]]:
    """(throttled, causes) for the window; each cause names the domain, the values and the rule."""
    causes: list[str] = []
    idx = _bracket(tl, start_ns, end_ns)
    inside = [i for i in idx if start_ns <= tl.t_ns[i] <= end_ns] or idx
    for name in tl.channels:
        m = re.fullmatch(r"(oc\d+)_event_cnt", name)
        if m:
            vals = _vals(tl, name, idx)
            if len(vals) >= 2 and vals[-1] > vals[0]:
                oc = m.group(1)
                causes.append(f"over-current: soctherm_oc {oc}_event_cnt +{vals[-1] - vals[0]:.0f} in the window "
                              "(the board throttles on OC events; check the power supply)")
    for name in tl.channels:
        m = re.fullmatch(r"thermal_(.+)_trip_c", name)
        if not m:
            continue
        zone = m.group(1)
        temps, trips = _vals(tl, f"thermal_{zone}_c", inside), _vals(tl, name, inside)
        if temps and trips and max(temps) >= min(trips):
            causes.append(f"thermal: zone {zone} reached {max(temps):.1f} C >= its trip point {min(trips):.1f} C")
    first = {}
    for name in tl.channels:
        m = re.fullmatch(r"clk_(.+)_max_mhz", name)
        if not m:
            continue
        dom = m.group(1)
        all_max = _vals(tl, name, list(range(len(tl.t_ns))))
        if not all_max:
            continue
        first[dom] = all_max[0]
        win_max = _vals(tl, name, inside)
        if win_max and min(win_max) < first[dom] * (1 - CLOCK_TOLERANCE_PCT / 100):
            causes.append(f"clock cap lowered: {dom.upper()} max {min(win_max):.0f} MHz < {first[dom]:.0f} MHz at "
                          "the start of the row")
            continue
        cols = {k: tl.values.get(f"clk_{dom}_{k}_mhz", []) for k in ("cur", "min", "max")}
        for i in inside:
            cur, lo, hi = (cols[k][i] if i < len(cols[k]) else math.nan for k in ("cur", "min", "max"))
            pinned = not (math.isnan(lo) or math.isnan(hi)) and abs(hi - lo) <= hi * 0.001
            if pinned and not math.isnan(cur) and cur < hi * (1 - CLOCK_TOLERANCE_PCT / 100):
                causes.append(f"clock below pinned max: {dom.upper()} {cur:.0f} MHz < {hi:.0f} MHz with clocks pinned "
                              "(min == max, jetson_clocks)")
                break
    return bool(causes), causes
