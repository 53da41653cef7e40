"""tegrastats: a parser for its lines (every board and L4T release seen so far) and a sampler that runs it.

One tegrastats line looks like (Orin Nano, JetPack 6)::

    04-27-2026 14:59:41 RAM 775/7620MB (lfb 3x4MB) SWAP 0/3810MB (cached 0MB) CPU [1%@729,...]
    GR3D_FREQ 0% cpu@48.468C ... tj@49.156C VDD_IN 4761mW/4778mW VDD_CPU_GPU_CV 515mW/501mW ...

and older boards print rails without units (`POM_5V_IN 1750/1628`, mW current/average), cores
as `off`, `CPU [..]@MHz` for all cores at once (TX1), `GR3D_FREQ 0%@[0,0]` per GPC (Orin), engine
clocks (`APE 25`, `NVENC 716`, `VIC_FREQ 115`), `MTS fg 1% bg 9%`, and `-256C` for a powered-off
sensor. The parser never raises on a line it only partly understands: tokens it cannot read are
kept in `TegrastatsSample.unknown` and reported in the timeline's notes.

Channels of the sampler (units in the names):
  power_total_mw          the board/module input rail (VDD_IN, POM_5V_IN, VIN) where tegrastats prints
                          one; otherwise (AGX Xavier, AGX Orin) the sum of the printed rails, with a note
  rail_<NAME>_mw          every rail's current reading (NAME as printed, e.g. rail_VDD_CPU_GPU_CV_mw)
  gpu_load_pct            GR3D_FREQ (GR3D on L4T 28): iGPU busy share at its current clock
  gpu2_load_pct           GR3D2_FREQ, where printed (second GPC on early Orin releases)
  gpu_freq_mhz            GR3D clock (highest GPC clock where a list is printed)
  emc_load_pct            EMC_FREQ (EMC on L4T 28): memory controller busy share
  emc_freq_mhz            EMC clock where printed
  cpu_util_pct            mean load of the online cores
  temp_<zone>_c           every thermal zone tegrastats prints, zone lower-cased (temp_tj_c, temp_cpu_c)
  ram_used_mib            RAM in use (tegrastats' "MB" are MiB)

Each sample is stamped with `time.monotonic_ns()` when its line arrives (the runner's clock).
tegrastats averages loads over its interval and prints at its end, so a sample describes the
interval that ends at its timestamp.

Size: the parser is a table of line formats from every board and L4T release seen, kept whole
next to the sampler that feeds it lines.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from edgebench.telemetry.base import Channel, RowChannel, SamplerBase, Timeline

# rails that are the board's / module's input: the total, never to be summed with the others
INPUT_RAILS = ("VDD_IN", "POM_5V_IN", "VIN")
NOT_CONNECTED_RAILS = ("NC",)
SENSOR_OFF_C = -256.0  # tegrastats prints CV0@-256C for a thermal sensor that is powered off

_UNIT_TO_MIB = {"k": 1.0 / 1024.0, "M": 1.0, "G": 1024.0}
_TOKEN_END = r"(?=\s|$)"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("ram", re.compile(r"RAM (\d+)/(\d+)([kMG])B(?:\s*\(lfb (\d+)x(\d+)([kMG])B\))?" + _TOKEN_END)),
    ("swap", re.compile(r"SWAP (\d+)/(\d+)([kMG])B(?:\s*\(cached (\d+)([kMG])B\))?" + _TOKEN_END)),
    ("iram", re.compile(r"IRAM (\d+)/(\d+)([kMG])B(?:\s*\(lfb (\d+)([kMG])B\))?" + _TOKEN_END)),
    ("cpu", re.compile(r"[Cc][Pp][Uu] \[([^\]]*)\](?:@(\d+))?" + _TOKEN_END)),
    ("mts", re.compile(r"MTS fg (\d+)% bg (\d+)%" + _TOKEN_END)),
    ("edp", re.compile(r"EDP limit (\d+)" + _TOKEN_END)),
    ("load", re.compile(r"([A-Z][A-Z0-9_]*) (\d+(?:\.\d+)?)%(?:@(\[[\d,]*\]|\d+))?" + _TOKEN_END)),
    ("at_freq", re.compile(r"([A-Z][A-Z0-9_]*) @(\d+)" + _TOKEN_END)),
    ("rail", re.compile(r"([A-Za-z][A-Za-z0-9_]*) (\d+)(?:mW)?/(\d+)(?:mW)?" + _TOKEN_END)),
    ("temp", re.compile(r"([A-Za-z][A-Za-z0-9_]*)@(-?\d+(?:\.\d+)?)C" + _TOKEN_END)),
    ("clock", re.compile(r"([A-Z][A-Z0-9_]*) (\d+)" + _TOKEN_END)),
    ("clock_off", re.compile(r"([A-Z][A-Z0-9_]*) off" + _TOKEN_END)),
]
_TIMESTAMP = re.compile(r"(\d\d-\d\d-\d{4} \d\d:\d\d:\d\d)" + _TOKEN_END)
_SPACE = re.compile(r"\s+")
_GPU_LOADS = ("GR3D_FREQ", "GR3D")
_EMC_LOADS = ("EMC_FREQ", "EMC")


@dataclass(frozen=True)
class Rail:
    current_mw: float
    average_mw: float  # tegrastats' own running average since it started


@dataclass(frozen=True)
class CpuCore:
    load_pct: float | None
    freq_mhz: float | None
    online: bool


@dataclass(frozen=True)
class EngineLoad:
    load_pct: float | None
    freqs_mhz: tuple[float, ...] = ()  # one per GPC for GR3D_FREQ x%@[a,b]

    @property
    def freq_mhz(self) -> float | None:
        return max(self.freqs_mhz) if self.freqs_mhz else None


@dataclass
class TegrastatsSample:
    """Everything one tegrastats line says. Absent fields are None / empty."""

    raw: str
    timestamp: str | None = None  # "MM-DD-YYYY HH:MM:SS" prefix of L4T R35+ lines
    ram_used_mib: float | None = None
    ram_total_mib: float | None = None
    swap_used_mib: float | None = None
    swap_total_mib: float | None = None
    swap_cached_mib: float | None = None
    iram_used_kib: float | None = None
    iram_total_kib: float | None = None
    cpus: list[CpuCore] = field(default_factory=list)
    loads: dict[str, EngineLoad] = field(default_factory=dict)  # EMC_FREQ, GR3D_FREQ, GR3D2_FREQ, AVP, ...
    clocks_mhz: dict[str, float | None] = field(default_factory=dict)  # APE, VIC_FREQ, NVENC (None = off), ...
    temps_c: dict[str, float] = field(default_factory=dict)  # zone as printed -> C
    sensors_off: list[str] = field(default_factory=list)  # zones printed as -256C
    rails: dict[str, Rail] = field(default_factory=dict)
    mts_fg_pct: float | None = None
    mts_bg_pct: float | None = None
    edp_limit_mhz: float | None = None
    unknown: list[str] = field(default_factory=list)

    @property
    def cpu_util_pct(self) -> float | None:
        loads = [c.load_pct for c in self.cpus if c.online and c.load_pct is not None]
        return sum(loads) / len(loads) if loads else None

    def _load(self, names: tuple[str, ...]) -> EngineLoad | None:
        for name in names:
            if name in self.loads:
                return self.loads[name]
        return None

    @property
    def gpu_load_pct(self) -> float | None:
        load = self._load(_GPU_LOADS)
        return None if load is None else load.load_pct

    @property
    def emc_load_pct(self) -> float | None:
        load = self._load(_EMC_LOADS)
        return None if load is None else load.load_pct

    def power_total(self) -> tuple[float | None, str]:
        """(mW, how it was obtained). The input rail where printed, else the sum of the rails."""
        for name in INPUT_RAILS:
            if name in self.rails:
                return self.rails[name].current_mw, f"{name} (board input rail)"
        if self.rails:
            names = list(self.rails)
            return (sum(r.current_mw for r in self.rails.values()),
                    f"sum of {'+'.join(names)} (tegrastats prints no input rail on this board; module rails only, "
                    f"carrier board not included)")
        return None, "no power rails in the tegrastats line (the board has no INA3221 rails, or tegrastats lacks root)"

    def channels(self) -> dict[str, float]:
        """Channel name -> value for the sampler's timeline (units in the names)."""
        out: dict[str, float] = {}
        total, _how = self.power_total()
        if total is not None:
            out["power_total_mw"] = total
        for name, rail in self.rails.items():
            out[f"rail_{name}_mw"] = rail.current_mw
        gpu = self._load(_GPU_LOADS)
        if gpu is not None:
            if gpu.load_pct is not None:
                out["gpu_load_pct"] = gpu.load_pct
            if gpu.freq_mhz is not None:
                out["gpu_freq_mhz"] = gpu.freq_mhz
        if "GR3D2_FREQ" in self.loads and self.loads["GR3D2_FREQ"].load_pct is not None:
            out["gpu2_load_pct"] = self.loads["GR3D2_FREQ"].load_pct  # type: ignore[assignment]
        emc = self._load(_EMC_LOADS)
        if emc is not None:
            if emc.load_pct is not None:
                out["emc_load_pct"] = emc.load_pct
            if emc.freq_mhz is not None:
                out["emc_freq_mhz"] = emc.freq_mhz
        if (util := self.cpu_util_pct) is not None:
            out["cpu_util_pct"] = util
        for zone, value in self.temps_c.items():
            out[f"temp_{_zone_key(zone)}_c"] = value
        if self.ram_used_mib is not None:
            out["ram_used_mib"] = self.ram_used_mib
        return out


