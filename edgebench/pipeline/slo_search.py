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
with processes of its own (the warm pool never gives a repeat workers of another) and, under random or poisson
arrivals, phases / gaps drawn afresh (the arrival seed depends on the repeat). A count is accepted (met) only when
every repeat met the SLO; the first repeat that does not meet ends that count (its verdict is the count's), so only
counts that meet cost R rows. The probe rows of search k (run.repeats: k = the plan's repeat) carry repeat
k * R + j for their j-th repeat. The answer lists each repeat's p99 at the answer and at the first count that failed.

Every distinct config of the plan with its instance count folded out is one search: backend option sets
(eager / cuda_graph ...) and GPU sharing modes (time-slicing / mps) are searched one by one and reported
side by side (slo_search.csv, one line each, and the console table). A search whose probes show p99
falling as streams are added says so (`monotonic` false and a note): its answer rests on that assumption.
Each probe is a row of results.csv (fsynced as usual, so --resume reuses finished probes).
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.backends.registry import get_backend
from edgebench.pipeline.plan import PlannedRun, gpu_sharing_skip_reason, threads_for
from edgebench.pipeline.sweep import SweepSession, run_sweep, sweep_session
from edgebench.runner.load import P99_FLOOR

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.backends.base import Env
    from edgebench.config.profile import Profile
    from edgebench.config.run_config import RunConfig
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.results.store import ResultsStore

SEARCH_COLUMNS = ("model", "backend", "precision", "batch", "device", "mode", "options", "gpu_sharing",
                  "rate_per_stream_hz", "arrival", "search", "slo_ms", "repeats_per_count", "max_streams_under_slo",
                  "answer", "capped_at_max_streams", "p99_ms_at_max", "p99_ms_repeats_at_max", "first_missed_streams",
                  "p99_ms_at_first_miss", "p99_ms_repeats_at_first_miss", "monotonic", "notes", "probes")
# a p99 that falls by more than this share of itself AND of the SLO as streams are added breaks the search's
# assumption; smaller falls are run-to-run noise of percentiles far below the SLO
P99_FALL_REL = 0.10
P99_FALL_SLO_SHARE = 0.05


@dataclass
class Probe:
    streams: int
    verdict: str  # met / missed / unmeasured / failed / skipped (runner.load.SLO_VERDICTS + skipped)
    p99_ms: float | None  # of a repeated count: the worst (largest) repeat's
    status: str
    reason: str = ""
    repeats: list[Probe] = field(default_factory=list)  # a repeated count: each repeat's probe, in the order run

    @property
    def met(self) -> bool:
        return self.verdict == "met"

    @property
    def p99s_ms(self) -> list[float | None]:
        """Each repeat's p99 (the probe's own when it is not repeated)."""
        return [r.p99_ms for r in self.repeats] if self.repeats else [self.p99_ms]


def repeated_probe(streams: int, repeats: int, measure: Callable[[int], Probe]) -> Probe:
    """Measure `streams` up to `repeats` times (measure(j) is repeat j) and judge the count on all of them: met only
    when every repeat met; the first repeat that did not meet ends it and gives the count its verdict, status and
    reason. The count's p99 is its worst repeat's."""
    done: list[Probe] = []
    for j in range(repeats):
        done.append(measure(j))
        if done[-1].verdict != "met":
            break
    last = done[-1]
    p99s = [p.p99_ms for p in done if p.p99_ms is not None]
    worst = max(p99s) if p99s else None
    reason = last.reason if last.verdict == "met" or len(done) == 1 else f"repeat {len(done) - 1}: {last.reason}"
    return Probe(streams, last.verdict, worst, last.status, reason, done)


@dataclass
class SloResult:
    max_streams: int  # the most streams that met the SLO; 0 when none met
    capped: bool  # every probe up to max_streams met it: the answer is a lower bound
    probes: list[Probe] = field(default_factory=list)  # in the order they ran
    lower_bound: bool = False  # the count just above max_streams was unmeasured, not missed
    skipped: str | None = None  # why the search could not run here (a skipped probe's reason)
    notes: list[str] = field(default_factory=list)  # unmeasured probes, a p99 that fell as streams were added
    record: dict[str, Any] = field(default_factory=dict)  # its slo_search.csv line

    @property
    def first_miss(self) -> Probe | None:
        above = [p for p in self.probes if p.streams > self.max_streams and p.verdict in ("missed", "failed")]
        return min(above, key=lambda p: p.streams) if above else None

    @property
    def answer(self) -> str:
        """The answer in words: '21', 'at least 31', 'skipped: ...', 'undetermined: ...'."""
        if self.skipped is not None:
            return f"skipped: {self.skipped}"
        if self.max_streams == 0 and self.lower_bound:
            miss = self.first_miss
            if miss is None:
                return "undetermined: no probe was measured"
            return f"undetermined (< {miss.streams}): no probe below {miss.streams} was measured"
        return ("at least " if self.capped or self.lower_bound else "") + str(self.max_streams)


def search_max_streams(probe: Callable[[int], Probe], max_streams: int, start: int = 1) -> SloResult:
    """Exponential search from `start`, then bisection; each stream count is probed at most once.

    Unmeasured probes do not stop the doubling (more streams bring more inferences per window); in the
    bisection an unmeasured middle is treated like a miss for the direction only, and the answer is then
    marked a lower bound. A skipped probe ends the search."""
    seen: dict[int, Probe] = {}
    order: list[Probe] = []

    def verdict(n: int) -> str:
        if n not in seen:
            seen[n] = probe(n)
            order.append(seen[n])
        return seen[n].verdict

    good, bad = 0, None
    n = max(1, min(start, max_streams))
    while True:
        v = verdict(n)
        if v == "skipped":
            return _result(0, False, order, skipped=seen[n].reason or "skipped")
        if v in ("missed", "failed"):
            bad = n
            break
        if v == "met":
            good = n
        if n >= max_streams:
            break
        n = min(2 * n, max_streams)
    if bad is not None:
        lo, hi = good, bad  # lo met (0: nothing met yet), hi did not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            v = verdict(mid)
            if v == "skipped":
                return _result(lo, False, order, skipped=seen[mid].reason or "skipped")
            if v == "met":
                lo = mid
            else:
                hi = mid
        good = lo
    above = [p for p in order if p.streams > good]
    nearest = min(above, key=lambda p: p.streams) if above else None
    capped = nearest is None and good >= max_streams
    return _result(good, capped, order, lower_bound=nearest is not None and nearest.verdict == "unmeasured")


def _result(good: int, capped: bool, order: list[Probe], *, lower_bound: bool = False,
            skipped: str | None = None) -> SloResult:
    result = SloResult(good, capped, order, lower_bound=lower_bound, skipped=skipped)
    unmeasured = [p.streams for p in order if p.verdict == "unmeasured"]
    if unmeasured:
        result.notes.append(f"unmeasured at {', '.join(map(str, sorted(unmeasured)))} stream(s): too few inferences "
                            f"for a p99 judgement (a p99 needs {P99_FLOOR}) or an invalid row; see their reasons")
    return result


def p99_falls(probes: list[Probe], slo_ms: float) -> list[tuple[Probe, Probe]]:
    """Pairs (fewer streams, more streams) whose p99 fell by more than P99_FALL_REL of the first and more than
    P99_FALL_SLO_SHARE of the SLO: where the search's assumption (p99 never falls as streams are added) fails."""
    measured = sorted((p for p in probes if p.p99_ms is not None), key=lambda p: p.streams)
    falls = []
    for i, a in enumerate(measured):
        for b in measured[i + 1:]:
            assert a.p99_ms is not None and b.p99_ms is not None
            drop = a.p99_ms - b.p99_ms
            if drop > P99_FALL_REL * a.p99_ms and drop > P99_FALL_SLO_SHARE * slo_ms:
                falls.append((a, b))
    return falls


def monotonic_note(probes: list[Probe], slo_ms: float) -> str | None:
    """None when the probes agree with the assumption, else what broke it (the largest fall, and any count that
    met above one that missed)."""
    falls = p99_falls(probes, slo_ms)
    inverted = [(a, b) for a in probes for b in probes
                if a.streams < b.streams and a.verdict == "missed" and b.verdict == "met"]
    if not falls and not inverted:
        return None
    parts = []
    if falls:
        a, b = max(falls, key=lambda ab: (ab[0].p99_ms or 0) - (ab[1].p99_ms or 0))
        parts.append(f"p99 fell as streams were added ({a.p99_ms:.3g} ms at {a.streams} -> {b.p99_ms:.3g} ms at "
                     f"{b.streams}; {len(falls)} such pair(s))")
    if inverted:
        a, b = inverted[0]
        parts.append(f"{b.streams} streams met after {a.streams} missed")
    return ("not monotonic: " + "; ".join(parts) + ": the search assumes p99 never falls as streams are added, "
            "so the answer may be off; read the probes")


def probe_of(streams: int, row: dict[str, Any]) -> Probe:
    """A probe from a typed row (results.reader): one just assembled, or one of store.records()."""
    status = row.get("status") or ""
    verdict = row.get("slo_verdict") or ""
    if status == "skipped":
        verdict = "skipped"
    elif not verdict:  # a row written before slo_verdict existed
        verdict = "met" if row.get("slo_met") is True else "missed"
    return Probe(streams, verdict, row.get("latency_ms_p99"), status, row.get("reason") or "")


def probe_config(base: RunConfig, streams: int, threads: int, repeat: int | None = None) -> RunConfig:
    """The base config with `streams` copies of its first placement and a window that runs until it holds the
    inferences a p99 needs (within max_duration_s); `repeat` (the probe's repeat number) replaces the base's."""
    return dataclasses.replace(base, placements=(base.placements[0],) * streams, threads_per_instance=threads,
                               min_inferences=max(base.min_inferences, P99_FLOOR),
                               repeat=base.repeat if repeat is None else repeat)


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

    def measure(n: int, j: int) -> Probe:
        cfg = probe_config(base, n, threads_for(profile, n, env.cpu_count), repeat=base.repeat * repeats + j)
        skip = get_backend(cfg.backend).supports(cfg, env) or gpu_sharing_skip_reason(cfg)
        written = run_sweep([PlannedRun(cfg, skip)], profile, run_dir, store, models, on_row=on_row,
                            idle_power_w=idle_power_w, on_start=on_start, session=session)
        if written:
            return probe_of(n, written[0])
        done = [r for r in store.records() if r["config_hash"] == cfg.config_hash()]  # --resume: measured before
        return probe_of(n, done[-1]) if done else Probe(n, "failed", None, "missing", "no row")

    result = search_max_streams(lambda n: repeated_probe(n, repeats, lambda j: measure(n, j)), max_streams, start)
    if (note := monotonic_note(result.probes, base.slo_ms)) is not None:
        result.notes.insert(0, note)
    result.record = search_record(base, result, repeats)
    _append_search(run_dir / "slo_search.csv", result.record)
    report(f"edgebench: {base.model}/{base.backend}/{base.precision}/b{base.batch} on {base.placements[0]} "
           f"[{result.record['options'] or 'default options'}, {base.gpu_sharing}, {base.arrival} arrivals]: "
           f"{result.answer} streams of {base.rate_hz:g}/s keep p99 <= {base.slo_ms:g} ms on every one of "
           f"{repeats} repeat(s) (probes: {describe_probes(result.probes)})"
           + "".join(f"\n  note: {n}" for n in result.notes))
    return result


def p99_list(probe: Probe | None) -> str | None:
    """Each repeat's p99 in ms, ';'-joined in the order run ('-' for a repeat without one); None without a probe."""
    if probe is None:
        return None
    return ";".join("-" if v is None else f"{v:.4g}" for v in probe.p99s_ms)


def describe_probes(probes: list[Probe]) -> str:
    def p99(p: Probe) -> str:
        if len(p.repeats) > 1:
            return f" p99={'/'.join('-' if v is None else f'{v:.3g}' for v in p.p99s_ms)}ms"
        return f" p99={p.p99_ms:.3g}ms" if p.p99_ms is not None else ""

    return ", ".join(f"{p.streams}:{p.verdict}{p99(p)}"
                     f"{'' if p.status in ('ok', 'skipped') else f' ({p.status})'}" for p in probes)


def search_record(base: RunConfig, result: SloResult, repeats: int = 1) -> dict[str, Any]:
    """The slo_search.csv line of one search (the console's side-by-side table prints the same dicts)."""
    at_max = next((p for p in result.probes if p.streams == result.max_streams), None)
    miss = result.first_miss
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
        "notes": " | ".join(result.notes), "probes": describe_probes(result.probes),
    }


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
