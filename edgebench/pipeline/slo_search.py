"""How many fixed-rate streams does this device serve with p99 latency under an SLO?

"How many 30 fps cameras does this board serve": every stream is one instance (its own process, or a
thread in streams mode) with arrivals at a fixed rate (run.rate_hz); a probe with n streams is one
ordinary row (scenario slo-search) whose p99 latency counts queueing. The row's slo_verdict
(runner.load.slo_fields) is met, missed, unmeasured (too few inferences for a p99 judgement: never a miss)
or failed. A probe's window runs until it holds the P99_FLOOR inferences a p99 needs (min_inferences is
raised to it), within run.max_duration_s.

The search doubles n from the sweep's smallest instance count until a probe misses (or run.max_streams is
reached), then bisects between the last n that met and the first that missed, assuming more streams never
lower p99. An unmeasured probe neither meets nor misses: the doubling goes on past it, the bisection looks
below it and the answer says it is a lower bound. A skipped probe (the backend or MPS cannot run here)
ends that search with its reason.

Each stream count is measured run.slo_repeats times (R, default 3; --slo-repeats), each repeat a row of its own
with processes of its own (the warm pool never gives a worker a configuration it ran in another repeat, whatever
the windows; it keeps count x R workers, so the next count's repeats reuse them and start only the extra streams)
and, under random or poisson arrivals, phases / gaps drawn afresh (the arrival seed depends on the repeat). A count is accepted (met) only when
every repeat met the SLO; the first repeat that does not meet ends that count (its verdict is the count's), so only
counts that meet cost R rows. The probe rows of search k (run.repeats: k = the plan's repeat) carry repeat
k * R + j for their j-th repeat. The answer lists each repeat's p99 at the answer and at the first count that failed.

A count meets only over a horizon (run.slo_horizon_s, --horizon-s; 600 s as MLPerf Server): its p99 plus the
latency growth its window cannot exclude (the latency trend's upper bound x horizon, runner.load.slo_verdict)
must stay within the SLO. A probe whose window cannot tell (p99 meets, the bound breaks the SLO, the growth is not
proven) is run again with a longer window (runner.load.horizon_window_s: at least twice as long, at most
run.max_duration_s), each window a row of its own; past max_duration_s the count stays `unmeasured`, never met.
A later repeat of the count starts at the window the last one needed (for one that met: the window its interval says
would have sufficed, runner.load.enough_window_s, so a stall that sent one window long does not send every later
one), a larger count at the longest a smaller one needed.

Capacity first. Before its probes a search measures what the device serves: a closed-loop row (every instance
issues its next inference when the last ends) at the search's first count, the sweep's smallest instance count.
Its throughput bounds what more streams can be served at, assuming the device is saturated there (more streams
never serve more). A closed loop at many more processes than the host has cores measured far less than fewer
streams are served at in the open loop (a serial null device on 2 cores: 232/s at 8 processes, 450/s served at
5 streams), so the bound is taken where the search starts. A probe whose backlog grew (its reason: the backlog is
shown to grow, runner.backlog_growth, or the offered rate was not sustained) adds its achieved rate, what the device
served at that count. The search never probes a count whose offered rate (count x rate_hz) exceeds the lowest of these,
and bisects only between counts it admits. The count just above the answer is then measured once all the same (a
capacity rests on that assumption; the probe is the measurement, and what the report shows); if it meets, the
capacity was wrong, is dropped with a note, and the search goes on above it.

The reference is measured again (issue 54). A busy host makes a closed loop read low, and a reference that read low
unnoticed is part of every verdict it bounds. So after its probes the search runs the same closed loop again (repeat
k * R + 1, a row of its own; with R = 1 that is search k + 1's closed loop before its probes, which reads it rather than
measuring it twice) and compares: when the two readings differ by more than both their jitter explains at 99% (each
row's stability_bound_pct over its sub-windows; at least 1%, at most 3%), or either closed loop ran on a busy host
(its row's host_busy: a host busy for the whole search lowers both alike), the line's `capacity_reference` says
`unsure (<signed % moved>)` and a note names the readings (`capacity reference unsure: ...`); else
`steady (<signed % moved>)`. slo_search.csv gives `capacity_after_per_s` beside `capacity_per_s`.

Every distinct config of the plan with its instance count folded out is one search: backend option sets
(eager / cuda_graph ...) and GPU sharing modes (time-slicing / mps) are searched one by one and reported
side by side (slo_search.csv, one line each, and the console table). A search whose probes show p99
falling as streams are added says so (`monotonic` false and a note): its answer rests on that assumption.
Each probe is a row of results.csv (fsynced as usual, so --resume reuses finished probes).
"""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.backends.registry import get_backend
from edgebench.pipeline.plan import PlannedRun, gpu_sharing_skip_reason, threads_for
from edgebench.pipeline.slo_decide import (
    Capacity,
    Probe,
    SloResult,
    describe_probes,
    holds_at,
    monotonic_note,
    p99_list,
    reference_busy,
    reference_moved_pct,
    reference_note,
    repeated_probe,
    search_max_streams,
)
from edgebench.pipeline.sweep import SweepSession, run_sweep, sweep_session
from edgebench.runner.backlog import GROWTH_MARK, OLD_GROWTH_MARK
from edgebench.runner.load import P99_FLOOR, early_stopping_window_s, enough_window_s, horizon_window_s
from edgebench.runner.metrics import NOT_SUSTAINED_MARK, stability_z
from edgebench.telemetry.host_share import busy_notes

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.backends.base import Env
    from edgebench.config.profile import Profile
    from edgebench.config.run_config import RunConfig
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.results.store import ResultsStore

