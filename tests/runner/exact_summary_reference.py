"""The summary code as it was before issue 37 (whole arrays in memory): the oracle the chunked summary is checked
against (tests/runner/test_chunked_summary.py). Copied from edgebench/runner/metrics.py and backlog.py at 9eee418."""

from __future__ import annotations

import math

import numpy as np

from edgebench.runner.backlog import latency_trend
from edgebench.runner.jitter_bound import STALL_FACTOR
from edgebench.runner.metrics import MIN_INFERENCES_FOR, PERCENTILES, Summary, _empty


def summarize(instances, batch: int, sub_windows: int) -> Summary:
    """Throughput, latency and stability over the instances' overlap window.

    Sub-window throughput attributes each inference to the sub-windows it overlaps in proportion
    to the overlap (an inference spanning a boundary counts partly on each side), so slow models
    with few inferences per sub-window are not judged unstable from counting granularity alone.
    For open-loop (fixed-rate) instances, which carry `issued_ns`, that span is the inference's service
    [issued, end], so stability is that of completions: an inference that waited in a backlog is not
    smeared over [arrival, end] (under overload every arrival is early and every end late, which made a
    steadily working device look unstable).
    An instance without inferences leaves no overlap: the summary is empty (window_s 0).
    """


    if not instances or any(len(r.start_ns) == 0 for r in instances):
        return _empty(len(instances))
    w0 = int(max(int(np.min(r.start_ns)) for r in instances))
    w1 = int(min(int(np.max(r.end_ns)) for r in instances))
    if w1 <= w0:
        return _empty(len(instances))
    window_s = (w1 - w0) / 1e9
    open_loop = all(getattr(r, "issued_ns", None) is not None for r in instances)
    starts, ends, busy_from, per_instance = [], [], [], []
    for r in instances:
        s = np.asarray(r.start_ns, dtype=np.int64)
        e = np.asarray(r.end_ns, dtype=np.int64)
        inside = (s >= w0) & (e <= w1)
        starts.append(s[inside])
        ends.append(e[inside])
        issued = getattr(r, "issued_ns", None) if open_loop else None  # open loop: every instance has them
        busy_from.append(np.asarray(issued, dtype=np.int64)[inside] if issued is not None else s[inside])
        per_instance.append(int(inside.sum()) * batch / window_s)
    s_all = np.concatenate(starts)
    e_all = np.concatenate(ends)
    b_all = np.concatenate(busy_from)
    count = int(len(s_all))
    latency: dict[str, float | None] = {k: None for k in ("mean", *MIN_INFERENCES_FOR, "max", "min")}
    if count:
        lat_ms = (e_all - s_all) / 1e6
        latency["mean"] = float(lat_ms.mean())
        values = np.percentile(lat_ms, PERCENTILES)
        for p, v in zip(PERCENTILES, values, strict=True):
            key = f"p{p}"
            latency[key] = float(v) if count >= MIN_INFERENCES_FOR[key] else None
        latency["max"] = float(lat_ms.max())
        latency["min"] = float(lat_ms.min())

    edges = np.linspace(w0, w1 + 1, sub_windows + 1)
    sub_ips = [n * batch / ((b - a) / 1e9)
               for n, a, b in zip(_subwindow_inferences(b_all, e_all, edges), edges[:-1], edges[1:], strict=True)]
    mean_ips = sum(sub_ips) / len(sub_ips)
    stability = max(abs(x - mean_ips) for x in sub_ips) / mean_ips * 100.0 if mean_ips > 0 else 0.0
    sigma = None if open_loop or not count else jitter_sigma_pct(ends, edges)
    return Summary(
        window_start_ns=w0,
        window_end_ns=w1,
        window_s=window_s,
        inferences=count,
        samples=count * batch,
        throughput_ips=count * batch / window_s,
        per_instance_ips=per_instance,
        latency_ms=latency,
        subwindow_ips=sub_ips,
        stability_pct=stability,
        open_loop=open_loop,
        stability_sigma_pct=sigma,
    )


def jitter_sigma_pct(ends, edges: np.ndarray) -> float:
    """edgebench.runner.jitter_bound.jitter_sigma_pct as it was, over whole arrays (its docstring has the model)."""
    k = len(edges) - 1
    variance = 0.0
    total = 0.0
    for instance_ends in ends:
        ordered = np.asarray(instance_ends, dtype=np.int64)
        if len(ordered) > 1 and bool((ordered[1:] < ordered[:-1]).any()):  # a closed loop's ends come in order
            ordered = np.sort(ordered)
        n_i = len(ordered) / k
        total += n_i
        variance += n_i * _gap_cv2(ordered, edges) + 1.0 / 6.0
    if total <= 0:
        return 0.0
    return math.sqrt(variance) * math.sqrt(1.0 - 1.0 / k) / total * 100.0


