"""A REAL sweep whose telemetry service dies mid-window, in the jtop sandbox (tests/jetson_sandbox.py).

Inside the sandbox: the real jtop service on the emulated Orin NX, a real three-row sweep (null backend,
real instance processes, real results.csv, jtop the only sampler). The service is SIGKILLed one second
into row 0's measured window and restarted only before row 2. Expected: row 0 is `invalid` with the lost
connection as its reason; the sweep goes on; row 1 (service gone) fails at once saying the service is not
active and how to fix it; row 2 (service back) is measured with power from jtop.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

RESULT = "EDGEBENCH-JTOP-SWEEP-RESULT "
KILL_AFTER_S = 1.0  # into row 0's window (duration 3 s)


def inside_main() -> None:
    """Runs inside the sandbox (as root, in the chroot)."""
    from jetson_sandbox import FakeJetson

    import edgebench.runner.orchestrator as orchestrator
    from edgebench.backends.base import Env
    from edgebench.config.profile import profile_from_dict
    from edgebench.models.artifacts import Artifacts
    from edgebench.pipeline.model_cache import ModelCache
    from edgebench.pipeline.plan import expand
    from edgebench.pipeline.sweep import run_sweep
    from edgebench.results.store import ResultsStore

    fj = FakeJetson("orin_nx")
    fj.install()
    fj.set_rail("VDD_IN", 5000, 2000)
    fj.set_gpu(load_pct=30.0)
    fj.start_service()

    real_run_instances = orchestrator.run_instances
    measured: list[int] = []
    kill_times: list[int] = []

    def run_instances(cfg: Any, prepared: Any, **kw: Any) -> Any:
        if not measured:  # row 0: the service dies KILL_AFTER_S into the measured window
            def kill_soon(pids: list[int]) -> None:
                import time

                def kill() -> None:
                    kill_times.append(time.monotonic_ns())
                    fj.kill_service()
                threading.Timer(KILL_AFTER_S, kill).start()
            kw["on_measure_start"] = kill_soon
        measured.append(1)
        return real_run_instances(cfg, prepared, **kw)

    orchestrator.run_instances = run_instances  # execute() imports it from the module when it runs

    def on_start(i: int, total: int, cfg: Any) -> None:
        if i == 2:
            fj.start_service()  # the operator restarted jtop.service

    profile = profile_from_dict({
        "name": "jtop-sweep", "device": "jetson",
        "sweep": {"models": ["tiny_cnn"], "backends": ["null"], "precisions": ["fp32"], "batches": [1, 2, 4],
                  "instances": [1], "option_sets": [{"sleep_s": 0.005}]},
        "run": {"warmup_s": 0.2, "duration_s": 3.0, "max_duration_s": 6.0, "min_inferences": 10,
                "accuracy_samples": 0, "stability_tolerance_pct": 1000.0},
        "telemetry": {"samplers": ["jtop"], "interval_s": 0.5}}, "jtop-sweep.yaml")
    run_dir = Path("/tmp/edgebench-jtop-sweep")
    run_dir.mkdir()
    models = ModelCache(Artifacts(os.environ["EDGEBENCH_CACHE"]), dict(profile.calibration))
    run_sweep(expand(profile, Env.detect()), profile, run_dir, ResultsStore(run_dir), models, on_start=on_start)
    fj.kill_service()
    print(RESULT + json.dumps({"rows": ResultsStore(run_dir).rows(), "kills": len(kill_times)}), flush=True)


@pytest.fixture(scope="module")
def sweep() -> dict[str, Any]:
    from jetson_sandbox import driver_result

    return driver_result(__file__, RESULT, timeout_s=300,
                         env={"EDGEBENCH_CACHE": "/tmp/edgebench-jtop-sweep-cache"})


def test_the_row_whose_telemetry_died_is_invalid_with_the_cause(sweep):
    assert sweep["kills"] == 1
    rows = sweep["rows"]
    assert [r["batch"] for r in rows] == ["1", "2", "4"]
    row = rows[0]
    assert row["status"] == "invalid", row
    assert "lost connection" in row["reason"] and "journalctl -u jtop" in row["reason"]
    assert float(row["throughput_ips"]) > 0  # the measurement itself is kept, with its verdict
    assert row["energy_j"] == "" and row["energy_source"].startswith("none: jtop timeline does not span")


def test_the_next_row_still_runs_and_says_the_service_is_gone(sweep):
    row = sweep["rows"][1]
    assert row["status"] == "failed", row
    assert "jtop service not active" in row["reason"] and "systemctl restart jtop" in row["reason"]


def test_the_row_after_the_restart_is_measured_with_power(sweep):
    row = sweep["rows"][2]
    assert row["status"] == "ok", row["reason"]
    assert row["telemetry_source"] == "jtop" and row["power_scope"] == "soc-total"
    assert float(row["power_w_mean"]) == pytest.approx(10.0, rel=0.05)  # VDD_IN 5000 mV x 2000 mA


if __name__ == "__main__" and sys.argv[1:] == ["--inside"]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: jetson_sandbox
    inside_main()