SEARCH_COLUMNS = ("model", "backend", "precision", "batch", "device", "mode", "options", "gpu_sharing",
                  "rate_per_stream_hz", "arrival", "search", "slo_ms", "repeats_per_count", "max_streams_under_slo",
                  "answer", "capped_at_max_streams", "p99_ms_at_max", "p99_ms_repeats_at_max", "first_missed_streams",
                  "p99_ms_at_first_miss", "p99_ms_repeats_at_first_miss", "monotonic", "horizon_s", "holds_at_max",
                  "capacity_per_s", "capacity_max_streams", "capacity_source", "capacity_after_per_s",
                  "capacity_reference", "notes", "probes")


def backlog_grew(row: dict[str, Any]) -> bool:
    """The row's reason says its backlog grew: shown by its sign-flip test (or, in a row written before issue 54, by
    its latency trend), or the offered rate was not sustained (runner.backlog.growth_reason,
    runner.metrics.overload_reason)."""
    reason = row.get("reason") or ""
    return GROWTH_MARK in reason or OLD_GROWTH_MARK in reason or NOT_SUSTAINED_MARK in reason


def probe_of(streams: int, row: dict[str, Any], max_duration_s: float | None = None) -> Probe:
    """A probe from a typed row (results.reader): one just assembled, or one of store.records(). With
    `max_duration_s`, an ok row unmeasured for want of a longer window gets the window that could tell
    (runner.load.horizon_window_s) in `longer_s`."""
    status = row.get("status") or ""
    verdict = row.get("slo_verdict") or ""
    if status == "skipped":
        verdict = "skipped"
    elif not verdict:  # a row written before slo_verdict existed
        verdict = "met" if row.get("slo_met") is True else "missed"
    achieved = row.get("achieved_rate_hz")
    hi = row.get("latency_trend_hi_ms_per_s")
    window = row.get("window_s") or 0.0
    longer = None
    if verdict == "unmeasured" and status == "ok" and max_duration_s is not None and row.get("slo_ms") is not None:
        longer = horizon_window_s(row.get("latency_ms_p99"), row["slo_ms"], row.get("slo_horizon_s") or 0.0,
                                  row.get("latency_trend_ms_per_s"), row.get("latency_trend_lo_ms_per_s"), hi,
                                  window, max_duration_s)
        stopping = early_stopping_window_s(row.get("latency_ms_p99"), row["slo_ms"], row.get("slo_queries"),
                                           row.get("slo_overlatency"), window, max_duration_s)
        if stopping is not None:
            longer = stopping if longer is None else max(longer, stopping)
    return Probe(streams, verdict, row.get("latency_ms_p99"), status, row.get("reason") or "",
                 served_hz=achieved if achieved is not None and backlog_grew(row) else None,
                 trend_hi_ms_per_s=hi, longer_s=longer, windows_s=[window] if window else [])


