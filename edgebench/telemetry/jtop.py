"""jtop sampler: Jetson telemetry from the jtop service (jetson-stats), through its real client.

The jtop service reads the board on its own timer; every client gets each tick. This sampler
attaches an observer to a `jtop(interval=...)` client and records every tick once:

  power_total_mw, power_<domain>_mw   from the power-monitor rails as jetson_rails maps this board (the
                                      note says which rail(s) make the total and whether it is the board
                                      input); /sys/class/power_supply sensors that jtop 4.2+ lists among
                                      its rails (a USB-C supply, ...) never count, with a note
  rail_<NAME>_mw                      every rail jtop reports (its `tot` rail included by name)
  power_jtop_tot_mw                   jtop's own `tot`: POM_5V_IN or VDD_IN (jetson-stats 4.2-7.2.0; 7.2.2
                                      tries Thor's VIN first), else its sum of ALL its rails, supplies too
  gpu_util_pct, gpu_freq_mhz          first GPU: sysfs load / 10, current devfreq frequency
  emc_util_pct, emc_freq_mhz          memory controller, where the board exposes it
  temp_<zone>_c                       every online thermal zone
  nvpmodel_id, jetson_clocks_on       the power mode and jetson_clocks state (1/0), also in notes

jtop's `avg` is not a time average (each tick it is (power + previous avg) // 2), so it is never
used: the row integrates power_total_mw over its own window.

Timing: the service's interval wins over the one asked for when another client is connected, so the
timeline's interval_s is `jetson.interval`, with a note when it differs from the request (and
requests under MIN_INTERVAL_S = 0.5 s, the maintainer's advice, are raised to it with a note). Each
tick is stamped from the service's /proc/uptime (CLOCK_BOOTTIME) mapped onto time.monotonic_ns, the
runner's clock; when that mapping is implausible the receipt time is used, with a note. stop() waits
for the first tick after it was called, so the timeline spans the measured window.

Failures never raise out of start()/stop(): the service not active, permission denied on its
socket, a client/service version mismatch, or the connection lost mid-window each become a note
starting with FAULT_PREFIX that names the cause and the fix; the sweep turns such a note into an
`invalid` row and goes on. Samples taken before a loss are kept.
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from typing import Any

from edgebench.errors import exc_message, exc_text
from edgebench.telemetry.base import Channel, RowChannel, SamplerBase, Timeline
from edgebench.telemetry.jetson_rails import RailMap, power_supply_rails, rail_channel, rail_map

FAULT_PREFIX = "telemetry: "  # a note starting so makes the row invalid (see edgebench.pipeline.sweep.telemetry_faults)
MIN_INTERVAL_S = 0.5
JTOP_SOCKET = "/run/jtop.sock"
INSTALL_HINT = "sudo pip3 install -U jetson-stats (installs the client and jtop.service), then reboot"
CONNECT_TIMEOUT_S = 10.0  # + 3 intervals: jtop's own waits are 3 intervals per step
STOP_WAIT_INTERVALS = 3.0  # stop() waits this many intervals (+0.5 s) for the tick that closes the window


def jtop_status() -> str | None:
    """None when the jtop client imports and the service socket exists, else why not (for doctor)."""
    import importlib.util

    if importlib.util.find_spec("jtop") is None:
        return f"the jtop client is not installed (pip install jetson-stats); on the board: {INSTALL_HINT}"
    if not os.path.exists(JTOP_SOCKET):
        return (f"jtop service not active: {JTOP_SOCKET} does not exist; fix: sudo systemctl restart jtop.service "
                f"(if it is not installed: {INSTALL_HINT})")
    return None


def explain_jtop_error(exc: BaseException) -> str:
    """jtop's exception as 'cause; fix' for a timeline note."""
    text = " ".join(exc_message(exc).split())
    low = text.lower()
    if "not active" in low:
        return (f"jtop service is not active ({JTOP_SOCKET} missing or nobody listening); fix: "
                f"sudo systemctl restart jtop.service, or if not installed: {INSTALL_HINT} [jtop: {text}]")
    if "can't access" in low or isinstance(exc, PermissionError):
        return (f"jtop permission denied on {JTOP_SOCKET} (this user is not in group 'jtop'); fix: "
                f"sudo usermod -aG jtop $USER and log in again, or run as root [jtop: {text}]")
    if "mismatch of python versions" in low:
        return ("jtop client and service run different Python versions (their queues do not interoperate); fix: "
                f"install jetson-stats for the Python that runs edgebench as well, {INSTALL_HINT} [jtop: {text}]")
    if "authentication" in low:
        return ("jtop client could not authenticate with the jtop service (client and service from different "
                f"jetson-stats installs); fix: {INSTALL_HINT}, or sudo systemctl restart jtop.service [jtop: {text}]")
    if "mismatch version" in low:
        return ("jtop client/service version mismatch; fix: install the same jetson-stats for both, "
                f"sudo pip3 install -U jetson-stats && sudo systemctl restart jtop.service [jtop: {text}]")
    if "lost connection" in low or isinstance(exc, (EOFError, ConnectionError, BrokenPipeError)):
        return (f"jtop lost connection with the jtop service ({type(exc).__name__}: {text}); fix: check "
                "`systemctl status jtop.service` and `journalctl -u jtop` (it died or was restarted)")
    return f"jtop failed: {type(exc).__name__}: {text}"