def _zone_key(zone: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", zone.lower()).strip("_") or "zone"


def _mib(value: str, unit: str) -> float:
    return float(value) * _UNIT_TO_MIB[unit]


def _cpu_cores(body: str, shared_mhz: str | None) -> tuple[list[CpuCore], list[str]]:
    cores: list[CpuCore] = []
    bad: list[str] = []
    for entry in body.split(","):
        entry = entry.strip()
        if entry == "off":
            cores.append(CpuCore(None, None, online=False))
            continue
        m = re.fullmatch(r"(\d+(?:\.\d+)?)%(?:@(\d+))?", entry)
        if m is None:
            bad.append(f"CPU entry {entry!r}")
            continue
        mhz = m.group(2) or shared_mhz
        cores.append(CpuCore(float(m.group(1)), float(mhz) if mhz else None, online=True))
    return cores, bad


def parse_line(line: str) -> TegrastatsSample:
    """Parse one tegrastats line. Never raises: what it cannot read goes to `unknown`."""
    text = line.rstrip("\r\n")
    sample = TegrastatsSample(raw=text)
    pos = 0
    m0 = _SPACE.match(text, pos)
    if m0:
        pos = m0.end()
    m = _TIMESTAMP.match(text, pos)
    if m:
        sample.timestamp = m.group(1)
        pos = m.end()
    while pos < len(text):
        space = _SPACE.match(text, pos)
        if space:
            pos = space.end()
            continue
        for kind, pattern in _PATTERNS:
            m = pattern.match(text, pos)
            if m is not None:
                _apply(sample, kind, m)
                pos = m.end()
                break
        else:
            end = text.find(" ", pos)
            end = len(text) if end < 0 else end
            sample.unknown.append(text[pos:end])
            pos = end
    return sample


def _apply(s: TegrastatsSample, kind: str, m: re.Match[str]) -> None:
    g = m.groups()
    if kind == "ram":
        s.ram_used_mib, s.ram_total_mib = _mib(g[0], g[2]), _mib(g[1], g[2])
    elif kind == "swap":
        s.swap_used_mib, s.swap_total_mib = _mib(g[0], g[2]), _mib(g[1], g[2])
        if g[3] is not None:
            s.swap_cached_mib = _mib(g[3], g[4])
    elif kind == "iram":
        s.iram_used_kib, s.iram_total_kib = _mib(g[0], g[2]) * 1024.0, _mib(g[1], g[2]) * 1024.0
    elif kind == "cpu":
        cores, bad = _cpu_cores(g[0], g[1])
        s.cpus = cores
        s.unknown.extend(bad)
    elif kind == "mts":
        s.mts_fg_pct, s.mts_bg_pct = float(g[0]), float(g[1])
    elif kind == "edp":
        s.edp_limit_mhz = float(g[0])
    elif kind == "load":
        freqs: tuple[float, ...] = ()
        if g[2]:
            freqs = tuple(float(f) for f in g[2].strip("[]").split(",") if f)
        s.loads[g[0]] = EngineLoad(float(g[1]), freqs)
    elif kind == "at_freq":
        s.loads[g[0]] = EngineLoad(None, (float(g[1]),))
    elif kind == "rail":
        if g[0] in NOT_CONNECTED_RAILS:
            return
        s.rails[g[0]] = Rail(float(g[1]), float(g[2]))
    elif kind == "temp":
        value = float(g[1])
        if value <= SENSOR_OFF_C:
            s.sensors_off.append(g[0])
        else:
            s.temps_c[g[0]] = value
    elif kind == "clock":
        s.clocks_mhz[g[0]] = float(g[1])
    elif kind == "clock_off":
        s.clocks_mhz[g[0]] = None


# --------------------------------------------------------------------------- sampler

def _resolve(binary: str) -> str | None:
    if os.sep in binary:
        return binary if os.path.isfile(binary) and os.access(binary, os.X_OK) else None
    return shutil.which(binary)


def tegrastats_status(binary: str = "tegrastats") -> str | None:
    """None when tegrastats can be started here, else why not (for `edgebench doctor`)."""
    if _resolve(binary) is None:
        where = f"{binary} is not an executable file" if os.sep in binary else f"{binary!r} is not on PATH"
        return (f"{where}: tegrastats ships with L4T/JetPack on Jetson boards (/usr/bin/tegrastats) "
                "and exists nowhere else")
    return None


_CHANNEL_UNITS = (("_mw", "mW"), ("_pct", "%"), ("_mhz", "MHz"), ("_c", "C"), ("_mib", "MiB"))


def _unit(name: str) -> str:
    for suffix, unit in _CHANNEL_UNITS:
        if name.endswith(suffix):
            return unit
    return ""


class TegrastatsSampler(SamplerBase):
    """Runs `<binary> --interval <ms>` in a subprocess and parses every line it prints.

    One-shot: start() once, stop() once. start() waits (bounded) for the first line and stop()
    for one more line, so the timeline spans the measured window. Only the process it started
    is ever signalled. Process ids are ignored: tegrastats is system-wide.
    """

    name = "tegrastats"
    power_scope = "soc-total"  # the INA3221 total: the input rail, or a sum of rails (the timeline's note says)
    row_channels = (RowChannel("cpu_util_pct_mean", "cpu_util_pct"),
                    RowChannel("gpu_util_pct_mean", "gpu_load_pct"),  # GR3D
                    RowChannel("gpu_temp_c_max", "temp_gpu_c", "max"),
                    RowChannel("gpu_sm_clock_mhz_mean", "gpu_freq_mhz"))

    @classmethod
    def missing(cls, sysfs_root: object = "/") -> str | None:
        return tegrastats_status()

    @classmethod
    def create(cls, interval_s: float, sysfs_root: object = "/", placements: Sequence[str] = ()) -> TegrastatsSampler:
        """sysfs_root does not apply: tegrastats reads the live system."""
        return cls(interval_s=interval_s)

    def __init__(self, interval_s: float = 0.1, binary: str = "tegrastats", line_timeout_s: float | None = None) -> None:
        super().__init__(interval_s)
        self.interval_ms = max(1, int(round(interval_s * 1000)))
        self.interval_s = self.interval_ms / 1000.0
        self.binary = binary
        self.line_timeout_s = line_timeout_s if line_timeout_s is not None else max(2.0, 5 * self.interval_s)
        self.samples: list[tuple[int, TegrastatsSample]] = []
        self.raw_lines: list[str] = []
        self.start_ns: int | None = None
        self.stop_ns: int | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self._cond = threading.Condition()
        self._stderr = ""
        self._notes: list[str] = []

    def _start(self) -> None:
        path = _resolve(self.binary)
        if path is None:
            raise RuntimeError(tegrastats_status(self.binary) or f"{self.binary} not found")
        self.start_ns = time.monotonic_ns()
        self._proc = subprocess.Popen(
            [path, "--interval", str(self.interval_ms)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL, text=True, bufsize=1, start_new_session=True,
        )
        self._thread = threading.Thread(target=self._read, name="edgebench-tegrastats", daemon=True)
        self._thread.start()
        if not self._wait_for_lines(1):
            self._notes.append(f"tegrastats printed no line within {self.line_timeout_s:g} s of start")

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            t_ns = time.monotonic_ns()
            if not line.strip():
                continue
            sample = parse_line(line)
            with self._cond:
                self.raw_lines.append(sample.raw)
                self.samples.append((t_ns, sample))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _wait_for_lines(self, count: int) -> bool:
        deadline = time.monotonic() + self.line_timeout_s
        with self._cond:
            while len(self.samples) < count:
                left = deadline - time.monotonic()
                if left <= 0 or (self._proc is not None and self._proc.poll() is not None
                                 and not (self._thread and self._thread.is_alive())):
                    return len(self.samples) >= count
                self._cond.wait(min(left, 0.05))
        return True

    def _stop(self) -> Timeline:
        assert self._proc is not None and self._thread is not None
        with self._cond:
            have = len(self.samples)
        if self._proc.poll() is None and not self._wait_for_lines(have + 1):
            self._notes.append("tegrastats printed no line after stop() was called; the last sample may end "
                               "before the measured window")
        self.stop_ns = time.monotonic_ns()
        proc, self._proc = self._proc, None
        code = proc.poll()
        if code is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=2.0)
        else:
            self._notes.append(f"tegrastats exited by itself with code {code} before stop()")
        if proc.stderr is not None:
            self._stderr = proc.stderr.read() or ""
            proc.stderr.close()
        self._thread.join(timeout=2.0)
        self._thread = None
        return self._timeline()

    def _timeline(self) -> Timeline:
        tl = Timeline(self.name, interval_s=self.interval_s)
        tl.notes.extend(self._notes)
        unknown: dict[str, None] = {}
        off: dict[str, None] = {}
        how_total: dict[str, None] = {}
        for t_ns, sample in self.samples:
            values = sample.channels()
            for name in values:
                if name not in tl.channels:
                    tl.add_channel(Channel(name, _unit(name)))
            tl.append(t_ns, values)
            unknown.update(dict.fromkeys(sample.unknown))
            off.update(dict.fromkeys(sample.sensors_off))
            how_total[sample.power_total()[1]] = None
        if how_total:
            tl.notes.append(f"power_total_mw: {'; '.join(how_total)}")
        if unknown:
            tl.notes.append(f"tegrastats tokens not understood (ignored): {', '.join(list(unknown)[:20])}")
        if off:
            tl.notes.append(f"thermal sensors reported off (-256C, left out): {', '.join(off)}")
        if len(tl.t_ns) >= 3:
            gaps_ms = [(b - a) / 1e6 for a, b in zip(tl.t_ns, tl.t_ns[1:])]
            tl.notes.append(f"tegrastats lines arrived every {statistics.median(gaps_ms):.1f} ms (median) "
                            f"at --interval {self.interval_ms}")
        if not self.samples:
            tl.notes.append("tegrastats produced no parsable line" + (f"; stderr: {self._stderr.strip()[-300:]}"
                                                                      if self._stderr.strip() else ""))
        elif self._stderr.strip():
            tl.notes.append(f"tegrastats stderr: {self._stderr.strip()[-300:]}")
        return tl