def probe_config(base: RunConfig, streams: int, threads: int, repeat: int | None = None,
                 duration_s: float | None = None) -> RunConfig:
    """The base config with `streams` copies of its first placement and a window that runs until it holds the
    inferences a p99 needs (within max_duration_s); `repeat` (the probe's repeat number) replaces the base's;
    `duration_s` (a longer window for the horizon) the base's minimum window."""
    return dataclasses.replace(base, placements=(base.placements[0],) * streams, threads_per_instance=threads,
                               min_inferences=max(base.min_inferences, P99_FLOOR),
                               repeat=base.repeat if repeat is None else repeat,
                               duration_s=base.duration_s if duration_s is None else
                               min(base.max_duration_s, max(base.duration_s, duration_s)))


def capacity_config(base: RunConfig, streams: int, threads: int, repeat: int) -> RunConfig:
    """The closed-loop row a search learns its capacity from: `streams` instances, no arrivals, no SLO."""
    return dataclasses.replace(base, placements=(base.placements[0],) * streams, threads_per_instance=threads,
                               rate_hz=None, slo_ms=None, repeat=repeat)


def capacity_of(streams: int, row: dict[str, Any] | None, sub_windows: int = 5,
                when: str = "") -> tuple[Capacity | None, str]:
    """(the capacity a closed-loop row measured, None and why not): its inferences per second over its window, with
    the standard error its own jitter gives (stability_bound_pct / z over `sub_windows`, the row's jitter sigma, over
    sqrt(sub_windows)); `when` ('after the probes') is added to its source."""
    label = f"closed loop at {streams} streams{f' {when}' if when else ''}"
    if row is None:
        return None, f"no capacity: the {label} wrote no row"
    inferences, window = row.get("inferences"), row.get("window_s")
    if row.get("status") != "ok" or not inferences or not window:
        return None, (f"no capacity: the {label} is {row.get('status')} ({row.get('reason') or 'no reason'})"
                      f"{'' if when else '; the search probes without one'}")
    bound = row.get("stability_bound_pct")
    se = bound / stability_z(sub_windows) / math.sqrt(sub_windows) if bound is not None else None
    busy = ""
    if row.get("host_busy") is True:
        notes = busy_notes(row.get("reason"))
        taken = row.get("cpu_taken_by_others_pct")
        busy = notes[0] if notes else (f"others took {taken:.0f}% of the CPU its instances could use"
                                        if taken is not None else "busy host")
    return Capacity(inferences / window, label, se, busy), ""


def first_window_s(needed_s: dict[int, float], streams: int) -> float | None:
    """The window a probe at `streams` starts with (None: the config's own), from the windows earlier counts
    needed (`needed_s`: count -> the window its last repeat ran to bound the growth): this count's own, else the
    longest a smaller count needed. Nearer the capacity bounding the growth takes no shorter a window, and every
    window too short costs a row of set-up; whatever its length, a window is judged by the same rule (met only when
    its own interval bounds the growth over the horizon), though another window is another draw."""
    if streams in needed_s:
        return needed_s[streams]
    return max((w for n, w in needed_s.items() if n < streams), default=None)


def search_key(cfg: RunConfig) -> str:
    """Configs that differ only in their instance count belong to one search (option sets and GPU sharing
    modes are different searches)."""
    return probe_config(cfg, 1, 1).config_hash()


def run_slo_searches(planned: list[PlannedRun], profile: Profile, env: Env, run_dir: Path, store: ResultsStore,
                     models: ModelCache, *, on_row: Callable[..., None] | None = None,
                     on_start: Callable[..., None] | None = None, idle_power_w: float | None = None,
                     report: Callable[[str], None] = print) -> list[SloResult]:
    """One search per distinct config of `planned` (instance counts folded), in plan order; returns the answers,
    each with its slo_search.csv line in `record`."""

    groups: dict[str, list[RunConfig]] = {}
    for p in planned:
        groups.setdefault(search_key(p.cfg), []).append(p.cfg)
    max_streams = profile.run.max_streams
    repeats = profile.run.slo_repeats
    results = []
    # one sweep session for every probe of every search, as a grid sweep has for its rows: one warm pool
    # (run.workers: warm), one thermal baseline that cooldown waits for, the power mode restored once at the end;
    # the power modes of the planned configs that are not skipped are checked up front (on --resume too: their
    # probes' hashes differ from theirs); a probe of a config skipped at its planned stream count is switched to
    # its mode when it runs
    with sweep_session(planned, profile, store) as session:
        for cfgs in groups.values():
            results.append(_search(cfgs, profile, env, run_dir, store, models, max_streams, on_row, on_start,
                                   idle_power_w, report, session, repeats))
    return results


