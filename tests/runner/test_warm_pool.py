"""Warm worker processes (runner/warm_pool.py) with real spawned processes and the null backend: reuse across rows
of one pool key, spares primed before a window, retirement on a new key, a failed row or the pool's end."""

from __future__ import annotations

import dataclasses
import os

import pytest
from runner.test_runner import assert_all_gone, make_cfg, prepare

from edgebench.runner.orchestrator import run_instances
from edgebench.runner.warm_pool import WarmPool, pool_key


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def pids_of(out) -> list[int]:
    return [r.pid for r in out.instances]


def row(pool: WarmPool | None, instances: int = 1, batch: int = 2, **kw):
    cfg = make_cfg(instances, batch=batch, **kw)
    return run_instances(cfg, prepare(cfg), pool=pool)


def test_a_row_of_the_same_key_runs_in_the_previous_rows_processes():
    with WarmPool() as pool:
        first = row(pool, 1, batch=2)
        second = row(pool, 1, batch=4)  # only the batch changed: same key
        assert first.status == second.status == "ok", (first.reason, second.reason)
        assert first.workers == "warm: 0 of 1 reused" and second.workers == "warm: 1 of 1 reused"
        assert pids_of(second) == pids_of(first)
        assert len(second.instances[0].start_ns) >= 10  # it measured: a fresh session in the kept process
        assert pool.spawned == 1
        kept = pids_of(first)
        assert all(alive(p) for p in kept)  # idle between rows
    assert_all_gone(kept)  # the pool's end retires them


def test_the_plans_largest_row_is_started_and_primed_with_the_first():
    cfg = make_cfg(3)
    with WarmPool({pool_key(cfg): 3}) as pool:
        one = row(pool, 1)
        assert one.status == "ok", one.reason
        assert pool.spawned == 3 and len(pool.idle) == 3 and all(w.primed for w in pool.idle)
        three = row(pool, 3)
        assert three.status == "ok", three.reason
        assert pool.spawned == 3  # no process started for the larger row
        assert pids_of(one)[0] in pids_of(three) and len(set(pids_of(three))) == 3
        assert three.workers == "warm: 1 of 3 reused"  # two had been primed spares, never in a row
    assert_all_gone(pids_of(three))


def test_workers_beyond_what_the_key_needs_are_retired_after_a_row():
    with WarmPool() as pool:  # no plan sizes (the SLO search): keep what the last row used
        four = row(pool, 4)
        two = row(pool, 2)
        assert four.status == two.status == "ok"
        assert set(pids_of(two)) <= set(pids_of(four))
        gone = set(pids_of(four)) - set(pids_of(two))
        assert len(pool.idle) == 2
        assert_all_gone(sorted(gone))


def test_another_key_retires_the_workers_of_the_last():
    with WarmPool() as pool:
        a = row(pool, 2)
        b = row(pool, 2, options={"sleep_s": 0.0001})  # other options: another key
        assert a.status == b.status == "ok"
        assert not set(pids_of(a)) & set(pids_of(b))
        assert_all_gone(pids_of(a))
        assert b.workers == "warm: 0 of 2 reused"


def test_the_workers_of_a_failed_row_are_killed_never_reused():
    with WarmPool() as pool:
        bad = row(pool, 2, options={"fail_instance": 1, "fail_phase": "measure", "fail_after": 3})
        assert bad.status == "failed" and "instance 1" in bad.reason
        assert_all_gone([p for p in pids_of(bad) if p is not None])
        assert pool.idle == []


def test_streams_mode_and_no_pool_start_fresh_processes():
    with WarmPool() as pool:
        streams = row(pool, 2, mode="streams")
        assert streams.status == "ok" and streams.workers == "fresh"
        assert pool.spawned == 0
        assert_all_gone(sorted(set(pids_of(streams))))
    plain = row(None, 1)
    assert plain.workers == "fresh"
    assert_all_gone(pids_of(plain))


def test_a_row_whose_backend_cannot_load_in_a_warm_worker_fails_naming_the_instance():
    cfg = make_cfg(1)
    prepared = dataclasses.replace(prepare(cfg), backend="preload_fail_backend:FailingPreload")
    with WarmPool() as pool:
        out = run_instances(cfg, prepared, pool=pool)
        assert out.status == "failed"
        assert out.reason.startswith(f"instance 0 (pid {out.instances[0].pid}, placement cpu) raised RuntimeError: "
                                     "preload refused") and "during preload" in out.reason
        assert pool.idle == []


@pytest.mark.parametrize("gpu_sharing,mode,keyed", [("time-slicing", "process", True), ("mps", "process", False),
                                                     ("time-slicing", "streams", False)])
def test_pool_key(gpu_sharing, mode, keyed):
    cfg = make_cfg(2, mode=mode, gpu_sharing=gpu_sharing)
    assert (pool_key(cfg) is not None) is keyed
    if keyed:
        assert pool_key(make_cfg(4, batch=64, mode=mode, gpu_sharing=gpu_sharing)) == pool_key(cfg)
        assert pool_key(make_cfg(2, precision="fp16", mode=mode)) != pool_key(cfg)


