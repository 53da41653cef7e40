"""A REAL CUDA error in one instance while the others run (GPU tier): the row fails naming that
instance and the CUDA error, the others are stopped, and the next row on the same GPU is fine."""

from __future__ import annotations

import pytest
from gpu_needs import torch_cuda_missing

MISSING = torch_cuda_missing()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(MISSING is not None, reason=str(MISSING))]


def test_cuda_error_in_one_instance_fails_the_row_and_the_gpu_serves_the_next(artifact_cache):
    from gpu_fault_backend import with_fault

    from edgebench.backends.torch_backend import TorchBackend
    from edgebench.config.run_config import RunConfig
    from edgebench.models.export import export_onnx
    from edgebench.models.precision import precision_artifact
    from edgebench.models.spec import load_model_spec
    from edgebench.runner.orchestrator import run_instances

    spec = load_model_spec("tiny_cnn")
    art = precision_artifact(spec, export_onnx(spec, artifact_cache), "fp32", artifact_cache, {})
    cfg = RunConfig(model="tiny_cnn", backend="torch", precision="fp32", batch=8,
                    placements=("cuda:0", "cuda:0", "cuda:0"), mode="process", warmup_s=0.3, duration_s=2.0,
                    max_duration_s=6.0, min_inferences=100, accuracy_samples=0)
    prepared = TorchBackend().prepare(cfg, art, artifact_cache)

    crashed = run_instances(cfg, with_fault(prepared, instance=1, after=50))
    assert crashed.status == "failed"
    assert "instance 1" in crashed.reason and "cuda:0" in crashed.reason
    assert "CUDA error" in crashed.reason or "device-side assert" in crashed.reason, crashed.reason
    assert "instance 0" not in crashed.reason and "instance 2" not in crashed.reason

    healthy = run_instances(cfg, prepared)
    assert healthy.status == "ok", healthy.reason
    assert all(len(inst.start_ns) > 0 for inst in healthy.instances)