def _search(cfgs: list[RunConfig], profile: Profile, env: Env, run_dir: Path, store: ResultsStore,
            models: ModelCache, max_streams: int, on_row: Callable[..., None] | None,
            on_start: Callable[..., None] | None, idle_power_w: float | None, report: Callable[[str], None],
            session: SweepSession, repeats: int = 1) -> SloResult:
    """One search: probes of growing (then bisected) stream counts, each measured up to `repeats` times, its
    slo_search.csv line, its console line."""
    base = cfgs[0]
    assert base.slo_ms is not None and base.rate_hz is not None
    start = min(c.instances for c in cfgs)

    def row_of(cfg: RunConfig, first_repeat: bool = True) -> dict[str, Any] | None:
        skip = get_backend(cfg.backend).supports(cfg, env) or gpu_sharing_skip_reason(cfg)
        # the count's repeats each need processes that never ran it in another repeat: the warm pool keeps
        # instances x repeats, so a later count reuses them instead of starting its own; the later repeats' are
        # started (in parallel) only once the first repeat met: a count that misses at once costs none
        written = run_sweep([PlannedRun(cfg, skip)], profile, run_dir, store, models, on_row=on_row,
                            idle_power_w=idle_power_w, on_start=on_start, session=session,
                            workers_ahead=cfg.instances * (1 if first_repeat else repeats),
                            workers_kept=cfg.instances * repeats)
        if written:
            return written[0]
        done = [r for r in store.records() if r["config_hash"] == cfg.config_hash()]  # --resume: measured before
        return done[-1] if done else None

    window_for: dict[int, float] = {}  # the window a count's last repeat needed: its next repeat starts there

    def measure(n: int, j: int) -> Probe:
        duration = first_window_s(window_for, n)
        windows: list[float] = []
        while True:
            cfg = probe_config(base, n, threads_for(profile, n, env.cpu_count), repeat=base.repeat * repeats + j,
                               duration_s=duration)
            row = row_of(cfg, first_repeat=j == 0)
            probe = probe_of(n, row, base.max_duration_s) if row is not None else \
                Probe(n, "failed", None, "missing", "no row")
            windows += probe.windows_s
            if probe.longer_s is None:
                break
            duration = probe.longer_s  # the window could not bound the growth over the horizon: a longer one
        enough = enough_window_s(row.get("latency_ms_p99"), row.get("slo_ms") or 0.0, row.get("slo_horizon_s") or 0.0,
                                 row.get("latency_trend_ms_per_s"), row.get("latency_trend_hi_ms_per_s"),
                                 row.get("window_s") or 0.0) if row is not None and probe.met else None
        if enough is not None:
            window_for[n] = enough  # what the window that met says would have sufficed
        elif duration is not None:
            window_for[n] = duration
        probe.windows_s = windows
        return probe

    first = max(1, min(start, max_streams))  # capacity first: a closed loop at the search's first count
    threads = threads_for(profile, first, env.cpu_count)
    before_cfg = capacity_config(base, first, threads, base.repeat * repeats)
    # with one repeat a count, search k's reference after its probes (repeat k + 1) is search k + 1's before, the
    # same closed loop measured just before: read, not measured twice
    before_row = next((r for r in reversed(store.records()) if r["config_hash"] == before_cfg.config_hash()), None)
    capacity, why = capacity_of(first, before_row or row_of(before_cfg), base.sub_windows)
    result = search_max_streams(lambda n: repeated_probe(n, repeats, lambda j: measure(n, j)), max_streams, start,
                                rate_hz=base.rate_hz, capacity=capacity)
    if why:
        result.notes.append(why)
    result.capacity_before = capacity
    if capacity is not None:  # the reference again, after the probes: a busy host must not lower it unnoticed
        after_row = row_of(capacity_config(base, first, threads, base.repeat * repeats + 1))
        result.capacity_after, why_after = capacity_of(first, after_row, base.sub_windows, "after the probes")
        if why_after:
            result.notes.append(why_after)
        if (moved := reference_note(capacity, result.capacity_after)) is not None:
            result.notes.append(moved)
    if (note := monotonic_note(result.probes, base.slo_ms)) is not None:
        result.notes.insert(0, note)
    result.record = search_record(base, result, repeats)
    _append_search(run_dir / "slo_search.csv", result.record)
    holds = f"; {result.record['holds_at_max']}" if result.record["holds_at_max"] else ""
    cap = (f"; capacity {result.capacity.per_s:.4g}/s ({result.capacity.source}) admits "
           f"{result.capacity.streams(base.rate_hz)}" if result.capacity is not None else "")
    report(f"edgebench: {base.model}/{base.backend}/{base.precision}/b{base.batch} on {base.placements[0]} "
           f"[{result.record['options'] or 'default options'}, {base.gpu_sharing}, {base.arrival} arrivals]: "
           f"{result.answer} streams of {base.rate_hz:g}/s keep p99 <= {base.slo_ms:g} ms on every one of "
           f"{repeats} repeat(s){holds}{cap} (probes: {describe_probes(result.probes)})"
           + "".join(f"\n  note: {n}" for n in result.notes))
    return result


