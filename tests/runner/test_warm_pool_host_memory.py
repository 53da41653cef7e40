"""The warm pool never starts workers the host's memory cannot hold above its reserve (issue 37: on an 8 GB board
the SLO search's count x repeats torch workers would take more than the board has; its GPU shares that memory and
there is no NVML to read). The host is a fake budget read through the pool's two seams (host_mib, worker_host_mib):
every live worker process holds WORKER_MIB. Real spawned processes and the null backend do the rest."""

from __future__ import annotations

import os

from runner.test_runner import make_cfg, prepare

from edgebench.runner import host_memory
from edgebench.runner.orchestrator import run_instances
from edgebench.runner.warm_pool import MEMORY_MARGIN, WarmPool, pool_key

TOTAL_MIB = 4000.0
OTHERS_MIB = 1500.0  # the harness and the rest of the system
WORKER_MIB = 500.0


class FakeHost:
    def __init__(self) -> None:
        self.pool: WarmPool | None = None
        self.available_at_ready: list[float] = []

    def attach(self, pool: WarmPool) -> WarmPool:
        self.pool = pool
        opened = pool.opened

        def opened_now() -> None:
            self.available_at_ready.append(self.memory()[0])
            opened()

        pool.opened = opened_now  # type: ignore[method-assign]
        return pool

    def memory(self) -> tuple[float, float]:
        assert self.pool is not None
        alive = [w for w in self.pool.idle + self.pool.busy if w.proc.exitcode is None]
        return TOTAL_MIB - OTHERS_MIB - WORKER_MIB * len(alive), TOTAL_MIB


def row(pool: WarmPool, instances: int, **kw):
    cfg = make_cfg(instances, **kw)
    return run_instances(cfg, prepare(cfg), pool=pool)


def fake_pool(host: FakeHost, sizes: dict) -> WarmPool:
    return host.attach(WarmPool(sizes, host_mib=host.memory, worker_host_mib=lambda _pid: WORKER_MIB))


def test_a_repeats_workers_start_only_after_idle_ones_it_cannot_use_are_retired():
    host = FakeHost()
    reserve = host_memory.reserve_mib(TOTAL_MIB)
    key = pool_key(make_cfg(2))
    with fake_pool(host, {key: 2}) as pool:
        first = row(pool, 2)
        assert first.status == "ok", first.reason
        assert pool.host_per_worker[key] == WORKER_MIB  # measured from the row's own workers
        assert host.memory()[0] == 1500.0  # two idle workers kept for the key
        # repeat 1 must run in processes of its own: 2 more would leave 500 MiB, under the 512 MiB reserve
        second = row(pool, 2, repeat=1)
        assert second.status == "ok", second.reason
        assert host.available_at_ready[-1] >= reserve, "a repeat's workers started beside idle ones the host cannot hold"
        assert pool.retired_for_memory >= 1
        note = next(n for n in second.notes if n.startswith("warm pool: host memory:"))
        assert "1500 of 4000 MiB available" in note and "starts 2 worker(s) of ~500 MiB" in note, note
        assert "retired" in note and "idle worker(s) it cannot use first" in note, note
        assert second.workers == "warm: 0 of 2 reused"


def test_spares_start_only_as_far_as_the_host_holds_them():
    host = FakeHost()
    key = pool_key(make_cfg(2))
    with fake_pool(host, {key: 2}) as pool:
        assert row(pool, 2).status == "ok"
        pool.expect(key, 6)  # the rows ahead would want 4 spares beside the 2 idle workers
        out = row(pool, 2, batch=4)  # same key, the same repeat: it takes the 2 idle workers
        assert out.status == "ok", out.reason
        fit = host_memory.affordable(1500.0, TOTAL_MIB, WORKER_MIB, MEMORY_MARGIN)
        assert fit == 1 and pool.not_started_for_host == 4 - fit
        assert len(pool.idle) == 2 + fit
        assert any(n.startswith("warm pool: host memory: started 1 of 4 spare worker(s)") for n in out.notes), out.notes


def test_nothing_is_checked_or_retired_while_the_host_holds_everything():
    key = pool_key(make_cfg(2))
    with WarmPool({key: 6}) as pool:  # the real readers: this machine's memory and the workers' PSS
        assert row(pool, 2).status == "ok"
        second = row(pool, 2, repeat=1)
        assert second.status == "ok", second.reason
        assert pool.retired_for_memory == 0 and pool.not_started_for_host == 0
        assert not [n for n in second.notes if "host memory" in n]
        assert 1.0 < pool.host_per_worker[key] < 2048.0  # a null worker's PSS, measured


def test_the_readers_read_this_host_and_a_live_process():
    available, total = host_memory.available_mib()
    assert 0 < available <= total
    mine = host_memory.worker_mib(os.getpid())
    assert mine is not None and mine > 1.0
    assert host_memory.worker_mib(2**22 + 12345) is None  # no such process
    assert host_memory.reserve_mib(8192.0) == 819.2 and host_memory.reserve_mib(1024.0) == 512.0


def test_the_first_row_of_a_configuration_starts_no_more_than_an_assumed_size_allows():
    """No worker of the key was measured yet, and the rows ahead want 6 (2 instances x 3 repeats): the first row
    starts its 2 and only the spares an assumed size leaves room for, not 6 (which would leave -500 MiB)."""
    from edgebench.runner.warm_pool import UNMEASURED_WORKER_MIB

    host = FakeHost()
    key = pool_key(make_cfg(2))
    with fake_pool(host, {key: 6}) as pool:
        out = row(pool, 2)
        assert out.status == "ok", out.reason
        assert min(host.available_at_ready) >= host_memory.reserve_mib(TOTAL_MIB), host.available_at_ready
        # the fake host counts a worker's memory from its start; the pool counts its 2 unprimed ones as taken too
        left = TOTAL_MIB - OTHERS_MIB - 2 * WORKER_MIB
        spares = max(0, host_memory.affordable(left, TOTAL_MIB, UNMEASURED_WORKER_MIB, MEMORY_MARGIN) - 2)
        assert pool.spawned == 2 + spares < 6
        note = next(n for n in out.notes if n.startswith("warm pool: host memory:"))
        assert "not measured yet: assumed" in note, note
        assert key not in pool.short  # checked again with the measured size for the next rows


def test_a_row_that_does_not_fit_an_assumed_size_does_not_turn_the_spares_off():
    """4 instances on a host with 2500 MiB available: at the assumed size they would not all fit, but nothing can be
    retired and the size is a guess: no note, and the configuration is checked again with what its workers measure
    (50 MiB each here), so its next repeat's workers start as spares."""
    alive_mib = 50.0
    pool_box: list[WarmPool] = []

    def memory() -> tuple[float, float]:
        p = pool_box[0]
        alive = [w for w in p.idle + p.busy if w.proc.exitcode is None]
        return TOTAL_MIB - OTHERS_MIB - alive_mib * len(alive), TOTAL_MIB

    key = pool_key(make_cfg(4))
    with WarmPool({key: 8}, host_mib=memory, worker_host_mib=lambda _pid: alive_mib) as pool:
        pool_box.append(pool)
        first = row(pool, 4)
        assert first.status == "ok", first.reason
        assert key not in pool.short
        assert not [n for n in first.notes if n.startswith("warm pool: host memory:") and "retired" in n]
        assert pool.host_per_worker[key] == alive_mib
        second = row(pool, 4, repeat=1)
        assert second.status == "ok", second.reason
        assert second.workers.startswith("warm: 0 of 4 reused") and pool.spawned == 8
