"""The warm pool on a real GPU (issue 27): 24, then 28, then 32 instances x 3 repeats in process mode with warm
workers, in one pool that the plan told to expect 32 x 3 workers (as `edgebench bench --instances 24,28,32
--repeats 3` does), must fail no row. On an H100 the third repeat at 32 failed with 'out of memory ... during open'
while idle workers of the earlier rows held their GPU memory.

A second test gives the pool a device smaller than the GPU (real NVML free memory minus a reserve) so that the
32-instance rows cannot open beside the idle workers: the pool must retire them first (and say so), and no row fails.

    pytest -m gpu tests/e2e/test_gpu_warm_pool_memory.py     (on the device machine; minutes)
"""

from __future__ import annotations

import pytest
from gpu_needs import torch_cuda_missing

from edgebench.telemetry.nvml import free_memory_mib

INSTANCES = (24, 28, 32)
REPEATS = 3


def _reason() -> str | None:
    missing = torch_cuda_missing()
    if missing is None and free_memory_mib("cuda:0") is None:
        return "needs NVML (nvidia-ml-py) to read the GPU's free memory"
    return missing


MISSING = _reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(MISSING is not None, reason=str(MISSING))]


def _grid(artifact_cache):  # type: ignore[no-untyped-def]
    from edgebench.backends.torch_backend import TorchBackend
    from edgebench.config.run_config import RunConfig
    from edgebench.models.export import export_onnx
    from edgebench.models.precision import precision_artifact
    from edgebench.models.spec import load_model_spec

    spec = load_model_spec("small_cnn")
    art = precision_artifact(spec, export_onnx(spec, artifact_cache), "fp32", artifact_cache, {})
    cfgs = [RunConfig(model="small_cnn", backend="torch", precision="fp32", batch=1, placements=("cuda:0",) * n,
                      mode="process", warmup_s=0.3, duration_s=1.0, max_duration_s=6.0, min_inferences=100,
                      accuracy_samples=0, load_timeout_s=300.0, repeat=r)
            for n in INSTANCES for r in range(REPEATS)]
    prepared = TorchBackend().prepare(cfgs[0], art, artifact_cache)
    return cfgs, prepared


def _run_grid(cfgs, prepared, pool):  # type: ignore[no-untyped-def]
    from edgebench.runner.orchestrator import run_instances

    outcomes = []
    for cfg in cfgs:
        out = run_instances(cfg, prepared, pool=pool)
        outcomes.append(out)
        print(f"{cfg.instances} x r{cfg.repeat}: {out.status} {out.workers} {out.reason} {out.notes} "
              f"free {free_memory_mib('cuda:0'):.0f} MiB")
    return outcomes


def test_24_28_then_32_instances_x3_in_warm_workers_fail_no_row(artifact_cache):
    from edgebench.runner.warm_pool import WarmPool, block_needs, pool_key

    cfgs, prepared = _grid(artifact_cache)
    needs = block_needs(cfgs)
    assert needs[0] == max(INSTANCES) * REPEATS  # the plan's expectation, as the sweep gives it
    with WarmPool({pool_key(cfgs[0]): needs[0]}) as pool:
        outcomes = _run_grid(cfgs, prepared, pool)
        failed = [(c.instances, c.repeat, o.reason) for c, o in zip(cfgs, outcomes) if o.status != "ok"]
        assert not failed, failed
        assert pool.worker_mib.get((pool_key(cfgs[0]), "cuda:0"), 0) > 0  # measured when the rows opened
        assert all(len(i.start_ns) > 0 for o in outcomes for i in o.instances)


def test_a_device_too_small_for_the_idle_workers_makes_the_pool_retire_them_first(artifact_cache):
    from edgebench.runner.warm_pool import WarmPool, block_needs, pool_key

    cfgs, prepared = _grid(artifact_cache)
    key = pool_key(cfgs[0])
    start_free = free_memory_mib("cuda:0")
    assert start_free is not None
    # measure what one worker takes with a probe pool, then size a device that holds 32 open workers but not
    # 32 open workers beside 64 idle ones
    with WarmPool() as probe_pool:
        first = _run_grid(cfgs[:1], prepared, probe_pool)[0]
        assert first.status == "ok", first.reason
        per_worker = probe_pool.worker_mib[(key, "cuda:0")]
    assert per_worker > 0
    budget = 32 * per_worker * 1.15 + 256 + 16 * per_worker  # room for the row, not for 64 idle workers too
    reserve = max(0.0, start_free - budget)

    def smaller_device(placement: str) -> float | None:
        free = free_memory_mib(placement)
        return None if free is None else free - reserve

    with WarmPool({key: block_needs(cfgs)[0]}, free_mib=smaller_device) as pool:
        outcomes = _run_grid(cfgs, prepared, pool)
        failed = [(c.instances, c.repeat, o.reason) for c, o in zip(cfgs, outcomes) if o.status != "ok"]
        assert not failed, failed
        assert pool.retired_for_memory > 0
        notes = [n for o in outcomes for n in o.notes if n.startswith("warm pool: cuda:0 had")]
        assert notes, [o.notes for o in outcomes]
