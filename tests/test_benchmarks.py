"""benchmarks/ measures edgebench from outside: through its CLI, against loops that do not import it.

Only the scripts named in INTERNAL_USERS may import edgebench, each for the reason given there; a new benchmark that
imports edgebench's internals fails here until it states why (or runs the CLI instead).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

BENCHMARKS = REPO / "benchmarks"
INTERNAL_USERS = {
    # a diagnostic of internal costs (which part of the call path costs what), never quoted as overhead: see its
    # docstring; the overhead evidence is self_audit.py, which runs the CLI
    "cpu_call_path_ab.py",
    # prepares the labelled data and weights the GPU accuracy run then feeds to the CLI (gpu_accuracy.sh): it must
    # read and preprocess the images exactly as edgebench does to train on the same tensors
    "gpu_accuracy_train.py",
    # replays the adaptive search's decisions (edgebench.search.decide, what `bench --search` runs) over full grids
    # measured through the CLI: it evaluates the algorithm on recorded rows, it measures nothing itself
    "search_eval.py",
    # fits the search's surrogates (edgebench.search.surrogate) on random shares of grids measured through the CLI and
    # scores their intervals on the rest: it tests a statistical model, it measures nothing itself
    "surrogate_coverage.py",
    # replays recorded rows' per-inference timestamps (edgebench.results' readers) through the stability rule the CLI
    # ships (edgebench.runner.metrics), old rule against new: it reads run folders, it measures nothing
    "stability_replay.py",
    # checks the answer layer's interval of the median and its rank test on known distributions (stated vs actual
    # coverage): it tests a statistical method, it measures no device
    "interval_coverage.py",
    # runs `best`'s selection (edgebench.answer.best.answer_from_runs) on rows of known draws: it tests a statistical
    # procedure with the pick the code makes, it measures no device
    "selection_ties.py",
    # measures identical configurations through the CLI (`edgebench bench`, spawned) and reads the rows with the
    # answer layer `edgebench best` runs, to count its false "resolved" verdicts on real measurements
    "selection_twins.py",
    # measures through the CLI (`edgebench bench`, spawned and forked workers interleaved); imports only the answer
    # layer's interval of the median to state its per-pair ratios' interval at its real coverage
    "worker_start.py",
    # measures through the CLI (`edgebench bench` from two checkouts, interleaved); imports only the answer layer's
    # interval of the median, as worker_start.py
    "setup_ab.py",
    # reads the stored grids with the answer layer (edgebench.answer: its identity and limit rule) against a csv
    # reading of its own: it checks a rule on recorded rows, it measures nothing
    "identity_and_limits.py",
}


def edgebench_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "edgebench":
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names if a.name.split(".")[0] == "edgebench"]
    return names


def test_benchmarks_reach_edgebench_only_through_its_cli():
    offenders = {p.name: edgebench_imports(p) for p in sorted(BENCHMARKS.glob("*.py"))
                 if p.name not in INTERNAL_USERS and edgebench_imports(p)}
    assert offenders == {}, f"benchmarks importing edgebench (run its CLI, or list the script with a reason): {offenders}"


def test_the_exceptions_still_exist_and_still_need_to_be_exceptions():
    for name in INTERNAL_USERS:
        assert edgebench_imports(BENCHMARKS / name), f"{name} no longer imports edgebench: drop it from INTERNAL_USERS"


def test_retired_benchmarks_are_not_called_from_scripts():
    retired = ("gpu_overhead.py", "overhead_interleaved.py", "ort_cpu_overhead.py")
    for script in [*BENCHMARKS.glob("*.sh"), *BENCHMARKS.glob("*.py"), REPO / "Makefile"]:
        text = script.read_text()
        assert not [r for r in retired if r in text], f"{script.name} calls a retired benchmark"
    assert not [r for r in retired if (BENCHMARKS / r).exists()]


def _roofline_module():
    spec = importlib.util.spec_from_file_location("_bench_roofline", BENCHMARKS / "gpu_roofline_energy.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_energy_counter_and_power_integral_agree_on_a_known_timeline(tmp_path):
    """100 W sampled every 0.1 s, then 300 W from the 2.0 s sample on; the counter rises with it. Over [0.55 s,
    1.85 s] (ends between samples: interpolated) both give 130 J; across the step they differ as they should: the
    counter by its increments, the integral by trapezoids (the 1.9-2.0 s segment averages 100 and 300 W)."""
    roofline = _roofline_module()
    lines = ["t_ns,power_total_mw[mW],energy_total_mj[mJ]"]
    energy = 0.0
    for k in range(31):  # 0 .. 3 s
        t_s = k * 0.1
        power_mw = 100_000.0 if t_s < 2.0 - 1e-9 else 300_000.0
        if k:
            energy += 0.1 * (100_000.0 if t_s <= 2.0 + 1e-9 else 300_000.0)
        lines.append(f"{int(round(t_s * 1e9))},{power_mw},{energy}")
    csv_path = tmp_path / "telemetry_nvml.csv"
    csv_path.write_text("\n".join(lines) + "\n")
    counter, integral = roofline.counter_and_integral_mj(csv_path, int(0.55e9), int(1.85e9))
    assert counter == pytest.approx(130_000.0) and integral == pytest.approx(130_000.0)
    counter, integral = roofline.counter_and_integral_mj(csv_path, int(0.5e9), int(2.5e9))
    assert counter == pytest.approx(150_000.0 + 150_000.0)  # 1.5 s at 100 W + 0.5 s at 300 W
    assert integral == pytest.approx(140_000.0 + 20_000.0 + 150_000.0)  # 100 W, the 1.9-2.0 s ramp, 300 W


def test_stats_interval_is_the_one_published_before_it_moved():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from stats import bootstrap_median_ci
    finally:
        sys.path.remove(str(BENCHMARKS))
    values = [0.99, 1.01, 0.98, 1.02, 1.0, 0.97]
    # (0.995, 0.975, 1.015): what edgebench.runner.interleave.bootstrap_median_ci gave for these values
    assert bootstrap_median_ci(values) == pytest.approx((0.995, 0.975, 1.015))
    with pytest.raises(ValueError):
        bootstrap_median_ci([])
