"""The probe process: everything that instruments or changes a process, kept out of every measured one.

A measuring process does nothing but measure. What a row reports besides its timing – the accuracy outputs
on fixed inputs, the GPU kernel profile (torch.profiler / CUPTI: Kineto leaves CUPTI attached after the
profiler ends and every later kernel launch in that process pays 10-30% at batch 1), the TensorRT layer
profile (an IProfiler on the execution context) – runs here, in one spawned child that opens its own
session of the prepared model, does those passes, writes what it found to a file and exits before any
instance of the row starts. All N instances of the row are then started and treated identically.

A probe never costs the measured row: every part that fails (or a probe that dies or runs past its deadline)
becomes a note the row states in its reason, and the row's other columns stand.

`probe_key` says which inputs its results depend on; the pipeline reuses one result for every row with
the same key (instance counts of one model x precision x backend x option set; batches too unless the probe profiles
kernels or TensorRT layers, which differ per batch: issue 27), and the row's `probe` column names the row (and the
batch) the result came from.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.backends.base import Placement
from edgebench.backends.registry import get_backend
from edgebench.backends.trt_layers import profile_prepared, write_layers_csv
from edgebench.evaluation.tensorcores import profile_kernels
from edgebench.models.framework_log import framework_log, summary
from edgebench.models.inputs import batches_of, concat_outputs, output_batch_axes, sample_count
from edgebench.runner import child_process, worker
from edgebench.runner.workdirs import make_workdir, remove_workdir

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from edgebench.backends.base import Prepared
    from edgebench.config.run_config import RunConfig

PROBE_EXTRA_S = 120.0  # a probe's deadline: the row's load_timeout_s plus this (its passes are short)


@dataclass
class ProbeResult:
    accuracy_outputs: dict[str, np.ndarray] | None = None  # the probe session's outputs on the accuracy inputs
    kernels: list[tuple[str, float]] | None = None  # GPU kernels of kernel_profile_steps inferences (name, us)
    kernels_note: str = ""  # why there are none, when a kernel profile was asked for
    layers_csv: str | None = None  # trt layer profile (LAYERS_CSV_COLUMNS), when asked for and it worked
    # the framework's warnings while the probe's session opened and ran (ONNX Runtime's, models/framework_log.py):
    # the row's, kept in row.json, never on the console
    framework_log: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what failed, one line each: the row states them
    seconds: float = 0.0  # wall time of the probe process, spawn to exit
    pid: int | None = None
    batch: int = 0  # the batch the probe ran at
    label: str = ""  # which row's probe this is ('row 3, batch 1'), set by whoever keeps results across rows


def probe_wanted(cfg: RunConfig, accuracy_inputs: Any, layer_profile_runs: int = 0) -> bool:
    """Whether the row needs a probe at all (no accuracy, no kernel profile, no layer profile: no process)."""
    return accuracy_inputs is not None or cfg.kernel_profile_steps > 0 or layer_profile_runs > 0


def probe_key(cfg: RunConfig, prepared: Prepared, accuracy_inputs: Any, layer_profile_runs: int = 0) -> tuple:
    """What a probe's results depend on: model file, backend, precision, option set, the first placement, the
    accuracy inputs (by content), the profile steps. Not the instance count; not the batch either, except when the
    probe profiles GPU kernels (a batch of 64 runs other kernels than a batch of 1: tensor_core_time_pct is the
    row's own batch's) or TensorRT layers (one engine per batch)."""
    digest = hashlib.sha256()
    if isinstance(accuracy_inputs, dict):
        for name in sorted(accuracy_inputs):
            digest.update(name.encode())
            digest.update(_array_bytes(accuracy_inputs[name]))
    elif accuracy_inputs is not None:
        digest.update(_array_bytes(accuracy_inputs))
    return (cfg.model, prepared.backend, prepared.model_path, cfg.precision, cfg.options, cfg.placements[0],
            cfg.kernel_profile_steps, layer_profile_runs,
            cfg.batch if layer_profile_runs or cfg.kernel_profile_steps > 0 else None,
            digest.hexdigest() if accuracy_inputs is not None else None)


def run_probe(cfg: RunConfig, prepared: Prepared, accuracy_inputs: Any = None, *, layer_profile_runs: int = 0,
              child_env: Mapping[str, str] | None = None, timeout_s: float | None = None,
              keep_dir: str | None = None, work_root: str | None = None) -> ProbeResult:
    """Spawn the probe process for one row's config, wait for it, return what it found (never raises for a
    failing probe: the result's notes say what went wrong). A layer profile is kept as keep_dir/layers.csv.
    `work_root`: the folder the probe's work folder (accuracy inputs, probe.pkl, layers.csv) is made in, as the row's
    instances' (orchestrator.run_instances); None: the system temp folder (workdirs.run_work_root says when a run
    folder's is used instead: accuracy inputs of tens of MB a row would take an 8 GB board's memory on a tmpfs)."""
    import numpy as np

    # with an owner record: a killed harness's probe folder is cleaned on the next start (remove_stale_run_workdirs)
    workdir = make_workdir(work_root)
    t0 = time.monotonic()
    result = ProbeResult(batch=cfg.batch)
    child = None
    try:
        acc_path = None
        if isinstance(accuracy_inputs, dict):
            acc_path = os.path.join(workdir, "accuracy_inputs.npz")
            arrays: dict[str, Any] = {k: np.ascontiguousarray(v) for k, v in accuracy_inputs.items()}
            np.savez(acc_path, **arrays)
        elif accuracy_inputs is not None:
            acc_path = os.path.join(workdir, "accuracy_inputs.npy")
            np.save(acc_path, np.ascontiguousarray(accuracy_inputs))
        out_path = os.path.join(workdir, "probe.pkl")
        child = child_process.spawn(probe_main, (cfg, prepared, acc_path, layer_profile_runs, workdir, out_path),
                                    name="edgebench-probe",
                                    env={**worker.thread_env(cfg.threads_per_instance), **dict(child_env or {})})
        result.pid = child.pid
        limit_s = timeout_s if timeout_s is not None else cfg.load_timeout_s + PROBE_EXTRA_S
        child.join(limit_s)
        code = child.exitcode
        if code is None:
            result.notes.append(f"probe (pid {child.pid}) did not finish within {limit_s:g} s and was killed")
        elif os.path.exists(out_path):
            with open(out_path, "rb") as fh:
                found = pickle.load(fh)
            result.accuracy_outputs = found.get("accuracy")
            result.kernels, result.kernels_note = found.get("kernels"), found.get("kernels_note", "")
            result.framework_log = list(found.get("framework_log", []))
            result.notes.extend(found.get("notes", []))
            if found.get("layers_csv") and keep_dir is not None:
                os.makedirs(keep_dir, exist_ok=True)
                result.layers_csv = shutil.copyfile(found["layers_csv"], os.path.join(keep_dir, "layers.csv"))
        else:
            result.notes.append(f"probe (pid {child.pid}) {child_process.exit_text(code)} before writing its results")
    except Exception as exc:  # noqa: BLE001 - a probe never costs the row: say why and go on
        result.notes.append(f"probe not run: {worker.describe(exc)}")
    finally:
        if child is not None:  # it leads its own process group: nothing it started outlives it
            child_process.stop([child], 0.0, terminate=False)
        remove_workdir(workdir)  # and the run folder's hidden work root once nothing else is in it
    if cfg.kernel_profile_steps > 0 and not result.kernels and not result.kernels_note:
        result.kernels_note = "kernel profile not taken: " + ("; ".join(result.notes) or "the probe reported none")
    result.seconds = time.monotonic() - t0
    return result


def probe_main(cfg: RunConfig, prepared: Prepared, accuracy_path: str | None, layer_profile_runs: int,
               workdir: str, out_path: str) -> None:
    """Entry point of the probe child (it leads its own process group: child_process.spawn): thread caps, one
    session on the row's first placement; then accuracy, kernel profile, layer profile, each independently (one
    failing keeps the others)."""
    os.environ.update(worker.thread_env(cfg.threads_per_instance))
    found: dict[str, Any] = {"notes": []}
    session = None
    # the framework's warnings (ONNX Runtime's: its session then logs them) become the row's lines, not console text
    with framework_log(onnxruntime=prepared.backend == "ort") as log_lines:
        try:
            placement = Placement(device=cfg.placements[0], instance=0, threads=cfg.threads_per_instance)
            session = get_backend(prepared.backend).open(prepared, placement)
            if accuracy_path is not None:
                try:
                    found["accuracy"] = accuracy_outputs(session, prepared, cfg.batch, accuracy_path)
                except Exception as exc:  # noqa: BLE001 - stated in the row's reason
                    found["notes"].append(f"accuracy outputs not taken: {worker.describe(exc)}")
            if cfg.kernel_profile_steps > 0:
                session.feed(prepared.feeds(cfg.batch, cfg.seed))
                try:
                    found["kernels"] = profile_kernels(session.infer, steps=cfg.kernel_profile_steps, warmup=1)
                except Exception as exc:  # noqa: BLE001 - no torch/CUPTI/GPU here: the row states it
                    found["kernels_note"] = f"kernel profile unavailable: {worker.describe(exc)}"
        except Exception as exc:  # noqa: BLE001
            found["notes"].append(f"probe could not open a session: {worker.describe(exc)}")
        finally:
            if session is not None:
                with contextlib.suppress(Exception):
                    session.close()
    found["framework_log"] = summary(log_lines)
    if layer_profile_runs > 0:  # its own execution contexts, after the session is closed
        try:
            path = Path(workdir) / "layers.csv"
            write_layers_csv(profile_prepared(prepared, layer_profile_runs), path)
            found["layers_csv"] = str(path)
        except Exception as exc:  # noqa: BLE001 - a failed profile must not lose the measured row
            found["notes"].append(f"layer profile not written: {worker.describe(exc)}")
    tmp = out_path + ".tmp"
    with open(tmp, "wb") as fh:
        pickle.dump(found, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, out_path)
    worker.exit_now(0)  # results are on disk: no interpreter teardown (seconds with torch/CUDA loaded)


def accuracy_outputs(session: Any, prepared: Prepared, batch: int, inputs_path: str) -> dict[str, np.ndarray]:
    """Run the accuracy inputs in chunks of `batch` (the last one padded with copies of its final sample);
    outputs trimmed to N (concat_outputs: on each output's batch axis, samples first). `inputs_path` is an .npy
    of [N, *sample] for the one input, or an .npz with one array per input name, N on each input's batch axis."""
    import numpy as np

    if inputs_path.endswith(".npz"):
        with np.load(inputs_path, allow_pickle=False) as npz:
            dtypes = {d.name: d.dtype for d in prepared.inputs}
            inputs = {name: npz[name].astype(dtypes.get(name, npz[name].dtype), copy=False) for name in npz.files}
    else:
        first = prepared.first_input
        inputs = {first.name: np.load(inputs_path).astype(first.dtype, copy=False)}
    total = sample_count(inputs, prepared.inputs)
    parts: dict[str, list[np.ndarray]] = {}
    for chunk in batches_of(inputs, batch, inputs=prepared.inputs):
        session.feed(chunk)
        session.infer()
        for name, value in session.outputs().items():
            parts.setdefault(name, []).append(np.array(value, copy=True))
    return concat_outputs(parts, batch, total, output_batch_axes(prepared.model_path, prepared.inputs))


def _array_bytes(arr: Any) -> bytes:
    import numpy as np

    a = np.ascontiguousarray(arr)
    return f"{a.dtype}{a.shape}".encode() + a.tobytes()
