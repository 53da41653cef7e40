"""TorchBackend on CPU with the real builtin tiny_cnn (outputs vs the module's own forward and vs the
exported ONNX through ONNX Runtime), supports() reasons, the real runner, and a gpu-marked class."""

from __future__ import annotations

import dataclasses
import errno
import pickle

import numpy as np
import pytest

from edgebench.backends.base import Env, Placement
from edgebench.backends.torch_backend import TorchBackend, check_options, parse_device, torch_cuda_build
from edgebench.config.run_config import RunConfig
from edgebench.errors import BackendError
from edgebench.models.inputs import InputDesc, make_input
from edgebench.models.model_artifact import ModelArtifact
from edgebench.models.spec import load_model_spec

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'edgebench[export]')")

TARGET = "edgebench.backends.torch_backend:TorchBackend"  # registry-independent name of this backend
SPEC = load_model_spec("tiny_cnn")
CPU_ENV = Env(cpu_count=2, machine="x86_64", cuda_devices=0)
GPU_ENV = Env(cpu_count=16, machine="x86_64", cuda_devices=1)


def artifact(model: str = "tiny_cnn", shape: tuple[int, ...] = (3, 32, 32), seed: int = 0) -> ModelArtifact:
    return ModelArtifact(model=model, precision="fp32", onnx_path="unused.onnx", sha256="0" * 64,
                         inputs=(InputDesc("input", shape=shape),), sidecar={"seed": seed})


def cfg(precision: str = "fp32", placements: tuple[str, ...] = ("cpu",), batch: int = 4, **options) -> RunConfig:
    return RunConfig(model="tiny_cnn", backend="torch", precision=precision, batch=batch, placements=placements,
                     options=tuple(sorted(options.items())))


def reference(x: np.ndarray, seed: int = 0) -> np.ndarray:
    from edgebench.models.export import build_torch_model

    model = build_torch_model(SPEC, seed)
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def run_session(c: RunConfig, x: np.ndarray, device: str = "cpu", seed: int = 0) -> tuple[np.ndarray, object]:
    backend = TorchBackend()
    prepared = backend.prepare(c, artifact(seed=seed), cache=None)
    session = backend.open(prepared, Placement(device=device, instance=0, threads=1))
    session.feed({"input": x})
    session.infer()
    out = session.outputs()["output"]
    return out, session


X = make_input((4, 3, 32, 32), "float32", seed=7)


# ---------------------------------------------------------------- CPU outputs


def test_cpu_fp32_matches_the_module_forward():
    out, session = run_session(cfg("fp32"), X)
    ref = reference(X)
    assert out.shape == (4, 10) and out.dtype == np.float32
    assert np.abs(ref).max() > 0.1  # a real signal, not vanishing logits
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    session.infer()  # a second infer on the staged input gives the same result
    np.testing.assert_array_equal(session.outputs()["output"], out)
    session.close()


