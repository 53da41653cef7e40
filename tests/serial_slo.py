"""The SLO search end to end on a simulated serial device: shared by tests/pipeline/test_load.py,
test_slo_repeats.py and test_slo_search.py.

The null backend's `sleep_s` is a known service time and its `serial_device` option (one flock'ed lock file) makes
every instance share one simulated device, so a search's capacity in streams is computable:
floor(1 / (sleep_s * rate_hz)).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from cli_runs import read_rows

from edgebench.cli import main


def serial_options(folder: Path, *sleeps_s: float) -> list[dict[str, Any]]:
    """One option set per service time, all on the one device whose lock file is folder/device.lock."""
    return [{"sleep_s": s, "serial_device": str(folder / "device.lock")} for s in sleeps_s]


def serial_slo_profile(folder: Path, name: str, option_sets: list[dict[str, Any]], *, instances: int = 2,
                       accelerator: str | None = None, **run: float) -> Path:
    """folder/NAME.yaml: tiny_cnn on the null backend (fp32, batch 1, process mode, the host sampler), `instances`
    to start the search from, the given option sets, no accuracy pass; `run` sets the windows."""
    sweep: dict[str, Any] = {"models": ["tiny_cnn"], "backends": ["null"], "precisions": ["fp32"], "batches": [1],
                             "instances": [instances], "modes": ["process"], "option_sets": option_sets}
    if accelerator is not None:
        sweep["accelerator"] = accelerator
    data = {"name": name, "extends": "base",
            "description": "SLO search on a simulated serial device (null backend)",
            "sweep": sweep, "run": {"accuracy_samples": 0, **run}, "telemetry": {"samplers": ["host"]}}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def slo_bench(cache: Path, profile: Path, out: Path, *flags: str) -> tuple[Path, list[dict[str, str]],
                                                                          list[dict[str, str]]]:
    """`edgebench bench` in this process (its console output goes to capsys) with the search's flags: (the run
    folder, its slo_search.csv lines, its results.csv rows). The bench must exit 0."""
    rc = main(["--cache", str(cache), "bench", "--device", str(profile), "--out", str(out), *flags])
    assert rc == 0
    (run,) = out.iterdir()
    return run, read_rows(run / "slo_search.csv"), read_rows(run / "results.csv")
