"""The warm pool never lets a row fail from device memory its own idle workers hold (issue 27: at 32 instances on an
H100 idle workers of earlier rows held GPU memory while fresh ones opened, and the row ran out of memory).

The device here is a fake budget read through the pool's one seam (free_mib): every live worker process holds
IDLE_MIB, every worker of the row in flight OPEN_MIB more from when its instances are ready until the row gives
them back. Real spawned processes and the null backend do the rest."""

from __future__ import annotations

import pytest
from runner.test_runner import make_cfg, prepare

from edgebench.runner.orchestrator import run_instances
from edgebench.runner.warm_pool import WarmPool, device_of, pool_key

IDLE_MIB = 100.0
OPEN_MIB = 400.0


class FakeDevice:
    """A device of `budget_mib` whose free memory follows the pool's processes; records it at every row's ready."""

    def __init__(self, budget_mib: float) -> None:
        self.budget_mib = budget_mib
        self.pool: WarmPool | None = None
        self.open = 0  # workers with a session open now
        self.free_at_ready: list[float] = []
        self.reads: list[str] = []

    def attach(self, pool: WarmPool) -> WarmPool:
        self.pool = pool
        opened, give_back = pool.opened, pool.give_back

        def opened_now() -> None:
            self.open = len(pool.busy)
            self.free_at_ready.append(self.free("cpu"))
            opened()

        def give_back_now(*args, **kw) -> None:
            self.open = 0
            give_back(*args, **kw)

        pool.opened = opened_now  # type: ignore[method-assign]
        pool.give_back = give_back_now  # type: ignore[method-assign]
        return pool

    def free(self, placement: str) -> float | None:
        self.reads.append(placement)
        assert self.pool is not None
        alive = [w for w in self.pool.idle + self.pool.busy if w.proc.exitcode is None]
        return self.budget_mib - IDLE_MIB * len(alive) - OPEN_MIB * self.open


def row(pool: WarmPool, instances: int, **kw):
    cfg = make_cfg(instances, **kw)
    return run_instances(cfg, prepare(cfg), pool=pool)


def test_idle_workers_are_retired_before_a_row_that_would_not_fit_beside_them():
    device = FakeDevice(budget_mib=1500.0)
    key = pool_key(make_cfg(2))
    with device.attach(WarmPool({key: 6}, free_mib=device.free)) as pool:
        # 2 instances; the plan's block needs 6 workers (3 instances x 2 repeats): 4 primed spares wait idle
        first = row(pool, 2)
        assert first.status == "ok", first.reason
        assert pool.spawned == 6 and device.free_at_ready[-1] == 1500 - 6 * IDLE_MIB - 2 * OPEN_MIB
        # what one worker took: free when the row was handed its workers (spares started) minus free at ready, / 2
        assert pool.worker_mib[(key, "cpu")] == pytest.approx(OPEN_MIB)
        assert pool.clean_mib == {}  # 4 spares were starting beside the row: an upper bound only
        assert pool.retired_for_memory == 0 and not first.notes
        # 3 instances beside 3 idle spares: 6 x 100 + 3 x 400 = 1800 > 1500 without the check
        second = row(pool, 3)
        assert second.status == "ok", second.reason
        assert device.free_at_ready[-1] >= 0, "the row's workers opened beside idle workers the device cannot hold"
        assert pool.retired_for_memory == 3  # every idle worker the row did not take
        assert any(n.startswith("warm pool: cpu had 900 MiB free") and "retired 3 idle" in n for n in second.notes)
        assert second.workers == "warm: 2 of 3 reused"  # the row still took the workers that fit
        assert pool.clean_mib[(key, "cpu")] == pytest.approx(OPEN_MIB)  # nothing else was starting this time
        spawned = pool.spawned
        third = row(pool, 3, repeat=1)  # a repeat: processes of its own, none started ahead while memory is short
        assert third.status == "ok", third.reason
        assert device.free_at_ready[-1] >= 0
        assert pool.spawned > spawned and "cpu" in device.reads


def test_nothing_is_retired_when_the_device_holds_the_row_and_the_idle_workers():
    device = FakeDevice(budget_mib=100_000.0)
    key = pool_key(make_cfg(2))
    with device.attach(WarmPool({key: 6}, free_mib=device.free)) as pool:
        assert row(pool, 2).status == "ok"
        second = row(pool, 3)
        assert second.status == "ok", second.reason
        assert pool.retired_for_memory == 0 and not second.notes
        assert len(pool.idle) == 6  # the spares stay for the rows ahead
        assert (key, "cpu") in pool.worker_mib


def test_a_placement_without_device_memory_is_never_checked():
    with WarmPool() as pool:  # the default reader: NVML, and None for cpu without touching it
        assert pool.free_mib("cpu") is None and pool.free_mib("dla0") is None
        out = row(pool, 2)
        assert out.status == "ok" and pool.worker_mib == {} and pool.retired_for_memory == 0


def test_device_of_names_the_gpu_a_placement_uses():
    assert device_of("cuda") == device_of("gpu") == device_of("cuda:0") == "cuda:0"
    assert device_of("cuda:1") == device_of("gpu:1") == "cuda:1" and device_of("cpu") == "cpu"


def test_free_memory_comes_from_nvml_for_the_gpu_a_placement_names(monkeypatch):
    from types import SimpleNamespace

    from edgebench.telemetry.nvml import free_memory_mib

    calls = []

    class FakeNvml:
        def nvmlInit(self):
            calls.append("init")

        def nvmlShutdown(self):
            calls.append("shutdown")

        def nvmlDeviceGetHandleByIndex(self, i):
            return i

        def nvmlDeviceGetMemoryInfo(self, handle):
            return SimpleNamespace(free=(1000 + handle) * 2**20)

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert free_memory_mib("cuda:1", FakeNvml()) == 1001.0 and free_memory_mib("gpu", FakeNvml()) == 1000.0
    assert calls == ["init", "shutdown"] * 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,2")
    assert free_memory_mib("cuda:1", FakeNvml()) == 1002.0  # CUDA's cuda:1 is NVML's GPU 2 here
    assert free_memory_mib("cpu", FakeNvml()) is None and len(calls) == 6  # NVML not asked for a CPU placement