def _connect(client: Any, timeout_s: float) -> BaseException | None:
    """client.start() (connect, version check, first tick) in a fresh thread; the error, if any.

    multiprocessing's manager proxies cache one connection per (socket address, thread). After the
    service restarts, a thread that talked to the old one would reuse its dead connection
    (BrokenPipeError) for every later client; a new thread has no cache, so each start() connects anew.
    """
    box: list[BaseException] = []

    def run() -> None:
        try:
            client.start()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box.append(exc)

    t = threading.Thread(target=run, name="edgebench-jtop-connect", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        return TimeoutError(f"no answer from the jtop service within {timeout_s:.0f} s")
    return box[0] if box else None


def _zone(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "zone"


class JtopSampler(SamplerBase):
    """Telemetry of a Jetson through the jtop service. One-shot: start() once, stop() once.
    Process ids are ignored: jtop reports the whole board.

    The jtop client always talks to /run/jtop.sock, whatever sysfs_root; sysfs_root is where the sampler looks
    up which of jtop's rails are /sys/class/power_supply sensors."""

    name = "jtop"
    power_scope = "soc-total"  # the INA3221 total: the module input, or a sum of rails (the timeline's note says)
    row_channels = (RowChannel("gpu_util_pct_mean", "gpu_util_pct"),
                    RowChannel("gpu_temp_c_max", "temp_gpu_c", "max"),
                    RowChannel("gpu_sm_clock_mhz_mean", "gpu_freq_mhz"))

    @classmethod
    def missing(cls, sysfs_root: object = "/") -> str | None:
        return jtop_status()  # the socket path is fixed by jtop, whatever the root

    def __init__(self, interval_s: float = MIN_INTERVAL_S, min_interval_s: float = MIN_INTERVAL_S,
                 sysfs_root: str | os.PathLike[str] = "/") -> None:
        super().__init__(interval_s)
        self.sysfs_root = sysfs_root
        self._supplies: frozenset[str] = frozenset()
        self.interval_requested_s = float(interval_s)
        self.min_interval_s = float(min_interval_s)
        self.device_info: dict[str, Any] = {}
        self._client: Any = None
        self._timeline: Timeline | None = None
        self._lock = threading.Lock()
        self._tick = threading.Condition(self._lock)
        self._rails: RailMap | None = None
        self._last_uptime: float | None = None
        self._offset_ns: int | None = None  # CLOCK_BOOTTIME - CLOCK_MONOTONIC
        self._stamp_note = False
        self._nvp: tuple[Any, Any] | None = None
        self._jc: bool | None = None
        self._observer_failed = False
        self._accepting = True

    # ------------------------------------------------------------------ start / stop (after SamplerBase's guards)

    def _start(self) -> None:
        tl = self._timeline = Timeline(self.name)
        ask = max(self.interval_requested_s, self.min_interval_s)
        if ask != self.interval_requested_s:
            tl.notes.append(f"jtop interval raised from {self.interval_requested_s:g} s to {ask:g} s "
                            f"(the jtop maintainer advises >= {self.min_interval_s:g} s)")
        try:
            from jtop import jtop  # type: ignore[import-untyped]
        except ImportError as exc:
            tl.notes.append(f"{FAULT_PREFIX}jtop client not importable ({exc}); fix: pip install jetson-stats")
            return
        self._supplies = power_supply_rails(os.fspath(self.sysfs_root))  # the jtop service reads the same /sys
        if hasattr(time, "CLOCK_BOOTTIME"):
            self._offset_ns = time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.monotonic_ns()
        client = jtop(interval=ask)
        # attached before start(): jtop's thread iterates its observer set without a lock, so adding to
        # it later could break that thread; start() itself delivers the first tick to _on_tick
        client.attach(self._on_tick)
        error = _connect(client, timeout_s=CONNECT_TIMEOUT_S + 3 * ask)
        if error is not None:
            with self._lock:
                self._accepting = False
                tl.t_ns.clear()  # nothing half-delivered from a client that failed to start
                tl.values = {n: [] for n in tl.values}
            tl.notes.append(FAULT_PREFIX + explain_jtop_error(error))
            self._close(client)
            return
        self._client = client
        used = float(client.interval)
        tl.interval_s = used
        if abs(used - ask) > 1e-9:
            tl.notes.append(f"jtop service runs at {used:g} s, not the {ask:g} s asked for (another client set "
                            "it; the service keeps its rate while any client is connected)")
        self.device_info = self._describe(client)
        tl.notes.append("jtop: " + ", ".join(f"{k} {v}" for k, v in self.device_info.items() if k != "board"))
        with self._lock:
            self._record(client)  # a no-op when _on_tick already has this tick

    def _stop(self) -> Timeline:
        tl, client = self._timeline, self._client
        assert tl is not None
        if client is None:  # start() failed: the fault note is already there
            return tl
        stop_ns = time.monotonic_ns()
        interval = tl.interval_s or self.min_interval_s
        deadline = stop_ns + int((STOP_WAIT_INTERVALS * interval + 0.5) * 1e9)
        with self._tick:
            while not (tl.t_ns and tl.t_ns[-1] >= stop_ns) and client.is_alive():
                left = (deadline - time.monotonic_ns()) / 1e9
                if left <= 0:
                    break
                self._tick.wait(min(left, 0.1))
            closed = bool(tl.t_ns) and tl.t_ns[-1] >= stop_ns
            self._accepting = False  # not client.detach(): jtop iterates its observer set unlocked in its thread
        error = self._client_error(client)
        if error is not None:
            last = (f"{(tl.t_ns[-1] - stop_ns) / 1e9:+.2f} s from stop()" if tl.t_ns else "none")
            tl.notes.append(f"{FAULT_PREFIX}{explain_jtop_error(error)}; kept {len(tl.t_ns)} samples "
                            f"(last at {last}), the timeline ends early")
        elif not closed:
            tl.notes.append(f"{FAULT_PREFIX}jtop sent no tick within {(deadline - stop_ns) / 1e9:.1f} s after stop() "
                            f"(service stalled?); kept {len(tl.t_ns)} samples; fix: check `systemctl status jtop.service`")
        self._close(client)
        return tl

    # ------------------------------------------------------------------ ticks

    def _on_tick(self, client: Any) -> None:
        """Runs in the jtop client's thread; must never raise (jtop would stop delivering)."""
        try:
            with self._tick:
                if self._accepting and self._record(client):
                    self._tick.notify_all()
        except Exception as exc:  # noqa: BLE001
            if not self._observer_failed and self._timeline is not None:
                self._observer_failed = True
                self._timeline.notes.append(f"{FAULT_PREFIX}jtop sample could not be decoded: "
                                            f"{exc_text(exc)} (later ticks still tried)")

    def _record(self, client: Any) -> bool:
        """Append the client's current data unless it is the tick already recorded. Caller holds the lock."""
        tl = self._timeline
        assert tl is not None
        receipt_ns = time.monotonic_ns()
        uptime = float(client.uptime.total_seconds())
        if uptime == self._last_uptime:
            return False  # the client re-delivers stale data when its own timeout is shorter than the service's
        self._last_uptime = uptime
        sample: dict[str, float] = {}
        self._power(client.power or {}, sample)
        gpus = list(client.gpu.values())
        if gpus:
            status, freq = gpus[0].get("status", {}), gpus[0].get("freq", {})
            self._put(tl, sample, "gpu_util_pct", "%", status.get("load"))
            self._put(tl, sample, "gpu_freq_mhz", "MHz", freq.get("cur"), 1e-3)
        emc = client.memory.get("EMC") or {}
        if emc:
            self._put(tl, sample, "emc_util_pct", "%", emc.get("val"))
            self._put(tl, sample, "emc_freq_mhz", "MHz", emc.get("cur"), 1e-3)
        for zone, d in (client.temperature or {}).items():
            if d.get("online", True):
                self._put(tl, sample, f"temp_{_zone(zone)}_c", "C", d.get("temp"))
        self._modes(client, tl, sample)
        tl.append(self._stamp(uptime, receipt_ns, tl), sample)
        return True

    def _power(self, power: dict[str, Any], sample: dict[str, float]) -> None:
        tl = self._timeline
        assert tl is not None
        rails = {n: float(d["power"]) for n, d in power.get("rail", {}).items() if d.get("online", True)}
        tot = power.get("tot") or {}
        if "name" in tot and "power" in tot:
            rails[tot["name"]] = float(tot["power"])
        monitors = {n: v for n, v in rails.items() if n not in self._supplies}
        if self._rails is None and monitors:
            self._rails = rail_map(list(monitors))
            tl.notes.append(f"jtop {self._rails.note}")
            supplies = sorted(set(rails) - set(monitors))
            if supplies:
                tl.notes.append(
                    f"jtop also lists {', '.join(supplies)} from /sys/class/power_supply (not a power-monitor rail): "
                    "kept as rail_*_mw, left out of power_total_mw"
                    + ("" if "name" in tot else "; jtop's own tot (power_jtop_tot_mw) is a sum that includes it"))
        if "power" in tot:
            self._put(tl, sample, "power_jtop_tot_mw", "mW", tot["power"])
        for n, v in rails.items():
            self._put(tl, sample, rail_channel(n), "mW", v)
        if self._rails is not None:
            for ch, v in self._rails.derive(monitors).items():
                self._put(tl, sample, ch, "mW", v)

    def _modes(self, client: Any, tl: Timeline, sample: dict[str, float]) -> None:
        nvp = client.nvpmodel
        if nvp is not None:
            now = (nvp.id, nvp.name)
            if self._nvp is not None and now != self._nvp:
                tl.notes.append(f"jtop: nvpmodel changed from {self._nvp[1]} (id {self._nvp[0]}) to {now[1]} "
                                f"(id {now[0]}) during sampling")
            self._nvp = now
            self._put(tl, sample, "nvpmodel_id", "id", now[0])
        jc = client.jetson_clocks
        if jc is not None:
            on = bool(jc)
            if self._jc is not None and on != self._jc:
                tl.notes.append(f"jtop: jetson_clocks turned {'on' if on else 'off'} during sampling")
            self._jc = on
            self._put(tl, sample, "jetson_clocks_on", "bool", float(on))

    @staticmethod
    def _put(tl: Timeline, sample: dict[str, float], name: str, unit: str, value: Any, scale: float = 1.0) -> None:
        if value is None:
            return
        try:
            v = float(value) * scale
        except (TypeError, ValueError):
            return
        tl.add_channel(Channel(name, unit))
        sample[name] = v if math.isfinite(v) else math.nan

    def _stamp(self, uptime_s: float, receipt_ns: int, tl: Timeline) -> int:
        """The tick's time on the monotonic clock: the service's uptime when plausible, else receipt."""
        if self._offset_ns is not None:
            t_ns = int(uptime_s * 1e9) - self._offset_ns
            lag_s = (receipt_ns - t_ns) / 1e9
            if -0.05 <= lag_s <= 2 * (tl.interval_s or self.min_interval_s) + 1.0:
                return min(t_ns, receipt_ns)
            if not self._stamp_note:
                self._stamp_note = True
                tl.notes.append(f"jtop: service uptime is {lag_s:+.2f} s off this clock (another time namespace?): "
                                "samples stamped on receipt instead")
        return receipt_ns

    # ------------------------------------------------------------------ helpers

    def _describe(self, client: Any) -> dict[str, Any]:
        info: dict[str, Any] = {"interval_s": float(client.interval), "interval_requested_s": self.interval_requested_s}
        nvp = client.nvpmodel
        info["nvpmodel"] = f"{nvp.name} (id {nvp.id})" if nvp is not None else "unavailable"
        jc = client.jetson_clocks
        info["jetson_clocks"] = ("on" if bool(jc) else "off") if jc is not None else "unavailable"
        try:
            hw = client.board.get("hardware", {})
        except Exception:  # noqa: BLE001 - board info is optional
            hw = {}
        info["board"] = {k: hw[k] for k in ("Model", "Module", "L4T", "Jetpack", "Product name") if hw.get(k)}
        return info

    @staticmethod
    def _client_error(client: Any) -> BaseException | None:
        try:
            client.ok(spin=True)  # re-raises what killed the client's reader thread, if anything did
        except Exception as exc:  # noqa: BLE001
            return exc
        if not client.is_alive():
            return ConnectionError("the jtop client's reader thread ended")
        return None

    @staticmethod
    def _close(client: Any) -> None:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - closing a broken client must not hide the recorded fault
            pass
