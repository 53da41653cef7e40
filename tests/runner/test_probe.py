"""The probe process (issue 19): accuracy outputs and kernel profiles run in a separate process, never in a measured
instance; a failing or hanging probe never costs the measured row; one probe result serves every batch."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from edgebench.backends.base import Placement, Prepared
from edgebench.backends.null import NullSession
from edgebench.config.run_config import RunConfig
from edgebench.models.inputs import InputDesc
from edgebench.pipeline.probe_step import probe_fields, row_probe
from edgebench.runner.orchestrator import run_instances
from edgebench.runner.probe import probe_key, run_probe

SAMPLE_SHAPE = (3, 8, 8)
MARK_DIR_ENV = "EDGEBENCH_TEST_PROBE_MARKS"


def make_cfg(instances: int = 2, **kw) -> RunConfig:
    base = dict(model="null", backend="null", precision="fp32", batch=2, placements=("cpu",) * instances,
                warmup_s=0.05, duration_s=0.3, max_duration_s=5.0, min_inferences=10,
                load_timeout_s=30.0, barrier_timeout_s=10.0, collect_timeout_s=10.0, seed=7)
    base.update(kw)
    return RunConfig(**base)


def prepared_for(backend: str, batch: int = 2) -> Prepared:
    return Prepared(backend, "x.onnx", (InputDesc("input", shape=SAMPLE_SHAPE),), batch, "fp32")


class MarkingBackend:
    """Each process that calls outputs() or infer() leaves a file named after its pid and the call."""

    name = "marking"

    def open(self, prepared: Prepared, placement: Placement) -> MarkingSession:
        return MarkingSession(prepared.first_input.name)


class MarkingSession(NullSession):
    def _mark(self, what: str) -> None:
        Path(os.environ[MARK_DIR_ENV], f"{what}-{os.getpid()}").touch()

    def infer(self) -> None:
        if not getattr(self, "_marked_infer", False):
            self._mark("infer")
            self._marked_infer = True

    def outputs(self) -> dict[str, np.ndarray]:
        self._mark("outputs")
        return super().outputs()


class BrokenOutputsBackend:
    name = "broken"

    def open(self, prepared: Prepared, placement: Placement) -> NullSession:
        return BrokenOutputsSession(prepared.first_input.name)


class BrokenOutputsSession(NullSession):
    def outputs(self) -> dict[str, np.ndarray]:
        raise RuntimeError("no outputs on this device")


class HangingOpenBackend:
    """Hangs in open() only in a process whose instance env says so (the probe), never in the instances."""

    name = "hanging"

    def open(self, prepared: Prepared, placement: Placement) -> NullSession:
        if os.environ.get("EDGEBENCH_TEST_HANG") == "1":
            time.sleep(3600)
        return NullSession(prepared.first_input.name)


def _pids(marks: Path, what: str) -> set[int]:
    return {int(p.name.split("-", 1)[1]) for p in marks.glob(f"{what}-*")}


def test_no_measured_instance_runs_the_accuracy_pass(tmp_path):
    cfg = make_cfg(2, accuracy_samples=5)
    inputs = np.random.default_rng(3).standard_normal((5, *SAMPLE_SHAPE)).astype(np.float32)
    out = run_instances(cfg, prepared_for(f"{__name__}:MarkingBackend"), accuracy_inputs=inputs,
                        child_env={MARK_DIR_ENV: str(tmp_path)})
    assert out.status == "ok", out.reason
    instance_pids = {r.pid for r in out.instances}
    assert len(instance_pids) == 2
    assert out.probe is not None and out.probe.pid not in instance_pids
    assert _pids(tmp_path, "outputs") == {out.probe.pid}  # outputs() only ever ran in the probe
    assert instance_pids <= _pids(tmp_path, "infer")  # both instances measured, alike
    np.testing.assert_array_equal(out.accuracy_outputs["output"], inputs.reshape(5, -1)[:, :10])  # type: ignore[index]


def test_a_failing_accuracy_pass_is_a_note_and_the_row_is_measured():
    cfg = make_cfg(1, accuracy_samples=3)
    out = run_instances(cfg, prepared_for(f"{__name__}:BrokenOutputsBackend"),
                        accuracy_inputs=np.zeros((3, *SAMPLE_SHAPE), np.float32))
    assert out.status == "ok", out.reason
    assert out.accuracy_outputs is None
    assert out.probe is not None
    assert any("accuracy outputs not taken: RuntimeError: no outputs on this device" in n for n in out.probe.notes)
    assert len(out.instances[0].start_ns) > 0


def test_a_hanging_probe_is_killed_at_its_deadline_with_its_group():
    cfg = make_cfg(1, accuracy_samples=2)
    t0 = time.monotonic()
    res = run_probe(cfg, prepared_for(f"{__name__}:HangingOpenBackend"), np.zeros((2, *SAMPLE_SHAPE), np.float32),
                    child_env={"EDGEBENCH_TEST_HANG": "1"}, timeout_s=3.0)
    assert time.monotonic() - t0 < 20
    assert res.accuracy_outputs is None
    assert res.notes and "did not finish within 3 s and was killed" in res.notes[0]
    assert res.pid is not None
    try:
        os.kill(res.pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive


def test_kernel_profile_asked_on_a_cpu_is_a_stated_absence_from_the_probe():
    cfg = make_cfg(1, kernel_profile_steps=2, accuracy_samples=0)
    out = run_instances(cfg, prepared_for("null"))
    assert out.status == "ok", out.reason
    assert out.probe is not None and out.kernels is None
    assert out.kernels_note.startswith("kernel profile unavailable:")


def test_probe_key_ignores_batch_and_instances_but_not_inputs_options_or_placement():
    x = np.arange(2 * 3 * 8 * 8, dtype=np.float32).reshape(2, *SAMPLE_SHAPE)
    p = prepared_for("null")
    k = probe_key(make_cfg(1, batch=1), p, x)
    assert k == probe_key(make_cfg(4, batch=64), p, x.copy())
    assert k != probe_key(make_cfg(1, batch=1), p, x + 1)
    assert k != probe_key(make_cfg(1, batch=1, options=(("sleep_s", 0.001),)), p, x)
    assert k != probe_key(make_cfg(1, batch=1, placements=("cuda:0",)), p, x)
    assert k != probe_key(make_cfg(1, batch=1, precision="int8"), p, x)
    # a TensorRT layer profile profiles the batch's own engine: then the batch counts
    assert probe_key(make_cfg(1, batch=1), p, x, 3) != probe_key(make_cfg(1, batch=8), p, x, 3)


def test_a_kernel_profile_runs_once_per_precision_and_batch(tmp_path):
    x = np.ones((3, *SAMPLE_SHAPE), np.float32)
    p = prepared_for("null")
    b1 = probe_key(make_cfg(1, batch=1, kernel_profile_steps=3), p, x)
    assert b1 != probe_key(make_cfg(1, batch=64, kernel_profile_steps=3), p, x)  # issue 27: b1's figure was reused
    assert b1 == probe_key(make_cfg(4, batch=1, kernel_profile_steps=3), p, x)  # instance counts still share it
    assert b1 != probe_key(make_cfg(1, batch=1, kernel_profile_steps=3, precision="int8"), p, x)
    cache: dict = {}
    first = row_probe(make_cfg(1, batch=2, kernel_profile_steps=2), prepared_for("null"), None, cache,
                      tmp_path / "0000-aaaa")
    same_batch = row_probe(make_cfg(2, batch=2, kernel_profile_steps=2), prepared_for("null"), None, cache,
                           tmp_path / "0001-bbbb")
    other = row_probe(make_cfg(1, batch=8, kernel_profile_steps=2), prepared_for("null", 8), None, cache,
                      tmp_path / "0002-cccc")
    assert first is not None and same_batch is first and other is not None and other is not first
    assert other.batch == 8 and other.label == f"row 2 (batch 8, pid {other.pid})" and other.pid != first.pid


def test_one_probe_serves_every_batch_and_the_row_says_which(tmp_path):
    cache: dict = {}
    x = np.ones((3, *SAMPLE_SHAPE), np.float32)
    first = row_probe(make_cfg(1, batch=2, accuracy_samples=3), prepared_for("null"), x, cache,
                      tmp_path / "0000-aaaa")
    again = row_probe(make_cfg(2, batch=8, accuracy_samples=3), prepared_for("null", 8), x, cache,
                      tmp_path / "0001-bbbb")
    assert first is not None and again is first  # no second process
    assert first.label == f"row 0 (batch 2, pid {first.pid})"
    assert probe_fields(again, "") == {"probe": first.label}
    none = row_probe(make_cfg(1, accuracy_samples=0), prepared_for("null"), None, cache, tmp_path / "0002-cccc")
    assert none is None and probe_fields(none, "x") == {}


def test_a_failed_probe_is_not_reused_and_its_notes_reach_the_reason(tmp_path):
    cache: dict = {}
    x = np.ones((2, *SAMPLE_SHAPE), np.float32)
    cfg = make_cfg(1, accuracy_samples=2)
    res = row_probe(cfg, prepared_for(f"{__name__}:BrokenOutputsBackend"), x, cache, tmp_path / "0003-dddd")
    assert res is not None and res.notes and cache == {}
    fields = probe_fields(res, "window short")
    assert fields["reason"].startswith("window short; accuracy outputs not taken: RuntimeError")
