"""Shared fixtures: one artifact cache per test session, and the exported tiny model in it."""

from __future__ import annotations

import pytest

from edgebench.models.artifacts import Artifact, Artifacts


@pytest.fixture(scope="session")
def artifact_cache(tmp_path_factory: pytest.TempPathFactory) -> Artifacts:
    """An artifact cache under a session tmp dir (never the user's ~/.cache)."""
    return Artifacts(tmp_path_factory.mktemp("artifact-cache"))


@pytest.fixture(scope="session")
def tiny_onnx(artifact_cache: Artifacts) -> Artifact:
    """models/tiny_cnn.yaml exported to ONNX (seed 0, opset 17, dynamic batch) in `artifact_cache`."""
    pytest.importorskip("torch", reason="exporting tiny_cnn needs torch (pip install 'edgebench[export]')")
    pytest.importorskip("onnxruntime", reason="the export parity check needs onnxruntime")
    from edgebench.models.export import export_onnx
    from edgebench.models.spec import load_model_spec

    return export_onnx(load_model_spec("tiny_cnn"), artifact_cache, seed=0)