def _gap_cv2(ends: np.ndarray, edges: np.ndarray) -> float:
    """The squared coefficient of variation of the gaps between consecutive completions (sorted `ends`), stalls
    left out: their variance within sub-windows (each gap about the mean gap of the sub-window it ends in, pooled
    with n - 1 degrees of freedom per sub-window) over the squared mean gap of the window; the whole window's
    variance where no sub-window holds two gaps; 0 with fewer than two gaps.

    Within sub-windows, so that a step or drift between them is not counted as jitter. Over the window's mean, not
    each sub-window's: a sub-window's own mean grows with its largest gaps, and dividing by it read a cv of 1 as
    0.95 at ~60 gaps per sub-window (0.98 this way), which raised the false-alarm rate from 1.4% to 2.5%.

    A gap longer than STALL_FACTOR times the instance's median gap is a stall (the process descheduled, a pause),
    not one inference's jitter, and is left out: a single 278 ms stall among 6 million 0.2 us null inferences read
    as a cv of 466, which "explained" any deviation (the sub-window it fell in was 38% from the mean). A deviation a
    stall causes is judged by the tolerance alone, as before the interval. 50x: a lognormal of cv 1 (heavier than
    any row of docs/results) passes it once in ~800,000 gaps, so the rule's false-alarm rate on such jitter is the
    model's (20x cut a gap in ~5% of 300-inference windows and raised it from 1.6% to 2.6%); the H100 grid's slowest
    inferences sit within 4x of its median; a CPU row's preemptions (4 ms among 25 us inferences) are stalls.
    Stalls shorter than 50 median gaps still count as jitter: one 100 ms stall among 300 inferences of 4 ms widens
    the interval to ~50%."""


    gaps = np.diff(ends)
    if len(gaps) < 2:
        return 0.0
    # ends are sorted, so each sub-window's gaps (by their later end) are one slice; no per-gap index arrays (a null
    # row holds millions of gaps)
    bounds = np.searchsorted(ends[1:], np.ceil(edges).astype(np.int64), side="left")
    # the median of an even sample of 100,000-200,000 gaps where there are more (a null row has millions): the
    # stall limit needs no more precision
    limit = STALL_FACTOR * float(np.median(gaps[:: max(1, len(gaps) // 100_000)]))
    total_n = 0
    total_sum = 0.0
    ss = 0.0
    dof = 0
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        sub = gaps[a:b]
        if len(sub) and sub.max() > limit:
            sub = sub[sub <= limit]
        n = len(sub)
        if n == 0:
            continue
        sub_f = sub.astype(np.float64)
        total_n += n
        total_sum += float(sub_f.sum())
        if n >= 2:
            ss += float(sub_f.var()) * n
            dof += n - 1
    if total_n < 2 or total_sum <= 0:
        return 0.0
    mean = total_sum / total_n
    if dof <= 0:
        kept = gaps[gaps <= limit].astype(np.float64)
        return float(kept.var(ddof=1)) / mean**2 if len(kept) >= 2 else 0.0
    return ss / dof / mean**2


def _subwindow_inferences(busy_from: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> list[float]:
    """Inferences per sub-window [edges[k], edges[k+1]), each counted by the share of its span that falls there.

    An inference occupies [busy_from, end + 1) ns, so zero-length ones still have a place. One wholly inside a
    sub-window counts 1 there (found by searchsorted: a null row has millions of them); only those across a boundary
    are split by overlap (a window per pass over all of them cost ~0.3 s of an 8-instance null row)."""


    occupied_end = ends + 1
    # searched as int64 (faster than int64 into float64): for an integer t, edge <= t exactly when ceil(edge) <= t,
    # and edge < t exactly when floor(edge) < t
    first = np.searchsorted(np.ceil(edges).astype(np.int64), busy_from, side="right") - 1  # edges[first] <= from
    last = np.searchsorted(np.floor(edges).astype(np.int64), occupied_end, side="left") - 1  # edges[last] < end + 1
    whole = first == last
    counts = np.bincount(first[whole], minlength=len(edges) - 1).astype(np.float64)
    split_from, split_end = busy_from[~whole], occupied_end[~whole]
    if len(split_from):
        dur = (split_end - split_from).astype(np.float64)
        for k, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
            overlap = np.clip(np.minimum(split_end, b) - np.maximum(split_from, a), 0.0, None)
            counts[k] += float((overlap / dur).sum())
    return [float(c) for c in counts]


NOT_SUSTAINED_MARK = "offered rate not sustained"  # how overload_reason's text starts (read by the SLO search)



def window_trend(instances, window):
    """backlog.window_trend before issue 37: latency_trend of the pooled arrays inside the window."""
    arrivals, ends, streams = [], [], []
    for i, r in enumerate(instances):
        if r.issued_ns is None or len(r.start_ns) == 0:
            continue
        inside = (r.start_ns >= window.window_start_ns) & (r.end_ns <= window.window_end_ns)
        arrivals.append(r.start_ns[inside])
        ends.append(r.end_ns[inside])
        streams.append(np.full(int(inside.sum()), i, dtype=np.int64))
    if not arrivals:
        return None
    arrival, end, stream = np.concatenate(arrivals), np.concatenate(ends), np.concatenate(streams)
    return latency_trend(arrival, end, stream) if len(arrival) else None