def test_a_warm_worker_copies_its_kept_model_and_gets_the_same_outputs(monkeypatch):
    from edgebench.backends import torch_backend

    built = []
    real = torch_backend.build_torch_model
    monkeypatch.setattr(torch_backend, "build_torch_model", lambda spec, seed: built.append(seed) or real(spec, seed))
    monkeypatch.setattr(torch_backend, "_KEPT", {})
    monkeypatch.setattr(torch_backend, "_KEEP_BUILDS", False)
    TorchBackend.preload("cpu")  # what a warm worker runs first
    assert torch_backend._KEEP_BUILDS is True
    first, s1 = run_session(cfg("fp32"), X)
    second, s2 = run_session(cfg("fp32", batch=2), X[:2])  # the next row: another batch
    assert built == [0]  # built once; the second session got a copy
    kept = next(iter(torch_backend._KEPT.values()))
    assert s1._model is not s2._model and s1._model is not kept
    np.testing.assert_allclose(second, reference(X[:2]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(first, reference(X), rtol=1e-5, atol=1e-6)
    run_session(cfg("fp32"), X, seed=3)  # other weights: built, and the kept one replaced
    assert built == [0, 3] and len(torch_backend._KEPT) == 1


def test_weights_follow_the_artifact_seed():
    out0, _ = run_session(cfg("fp32"), X, seed=0)
    out1, _ = run_session(cfg("fp32"), X, seed=1)
    np.testing.assert_allclose(out1, reference(X, seed=1), rtol=1e-5, atol=1e-6)
    assert np.abs(out0 - out1).max() > 1e-3


def test_cpu_bf16_is_close_but_not_fp32():
    out, session = run_session(cfg("bf16"), X)
    ref = reference(X)
    err = np.abs(out - ref).max()
    scale = np.abs(ref).max()
    assert 0 < err < 0.05 * scale, (err, scale)  # bf16 really ran (err > 0) and stays near fp32
    assert session._x.dtype == torch.bfloat16
    assert (out.argmax(1) == ref.argmax(1)).mean() >= 0.75


def test_cpu_channels_last_gives_the_same_outputs():
    out, session = run_session(cfg("fp32", channels_last=True), X)
    assert session._x.is_contiguous(memory_format=torch.channels_last)
    assert not session._x.is_contiguous()
    np.testing.assert_allclose(out, reference(X), rtol=1e-4, atol=1e-5)


def test_torch_outputs_match_the_exported_onnx_through_onnxruntime(tmp_path):
    """The sweep's accuracy reference is ORT on the exported FP32 ONNX: torch fp32 must agree with it."""
    from edgebench.evaluation.accuracy import reference_outputs
    from edgebench.models.artifacts import Artifacts
    from edgebench.models.export import export_onnx

    onnx_art = export_onnx(SPEC, Artifacts(tmp_path))
    model = dataclasses.replace(artifact(seed=onnx_art.sidecar.get("seed", 0)), onnx_path=str(onnx_art.path))
    backend = TorchBackend()
    session = backend.open(backend.prepare(cfg("fp32"), model, cache=None), Placement("cpu", 0, 1))
    session.feed({"input": X})
    session.infer()
    np.testing.assert_allclose(session.outputs()["output"], reference_outputs(str(onnx_art.path), "input", X),
                               rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- supports / prepare


@pytest.mark.parametrize(
    ("c", "env", "reason"),
    [
        (cfg("int8"), CPU_ENV, "int8 runs through the ort/trt backends (QDQ ONNX)"),
        (cfg("fp16"), CPU_ENV, "torch fp16 needs a CUDA GPU (tensor-core math); on cpu torch runs fp32 and bf16"),
        (cfg("amp"), CPU_ENV, "torch amp needs a CUDA GPU (tensor-core math); on cpu torch runs fp32 and bf16"),
        (cfg("tf32"), CPU_ENV, "torch tf32 needs a CUDA GPU (tensor-core math); on cpu torch runs fp32 and bf16"),
        (cfg("fp32", cuda_graph=True), CPU_ENV, "option cuda_graph needs a CUDA placement"),
        (cfg("fp32", ("cuda:0",)), CPU_ENV, "placement 'cuda:0' needs a CUDA GPU; none found on this machine"),
        (cfg("fp16", ("gpu",)), CPU_ENV, "placement 'gpu' needs a CUDA GPU; none found on this machine"),
        (cfg("fp16", ("cuda:0", "cuda:1")), GPU_ENV, "placement 'cuda:1': this machine has 1 CUDA device(s)"),
        (cfg("fp16", ("dla0",)), GPU_ENV,
         "placement 'dla0' has no torch device (cpu, cuda, gpu or cuda:N; DLA needs the trt backend)"),
        (cfg("fp32"), CPU_ENV, None),
        (cfg("bf16", ("cpu", "cpu")), CPU_ENV, None),
    ],
)
def test_supports_reasons(c, env, reason):
    assert TorchBackend().supports(c, env) == reason


def test_supports_cuda_when_a_gpu_is_listed_depends_on_the_torch_build():
    reason = TorchBackend().supports(cfg("fp16", ("cuda:0",)), GPU_ENV)
    if torch.version.cuda:
        assert reason is None
    else:
        assert reason == "the installed torch is a CPU-only build; install a CUDA build of torch"
    assert torch_cuda_build() == (torch.version.cuda or "")


def test_parse_device_labels():
    assert parse_device("cpu") == ("cpu", 0)
    assert parse_device("gpu") == ("cuda", 0) and parse_device("cuda") == ("cuda", 0)
    assert parse_device("cuda:3") == ("cuda", 3)
    assert parse_device("cuda:x") is None and parse_device("dla0") is None


def test_options_are_validated():
    assert check_options({}) == {"channels_last": False, "cuda_graph": False, "compile": False, "cudnn_benchmark": True}
    assert check_options({"compile": True})["compile"] == "default"
    with pytest.raises(BackendError, match=r"unknown option\(s\) chanels_last"):
        check_options({"chanels_last": True})
    with pytest.raises(BackendError, match=r"compile='reduce-overhead' must be false, true or one of"):
        check_options({"compile": "reduce-overhead"})
    with pytest.raises(BackendError, match=r"cuda_graph='yes' must be true or false"):
        check_options({"cuda_graph": "yes"})


def test_prepare_carries_the_spec_and_pickles():
    prepared = TorchBackend().prepare(cfg("bf16", batch=8, channels_last=True), artifact(seed=3), cache=None)
    assert prepared.backend == "torch" and prepared.precision == "bf16"
    assert prepared.batch == 8 and prepared.inputs[0].shape == (3, 32, 32)
    assert prepared.options["model_spec"] == "tiny_cnn" and prepared.options["weights_seed"] == 3
    assert prepared.info["provider"] == "torch-eager" and "bf16" in prepared.info["math"]
    assert pickle.loads(pickle.dumps(prepared)) == prepared


def test_prepare_refuses_models_without_a_torch_module():
    with pytest.raises(BackendError, match="torch backend needs a model spec for 'my_model'"):
        TorchBackend().prepare(cfg(), artifact(model="my_model"), cache=None)
    with pytest.raises(BackendError, match=r"channels_last needs an NCHW input; tiny_cnn has per-sample shape \[3, 32\]"):
        TorchBackend().prepare(cfg(channels_last=True), artifact(shape=(3, 32)), cache=None)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_open_on_cuda_without_a_gpu_is_a_clear_error():
    prepared = TorchBackend().prepare(cfg("fp16", ("cuda:0",)), artifact(), cache=None)
    with pytest.raises(BackendError, match=r"^instance 2: placement 'cuda:0' but torch sees 0 CUDA device\(s\)$"):
        TorchBackend().open(prepared, Placement("cuda:0", 2, 1))


def test_feed_names_a_missing_input():
    backend = TorchBackend()
    session = backend.open(backend.prepare(cfg(), artifact(), cache=None), Placement("cpu", 1, 1))
    with pytest.raises(BackendError, match=r"instance 1: feed\(\) needs input 'input', got \['x'\]"):
        session.feed({"x": X})
    with pytest.raises(BackendError, match=r"instance 1: outputs\(\) before feed\(\)"):
        session.outputs()


# ---------------------------------------------------------------- through the real runner


@pytest.mark.parametrize("mode", ["process", "streams"])
def test_runner_runs_torch_instances_with_accuracy(mode):
    from edgebench.runner.orchestrator import run_instances

    c = RunConfig(model="tiny_cnn", backend=TARGET, precision="fp32", batch=2, placements=("cpu", "cpu"), mode=mode,
                  warmup_s=0.1, duration_s=0.3, max_duration_s=5.0, min_inferences=20, accuracy_samples=3)
    prepared = dataclasses.replace(TorchBackend().prepare(c, artifact(), cache=None), backend=TARGET)
    acc_in = make_input((3, 3, 32, 32), "float32", seed=11)
    outcome = run_instances(c, prepared, accuracy_inputs=acc_in)
    assert outcome.status == "ok", outcome.reason
    assert [len(i.start_ns) > 0 for i in outcome.instances] == [True, True]
    got = next(iter(outcome.accuracy_outputs.values()))
    np.testing.assert_allclose(got, reference(acc_in), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- CUDA (device machine)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
class TestOnCuda:
    """Every precision on cuda:0 against fp32 on the CPU (relative to the output scale)."""

    @pytest.mark.parametrize(("precision", "options", "rel_tol"), [
        ("fp32", {}, 1e-4), ("tf32", {}, 2e-2), ("fp16", {}, 2e-2), ("bf16", {}, 8e-2), ("amp", {}, 2e-2),
        ("fp32", {"cuda_graph": True}, 1e-4), ("fp16", {"cuda_graph": True, "channels_last": True}, 2e-2),
        ("amp", {"cuda_graph": True}, 2e-2), ("fp16", {"compile": True}, 2e-2),
    ], ids=["fp32", "tf32", "fp16", "bf16", "amp", "fp32-graph", "fp16-graph-nhwc", "amp-graph", "fp16-compile"])
    def test_precision_matches_cpu_fp32(self, precision, options, rel_tol):
        assert TorchBackend().supports(cfg(precision, ("cuda:0",), **options), Env.detect()) is None
        out, session = run_session(cfg(precision, ("cuda:0",), **options), X, device="cuda:0")
        ref = reference(X)
        err = np.abs(out - ref).max() / np.abs(ref).max()
        assert err < rel_tol, (precision, options, err)
        assert session._x.device.type == "cuda"
        if options.get("cuda_graph"):
            assert session._graph is not None
            x2 = make_input((4, 3, 32, 32), "float32", seed=8)
            session.feed({"input": x2})  # new input into the captured graph's static buffer
            session.infer()
            err2 = np.abs(session.outputs()["output"] - reference(x2)).max() / np.abs(ref).max()
            assert err2 < rel_tol
        session.close()

    @pytest.mark.parametrize(("precision", "tensor_cores"), [("fp32", False), ("tf32", True), ("fp16", True)])
    def test_precision_decides_tensor_core_use(self, precision, tensor_cores):
        """The TF32 switch and fp16 really change the kernels: resnet18's convs on or off tensor cores."""
        from edgebench.evaluation.tensorcores import kernel_summary, profile_kernels

        c = RunConfig(model="resnet18", backend="torch", precision=precision, batch=16, placements=("cuda:0",))
        backend = TorchBackend()
        session = backend.open(backend.prepare(c, artifact("resnet18", (3, 224, 224)), cache=None), Placement("cuda:0", 0, 1))
        session.feed({"input": make_input((16, 3, 224, 224), "float32", seed=2)})
        summary = kernel_summary(profile_kernels(session.infer, steps=3))
        pct = summary["tensor_core_time_pct"]
        assert (pct > 10.0) if tensor_cores else (pct < 1.0), summary
        session.close()

    def test_out_of_memory_is_a_backend_error_naming_the_batch(self):
        free, _ = torch.cuda.mem_get_info()
        blocker = torch.empty(max(0, free - (256 << 20)), dtype=torch.uint8, device="cuda")
        try:
            c = dataclasses.replace(cfg("fp32", ("cuda:0",), batch=4096))
            with pytest.raises(BackendError, match=r"^instance 0: out of memory at batch 4096 on cuda:0 \("):
                x = make_input((4096, 3, 32, 32), "float32", seed=1)
                run_session(c, x, device="cuda:0")
        finally:
            del blocker
            torch.cuda.empty_cache()

    @pytest.mark.parametrize(("mode", "options"), [("streams", {"cuda_graph": True}), ("process", {})])
    def test_runner_on_cuda_with_nvml(self, mode, options):
        """Two fp16 instances on cuda:0 through the real runner (threads on their own streams, or two
        spawned processes), with NVML sampling the measured window."""
        from edgebench.runner.orchestrator import run_instances
        from edgebench.telemetry.nvml import NvmlSampler, throttle_summary

        c = RunConfig(model="tiny_cnn", backend=TARGET, precision="fp16", batch=8, placements=("cuda:0", "cuda:0"),
                      mode=mode, warmup_s=0.2, duration_s=0.5, max_duration_s=5.0, min_inferences=100,
                      accuracy_samples=8, options=tuple(sorted(options.items())))
        prepared = dataclasses.replace(TorchBackend().prepare(c, artifact(), cache=None), backend=TARGET)
        acc_in = make_input((8, 3, 32, 32), "float32", seed=11)
        outcome = run_instances(c, prepared, samplers=[NvmlSampler(0.05)], accuracy_inputs=acc_in)
        assert outcome.status == "ok", outcome.reason
        assert all(len(i.start_ns) >= 50 for i in outcome.instances)
        ref = reference(acc_in)
        got = next(iter(outcome.accuracy_outputs.values()))
        assert np.abs(got - ref).max() < 2e-2 * np.abs(ref).max()
        tl = outcome.timelines[0]
        assert tl.source == "nvml" and "power_total_mw" in tl.channels
        start, end = outcome.measure_start_ns, outcome.measure_end_ns
        if "energy_total_mj" in tl.channels and tl.t_ns[0] <= start and tl.t_ns[-1] >= end:
            assert tl.counter_delta("energy_total_mj", start, end) > 0
        assert "throttle_reasons" in tl.channels
        print("nvml window:", throttle_summary(tl, start, end), tl.notes)


def test_closing_a_compiled_session_resets_dynamo_so_the_next_row_compiles_its_own_batch(monkeypatch):
    resets = []
    monkeypatch.setattr(torch._dynamo, "reset", lambda: resets.append(1))
    _, plain = run_session(cfg("fp32"), X)
    plain.close()
    assert resets == []
    backend = TorchBackend()
    session = backend.open(backend.prepare(cfg("fp32", compile="default"), artifact(), cache=None),
                           Placement(device="cpu", instance=0, threads=1))
    session.close()  # never ran: nothing compiled, but a warm worker's dynamo cache must not outlive the session
    assert resets == [1]


def test_a_session_loads_the_saved_build_instead_of_building(tmp_path, monkeypatch):
    from edgebench.backends import torch_backend
    from edgebench.errors import ModelError
    from edgebench.models.artifacts import Artifacts

    backend, cache = TorchBackend(), Artifacts(tmp_path)
    prepared = backend.prepare(cfg("fp32"), artifact(seed=1), cache=cache)
    assert prepared.info["torch_state"] == "workers load the saved build (built once and saved to the cache)"
    assert prepared.options["state_file"].startswith(str(tmp_path))

    def no_build(spec, seed):
        raise AssertionError("a worker built the model")

    monkeypatch.setattr(torch_backend, "build_torch_model", no_build)
    session = backend.open(prepared, Placement(device="cpu", instance=0, threads=1))
    session.feed({"input": X})
    session.infer()
    np.testing.assert_allclose(session.outputs()["output"], reference(X, seed=1), rtol=1e-5, atol=1e-6)
    session.close()
    again = backend.prepare(cfg("fp32"), artifact(seed=1), cache=cache).info["torch_state"]
    assert again == "workers load the saved build (loaded from the cache)"

    def broken(spec, cache, seed):
        raise ModelError("tiny_cnn: the torch build process died with SIGKILL")

    monkeypatch.setattr(torch_backend, "built_state", broken)
    fallback = backend.prepare(cfg("fp32"), artifact(seed=1), cache=cache)
    assert "state_file" not in fallback.options
    assert fallback.info["torch_state"].startswith("built in each worker: the saved build failed (tiny_cnn: the torch")

    def torch_save_failed(spec, cache, seed):  # what torch.save raises on a full device, re-raised by the process
        raise RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 64 vs 0")

    monkeypatch.setattr(torch_backend, "built_state", torch_save_failed)
    fallback = backend.prepare(cfg("fp32"), artifact(seed=1), cache=cache)
    assert "state_file" not in fallback.options and "unexpected pos" in fallback.info["torch_state"]

    def disk_full(spec, cache, seed):  # a full disk the sweep must stop on (pipeline/disk_full.py), not swallow
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch_backend, "built_state", disk_full)
    with pytest.raises(OSError, match="No space left"):
        backend.prepare(cfg("fp32"), artifact(seed=1), cache=cache)