def search_record(base: RunConfig, result: SloResult, repeats: int = 1) -> dict[str, Any]:
    """The slo_search.csv line of one search (the console's side-by-side table prints the same dicts)."""
    at_max = next((p for p in result.probes if p.streams == result.max_streams), None)
    miss = result.first_miss
    cap = result.capacity
    undetermined = result.skipped is not None or (result.max_streams == 0 and result.lower_bound)
    return {
        "model": base.model, "backend": base.backend, "precision": base.precision, "batch": base.batch,
        "device": base.placements[0], "mode": base.mode, "options": base.options_cell,
        "gpu_sharing": base.gpu_sharing, "rate_per_stream_hz": base.rate_hz, "arrival": base.arrival,
        "search": base.repeat, "slo_ms": base.slo_ms, "repeats_per_count": repeats,
        "max_streams_under_slo": None if undetermined else result.max_streams, "answer": result.answer,
        "capped_at_max_streams": str(result.capped).lower(),
        "p99_ms_at_max": at_max.p99_ms if at_max is not None else None,
        "p99_ms_repeats_at_max": p99_list(at_max),
        "first_missed_streams": miss.streams if miss else None,
        "p99_ms_at_first_miss": miss.p99_ms if miss else None,
        "p99_ms_repeats_at_first_miss": p99_list(miss),
        "monotonic": str(not any(n.startswith("not monotonic") for n in result.notes)).lower(),
        "horizon_s": base.slo_horizon_s, "holds_at_max": holds_at(at_max, base.slo_ms or 0.0, base.slo_horizon_s),
        "capacity_per_s": None if cap is None else round(cap.per_s, 4),
        "capacity_max_streams": None if cap is None or not base.rate_hz else cap.streams(base.rate_hz),
        "capacity_source": None if cap is None else cap.source,
        "capacity_after_per_s": None if result.capacity_after is None else round(result.capacity_after.per_s, 4),
        "capacity_reference": capacity_reference(result),
        "notes": " | ".join(result.notes), "probes": describe_probes(result.probes),
    }


def capacity_reference(result: SloResult) -> str | None:
    """slo_search.csv's capacity_reference: 'steady (<signed % moved>)' when the closed loop measured again after the
    probes agrees with the one before (within reference_allowed_pct) and neither ran on a busy host, 'unsure
    (<signed % moved>)' when it moved or either did; None without both."""
    before, after = result.capacity_before, result.capacity_after
    if before is None or after is None:
        return None
    moved = (after.per_s - before.per_s) / before.per_s * 100.0
    unsure = reference_moved_pct(before, after) is not None or bool(reference_busy(before, after))
    return f"{'unsure' if unsure else 'steady'} ({moved:+.1f}%)"


def _append_search(path: Path, record: dict[str, Any]) -> None:
    """One line appended; a file of an older column set (a resumed run) is kept beside it, never mixed."""
    if path.exists():
        with open(path, newline="") as fh:
            header = next(csv.reader(fh), None)
        if header is not None and tuple(header) != SEARCH_COLUMNS:
            path.rename(path.with_name(f"{path.stem}.older-columns{path.suffix}"))
    new = not path.exists()
    with open(path, "a", newline="") as fh:
        w = csv.writer(fh)
        if new:
            w.writerow(SEARCH_COLUMNS)
        w.writerow(["" if record[c] is None else record[c] for c in SEARCH_COLUMNS])