def test_prewarmed_workers_are_the_ones_the_row_takes():
    from edgebench.runner.orchestrator import prewarm

    cfg = make_cfg(2)
    with WarmPool({pool_key(cfg): 3}) as pool:
        prewarm(cfg, prepare(cfg), pool)
        started = sorted(w.pid for w in pool.idle)
        assert len(started) == 3 and pool.spawned == 3
        prewarm(cfg, prepare(cfg), pool)  # the key it already holds: nothing more
        assert pool.spawned == 3
        out = run_instances(cfg, prepare(cfg), pool=pool)
        assert out.status == "ok", out.reason
        assert set(pids_of(out)) <= set(started) and pool.spawned == 3


def test_each_repeat_of_a_config_gets_processes_of_its_own():
    with WarmPool() as pool:
        r0 = row(pool, 1, batch=2, repeat=0)
        r1 = row(pool, 1, batch=2, repeat=1)  # the same config again: never in a process that ran it
        other = row(pool, 1, batch=4, repeat=0)  # another batch: either process may take it
        assert r0.status == r1.status == other.status == "ok"
        assert pids_of(r0) != pids_of(r1) and r1.workers == "warm: 0 of 1 reused"
        assert other.workers == "warm: 1 of 1 reused" and pids_of(other)[0] in pids_of(r0) + pids_of(r1)


def test_a_worker_whose_session_did_not_close_is_retired_with_a_note():
    cfg = make_cfg(1)
    prepared = dataclasses.replace(prepare(cfg), backend="preload_fail_backend:CloseFails")
    with WarmPool() as pool:
        first = run_instances(cfg, prepared, pool=pool)
        assert first.status == "ok", first.reason  # the window's result stands
        assert any("did not close cleanly" in n and "illegal memory access" in n for n in first.notes), first.notes
        assert pool.idle == []
        assert_all_gone(pids_of(first))
        second = row(pool, 1)
        assert second.status == "ok" and second.workers == "warm: 0 of 1 reused"


def test_an_idle_worker_found_dead_is_replaced_not_handed_to_the_row():
    with WarmPool() as pool:
        first = row(pool, 1)
        os.kill(pids_of(first)[0], 9)
        pool.idle[0].proc.join(5)
        second = row(pool, 1, batch=4)
        assert second.status == "ok", second.reason
        assert pids_of(second) != pids_of(first) and second.workers == "warm: 0 of 1 reused"


def test_a_row_that_cannot_reuse_workers_retires_the_idle_ones():
    with WarmPool() as pool:
        first = row(pool, 2)
        streams = row(pool, 2, mode="streams")
        assert first.status == streams.status == "ok"
        assert_all_gone(pids_of(first))  # not resident through the streams row
        assert pool.idle == [] and pool.key is None


def test_repeats_whose_windows_differ_still_get_processes_of_their_own():
    """The SLO search runs a repeat's window longer when it cannot bound the growth, and starts the next repeat at
    another window: a window's length is not another configuration. Before, it was: repeat 1 at another window
    was given repeat 0's process (on an H200 every later repeat of two searches ran in repeat 0's processes). A
    repeat run again with a longer window may reuse its own process."""
    with WarmPool() as pool:
        r0 = row(pool, 1, repeat=0, duration_s=0.3)
        r0_longer = row(pool, 1, repeat=0, duration_s=0.6)  # the same repeat, a longer window: its own process
        r1 = row(pool, 1, repeat=1, duration_s=0.4)  # another repeat at another window: never repeat 0's
        r2 = row(pool, 1, repeat=2, duration_s=0.5)
        assert all(o.status == "ok" for o in (r0, r0_longer, r1, r2))
        assert pids_of(r0_longer) == pids_of(r0)
        assert len({pids_of(r0)[0], pids_of(r1)[0], pids_of(r2)[0]}) == 3
        kept = pids_of(r0) + pids_of(r1) + pids_of(r2)
    assert_all_gone(kept)


def test_block_needs_counts_consecutive_rows_of_a_key_and_their_repeats():
    from edgebench.runner.warm_pool import block_needs

    a = [make_cfg(n, batch=b, repeat=r) for b in (1, 2) for n in (1, 2) for r in (0, 1, 2)]
    assert block_needs(a) == [6] * 12  # 2 instances x 3 repeats
    other = make_cfg(1, options={"sleep_s": 0.0001})
    assert block_needs([make_cfg(1), other, make_cfg(2)]) == [1, 1, 2]  # alternating keys: blocks of one
    assert block_needs([make_cfg(1), None, make_cfg(4)]) == [4, 0, 4]  # a row that will not run does not split it
    assert block_needs([make_cfg(2, mode="streams"), make_cfg(1)]) == [0, 1]


def test_a_spare_not_primed_by_the_deadline_is_retired_with_a_note():
    import time

    from edgebench.runner.worker_proc import spawn_worker

    slow = spawn_worker(1, 1, {}, "test-spare", preload=("preload_fail_backend:SlowPreload", "cpu"))
    pool = WarmPool()
    pool.idle = [slow]
    t0 = time.monotonic()
    notes = pool.settle(time.monotonic_ns() + int(0.5e9))
    assert time.monotonic() - t0 < 5  # waited for the deadline, not for the import
    assert notes == [f"spare worker (pid {slow.pid}) not primed in time; retired"]
    assert pool.idle == [] and slow.proc.exitcode is not None
