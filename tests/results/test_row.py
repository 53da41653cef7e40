"""The row steps: each column owned by one step (results.schema), the steps run in order (pipeline.row_steps), the
rules where two sources could fill a column, the outcome in its one order, the types checked per step and again by
the store."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from edgebench.config.run_config import RunConfig
from edgebench.pipeline import row_steps
from edgebench.pipeline.row_steps import ROW_STEPS, RowFacts, RowStep, build_row, run_steps
from edgebench.results.row import IdleBaseline, Row, RowAssemblyError, Verdict, merge_telemetry
from edgebench.results.schema import (
    COLUMN_NAMES,
    COLUMN_STEPS,
    COLUMN_TYPES,
    COLUMNS,
    ColumnTypeError,
    ownership_problems,
    type_problem,
)
from edgebench.results.store import ResultsStore
from edgebench.runner.backlog import LatencyTrend
from edgebench.runner.metrics import Summary
from edgebench.runner.orchestrator import RunOutcome

IDENT = {"model": "tiny_cnn", "backend": "trt", "precision": "fp16", "batch": 4, "instances": 1, "mode": "process",
         "placement": "gpu", "run_id": "r", "row_index": 0, "config_hash": "abc", "edgebench_version": "0"}
METRICS = {"throughput_ips": 400.0, "window_s": 2.0, "inferences": 200, "samples": 800, "latency_ms_p99": 12.5}
SUMMARY = Summary(0, 2_000_000_000, 2.0, 200, 800, 400.0, [400.0], {"p99": 12.5})
CFG = RunConfig("tiny_cnn", "trt", "fp16", 4, ("gpu",))


def facts(**kw) -> RowFacts:
    """A measured row's facts: the instances ran (no timelines) and the runner judged the window ok."""
    kw.setdefault("verdict", Verdict(judged=("ok", "")))
    kw.setdefault("run", RunOutcome("ok", "", [], 0, 0))
    return RowFacts(dict(IDENT), cfg=kw.pop("cfg", CFG), summary=kw.pop("summary", SUMMARY), **kw)


def build(f: RowFacts, **given: dict) -> Row:
    """ROW_STEPS on `f`, the steps named in `given` giving those columns (as their measurement would have)."""
    return run_steps(tuple(RowStep(s.name, lambda _f, _row, c=given[s.name]: c) if s.name in given else s
                           for s in ROW_STEPS), f)


# ------------------------------------------------------------------ schema: a type per column


def test_every_column_has_one_of_four_types_and_units_imply_numbers():
    assert {c.type for c in COLUMNS} == {int, float, str, bool}
    for col in COLUMNS:
        if col.unit in ("ms", "W", "mJ", "J", "%", "MiB", "s", "samples/s", "1/s", "MHz", "C"):
            assert col.type is float or col.name == "per_instance_ips", col.name
    assert COLUMN_TYPES["batch"] is int and COLUMN_TYPES["throttled"] is bool and COLUMN_TYPES["reason"] is str
    assert COLUMN_TYPES["per_instance_ips"] is str  # ';'-joined per instance: text, not one number
    assert tuple(c.name for c in COLUMNS) == COLUMN_NAMES


@pytest.mark.parametrize("name, value, ok", [
    ("batch", 4, True), ("batch", 4.0, False), ("batch", True, False), ("batch", "4", False),
    ("throughput_ips", 1.5, True), ("throughput_ips", 2, True), ("throughput_ips", "1.5", False),
    ("throttled", False, True), ("throttled", 0, False), ("throttled", "false", False),
    ("reason", "text", True), ("reason", 3, False), ("per_instance_ips", [1.5, 2.0], True),
    ("energy_j", None, True),
])
def test_type_problem_says_what_is_wrong(name, value, ok):
    problem = type_problem(name, value)
    assert (problem is None) == ok, problem
    if not ok:
        assert problem.startswith(f"{COLUMN_TYPES[name].__name__} column, got {type(value).__name__}")


def test_store_refuses_a_wrong_type_naming_column_and_writer(tmp_path):
    row = build_row(facts())
    row["inferences"] = 200.0  # as if metrics had written a float
    store = ResultsStore(tmp_path)
    with pytest.raises(ColumnTypeError, match=r"column 'inferences' written by metrics: int column, got float 200.0"):
        store.append(row)
    with pytest.raises(ColumnTypeError, match=r"column 'slo_met' written by the caller: bool column, got text"):
        store.append({"model": "m", "status": "ok", "slo_met": "maybe"})
    assert store.rows() == []
    store.append({"model": "m", "status": "ok", "batch": "8", "slo_met": "true"})  # text that reads back typed
    assert store.records()[0]["batch"] == 8 and store.records()[0]["slo_met"] is True


def test_assembly_refuses_a_wrong_type_naming_the_step():
    with pytest.raises(ColumnTypeError, match=r"column 'samples' written by step 'metrics': int column, got str"):
        build(RowFacts(dict(IDENT)), metrics={"samples": "800"})
    with pytest.raises(ColumnTypeError, match=r"'throttled' written by step 'telemetry:nvml'"):
        merge_telemetry([("nvml", {"throttled": "yes"})])


# ------------------------------------------------------------------ one owner per column


def test_every_column_is_owned_by_one_step_and_every_step_owns_a_column():
    names = tuple(s.name for s in ROW_STEPS)
    assert ownership_problems(COLUMNS, names) == []
    assert len(set(names)) == len(names) and set(COLUMN_STEPS.values()) == set(names)
    assert names.index("outcome") > names.index("slo") and names[-1] == "empty_reasons"  # the outcome's inputs first
    unowned = [*COLUMNS, replace(COLUMNS[0], name="joules_per_token", step="tokens")]
    assert ownership_problems(unowned, names) == [
        "column 'joules_per_token' is owned by no row step (no step is named 'tokens')"]
    twice = [*COLUMNS, replace(next(c for c in COLUMNS if c.name == "throughput_ips"), step="telemetry")]
    assert ownership_problems(twice, names) == ["column 'throughput_ips' is owned by two steps: 'metrics' and "
                                                "'telemetry'"]
    assert ownership_problems(COLUMNS, (*names, "idle")) == ["row step(s) idle own no column"]


# ------------------------------------------------------------------ one writer per column


def test_two_writers_of_one_column_are_refused_naming_both():
    with pytest.raises(RowAssemblyError, match=r"column 'provider' written by two steps: 'setup' and 'backend'"):
        build(facts(), setup={"provider": "x"}, backend={"provider": "CPUExecutionProvider"})
    with pytest.raises(RowAssemblyError, match=r"column 'slo_ms' written by two steps: 'metrics' and 'slo'"):
        build(facts(), metrics={**METRICS, "slo_ms": 5.0})


def test_status_reason_and_derived_columns_are_no_other_steps_to_write():
    with pytest.raises(RowAssemblyError, match=r"column 'reason' written by two steps: 'accuracy' and 'outcome'"):
        build(facts(), accuracy={"reason": "x"})
    with pytest.raises(RowAssemblyError, match=r"column 'power_w_idle' written by two steps: 'load' and 'energy'"):
        build(facts(), load={"power_w_idle": 3.0})
    with pytest.raises(RowAssemblyError, match=r"'latency_p50_ms', which is not a results column"):
        build(facts(), backend={"latency_p50_ms": 1.0})


def test_each_column_names_its_writer():
    row = build(facts(), setup={"warmup_s": 0.5}, backend={"provider": "TensorrtExecutionProvider"},
                telemetry=merge_telemetry([("host", {"cpu_util_pct_mean": 50.0})]))
    assert row.writers["model"] == "identity" and row.writers["provider"] == "backend"
    assert row.writers["throughput_ips"] == "metrics" and row.writers["cpu_util_pct_mean"] == "telemetry"
    assert row.writers["status"] == "outcome" and row.writers["warmup_s"] == "setup"
    assert all(COLUMN_STEPS[name] == step for name, step in row.writers.items())


# ------------------------------------------------------------------ the rules where two sources could fill a column


def test_tensor_core_evidence_kernel_profile_wins_over_the_engine():
    engine = {"tensor_core_evidence": "gpu 42/50 layers fp16", "engine_cache": "gpu: built"}
    prepared = SimpleNamespace(info={"provider": "tensorrt", "row_fields": engine})
    kernels = [("sm80_xmma_gemm_f16f16", 700.0), ("elementwise_kernel", 300.0)]
    run = RunOutcome("ok", "", [], 0, 0, kernels=kernels)
    row = build_row(facts(cfg=replace(CFG, kernel_profile_steps=5), prepared=prepared, run=run))
    assert row["tensor_core_evidence"].startswith("1/2 kernels on tensor cores; top: sm80_xmma_gemm_f16f16 700us TC")
    assert row["tensor_core_time_pct"] == pytest.approx(70.0) and row.writers["tensor_core_evidence"] == "tensor_cores"
    assert row["engine_cache"] == "gpu: built" and row.writers["engine_cache"] == "backend"
    only_engine = build_row(facts(prepared=prepared))  # no kernel profile asked for
    assert only_engine["tensor_core_evidence"] == "gpu 42/50 layers fp16" and "tensor_core_time_pct" not in only_engine
    failed = build_row(RowFacts(dict(IDENT), cfg=replace(CFG, kernel_profile_steps=5), prepared=prepared,
                                run=RunOutcome("failed", "died", [], 0, 0), verdict=Verdict(failure="died")))
    assert failed["tensor_core_evidence"] == "gpu 42/50 layers fp16"  # no profile ran: the engine's evidence
    assert "tensor_core_evidence" not in build_row(facts(prepared=SimpleNamespace(info={})))


def test_throttled_is_true_when_any_sampler_says_so_whatever_the_order():
    nvml = ("nvml", {"throttled": False, "throttle_reasons": None, "telemetry_source": "nvml", "power_w_mean": 80.0})
    jetson = ("jetson_throttle", {"throttled": True, "throttle_reasons": "gpu_thermal", "telemetry_source":
                                  "jetson_throttle", "power_w_mean": None})
    for order in ([nvml, jetson], [jetson, nvml]):
        merged = merge_telemetry(order)
        assert merged["throttled"] is True and merged["throttle_reasons"] == "gpu_thermal"
        assert merged["power_w_mean"] == 80.0  # the first sampler that measured it
        row = build(facts(), telemetry=merged)
        assert row["status"] == "invalid" and row["reason"] == "device throttled: gpu_thermal"
    assert merge_telemetry([nvml, jetson])["telemetry_source"] == "nvml+jetson_throttle"
    assert merge_telemetry([nvml])["throttled"] is False and "throttled" not in merge_telemetry([])
    both = merge_telemetry([("nvml", {"throttled": True, "throttle_reasons": "sw_power_cap"}),
                            ("jetson_throttle", {"throttled": True, "throttle_reasons": "gpu_thermal"})])
    assert both["throttle_reasons"] == "sw_power_cap;gpu_thermal"


def test_first_sampler_in_profile_order_fills_a_column():
    gpu = ("nvml", {"power_w_mean": 120.0, "power_scope": "gpu-board", "cpu_util_pct_mean": None})
    host = ("host", {"power_w_mean": 30.0, "power_scope": "cpu-package", "cpu_util_pct_mean": 12.0})
    merged = merge_telemetry([gpu, host])
    assert (merged["power_w_mean"], merged["power_scope"], merged["cpu_util_pct_mean"]) == (120.0, "gpu-board", 12.0)
    assert merge_telemetry([host, gpu])["power_w_mean"] == 30.0


# ------------------------------------------------------------------ outcome and derived columns


def test_outcome_steps_apply_in_their_stated_order():
    verdict = Verdict(judged=("invalid", "window too short"), telemetry_faults=["telemetry: jtop lost"],
                      sharing_notes=["mps: daemon log kept"], layer_profile_note="layer profile not written: X",
                      accuracy_notes=["accuracy not compared for out2"], labels_note="accuracy vs labels not scored: y")
    row = build(facts(verdict=verdict), telemetry=merge_telemetry([("nvml", {"throttled": True,
                                                                             "throttle_reasons": "hw"})]))
    assert row["status"] == "invalid"
    assert row["reason"] == ("window too short; telemetry: jtop lost; device throttled: hw; mps: daemon log kept; "
                             "layer profile not written: X; accuracy not compared for out2; "
                             "accuracy vs labels not scored: y")
    ok = build_row(facts())
    assert ok["status"] == "ok" and ok["reason"] is None  # an empty cell, as the reader gives it back
    failed = build_row(RowFacts(dict(IDENT), verdict=Verdict(failure="instance 1 died", sharing_notes=["mps: x"])))
    assert (failed["status"], failed["reason"]) == ("failed", "instance 1 died; mps: x")
    skipped = build_row(RowFacts(dict(IDENT), verdict=Verdict(skip_reason="fp16 needs a GPU")))
    assert (skipped["status"], skipped["reason"]) == ("skipped", "fp16 needs a GPU")
    assert set(skipped) == {*IDENT, "status", "reason"}  # nothing measured, nothing derived


def test_the_slo_step_is_judged_on_the_outcome_so_far_and_its_note_goes_in_order(monkeypatch):
    seen = []

    def judge(cfg, instances, summary, status: str, reason: str, trend=None) -> tuple[dict, str]:
        seen.append((status, reason))
        met = status == "ok"
        return ({"slo_ms": cfg.slo_ms, "slo_met": met, "slo_verdict": "met" if met else "unmeasured"},
                "" if met else "slo: x")

    monkeypatch.setattr(row_steps, "slo_fields", judge)
    slo = replace(CFG, slo_ms=20.0, rate_hz=15.0, placements=("gpu", "gpu"))
    verdict = Verdict(judged=("ok", ""), sharing_notes=["mps: y"], layer_profile_note="layer profile not written: z")
    row = build(facts(cfg=slo, verdict=verdict),
                telemetry=merge_telemetry([("nvml", {"throttled": True, "throttle_reasons": "hw"})]))
    assert seen == [("invalid", "device throttled: hw; mps: y")]  # after the invalidations and sharing notes
    assert row["reason"] == "device throttled: hw; mps: y; slo: x; layer profile not written: z"
    assert (row["slo_met"], row["slo_verdict"], row["slo_ms"]) == (False, "unmeasured", 20.0)
    assert row.writers["slo_ms"] == "slo" and row.writers["offered_rate_hz"] == "load"  # the stated rule for slo_ms
    assert row["offered_rate_hz"] == 30.0
    met = build_row(facts(cfg=slo))
    assert met["slo_met"] is True and met["status"] == "ok" and met["reason"] is None
    failed = build_row(RowFacts(dict(IDENT), cfg=slo, run=RunOutcome("failed", "died", [], 0, 0),
                                verdict=Verdict(failure="died")))
    assert (failed["status"], failed["slo_verdict"], failed["slo_met"]) == ("failed", "failed", False)
    monkeypatch.setattr(row_steps, "slo_fields", lambda *a, **kw: ({"slo_met": "true"}, ""))
    with pytest.raises(ColumnTypeError, match="column 'slo_met' written by step 'slo'"):
        build_row(facts(cfg=slo))


def test_energy_per_sample_and_dynamic_energy_only_where_the_idle_baseline_applies():
    tel = {"energy_j": 100.0, "power_w_mean": 50.0, "power_scope": "gpu-board"}
    row = build(facts(idle=IdleBaseline(20.0, gpu_board_ok=True)), telemetry=tel)
    assert row["energy_per_inference_mj"] == pytest.approx(100.0 * 1000 / 800)
    assert row["power_w_idle"] == 20.0 and row.writers["power_w_idle"] == "energy"
    assert row["energy_per_inference_dynamic_mj"] == pytest.approx((50.0 - 20.0) * 2.0 * 1000 / 800)
    other_gpus = build(facts(idle=IdleBaseline(20.0, gpu_board_ok=False)), telemetry=tel)
    assert other_gpus["energy_per_inference_mj"] is not None and "power_w_idle" not in other_gpus
    host = {"energy_j": 10.0, "power_w_mean": 5.0, "power_scope": "cpu-package"}
    assert build(facts(idle=IdleBaseline(2.0, gpu_board_ok=False)), telemetry=host)["power_w_idle"] == 2.0
    assert "energy_per_inference_mj" not in build(facts(), telemetry={"energy_j": None})


def test_calibration_step_reads_the_power_columns_and_leaves_them_raw():
    from edgebench.telemetry.power_calibration import PowerCalibration

    cal = PowerCalibration(1.1, 2.0, "bench meter", origin="profile p")
    row = build(facts(calibration=(cal, "")), telemetry={"power_w_mean": 10.0, "power_scope": "soc-total"})
    assert row["power_w_mean"] == 10.0 and row["power_w_mean_calibrated"] == pytest.approx(13.0)
    assert row["energy_per_inference_calibrated_mj"] == pytest.approx(13.0 * 2.0 * 1000 / 800)
    assert row.writers["power_calibration"] == "calibration"
    assert build(facts(calibration=(None, "none: f.yaml has no entry")))["power_calibration"] == \
        "none: f.yaml has no entry"
    assert "power_calibration" not in build_row(RowFacts(dict(IDENT), verdict=Verdict(failure="died")))


def test_empty_reasons_only_for_measured_rows():
    row = build(facts(samplers=("host",), idle_absent="idle baseline off"), telemetry={"power_w_mean": 3.0})
    assert row["empty_reasons"].endswith("power_w_idle, energy_per_inference_dynamic_mj: idle baseline off")
    assert "empty_reasons" not in build_row(RowFacts(dict(IDENT), verdict=Verdict(failure="died")))


def test_a_row_that_cannot_be_assembled_fails_alone_and_the_sweep_goes_on(tmp_path):
    from edgebench.pipeline.sweep import _assemble

    bad = facts(prepared=SimpleNamespace(info={"provider": "b", "row_fields": {"setup_s": 1.0}}))
    row = _assemble(bad, tmp_path / "rows" / "0000-abc")
    assert row["status"] == "failed" and "internal error RowAssemblyError" in row["reason"]
    assert "'backend' and 'setup'" in row["reason"] and row["model"] == "tiny_cnn"
    assert "RowAssemblyError" in (tmp_path / "rows" / "0000-abc" / "error.txt").read_text()


def test_the_slo_step_judges_over_the_horizon_with_the_windows_latency_trend():
    """p99 12.5 ms against 20 ms over 1,000 inferences (LoadGen's early stopping shows it: >= 459 with none over): a
    trend bounded at 0.04 ms/s could add 24 ms over 600 s (unmeasured, the reason says what a longer window would
    settle), 4 ms over 100 s (met). Over 200 inferences early stopping cannot show it: unmeasured whatever the
    horizon, and the reason names the queries it needs."""
    slo = replace(CFG, slo_ms=20.0, rate_hz=15.0, placements=("gpu", "gpu"))
    flat = LatencyTrend(0.01, -0.02, 0.04, span_s=2.0, bins=20, inferences=1000, p50_ms=10.0)
    few = build_row(facts(cfg=replace(slo, slo_horizon_s=100.0), trend=flat))
    assert few["slo_verdict"] == "unmeasured" and "LoadGen's early stopping needs 459 queries with 0 over" in few["reason"]
    many = replace(SUMMARY, inferences=1000)
    row = build_row(facts(cfg=slo, trend=flat, summary=many))
    assert (row["slo_verdict"], row["slo_met"], row["slo_horizon_s"]) == ("unmeasured", None, 600.0)
    assert row["slo_growth_bound_ms"] == pytest.approx(24.0) and row["status"] == "ok"
    assert "cannot exclude a growth of 0.04 ms/s" in row["reason"] and "= 36.5 ms > 20 ms" in row["reason"]
    row = build_row(facts(cfg=replace(slo, slo_horizon_s=100.0), trend=flat, summary=many))
    assert (row["slo_verdict"], row["slo_met"], row["reason"]) == ("met", True, None)
    assert row["slo_growth_bound_ms"] == pytest.approx(4.0)
    assert build_row(facts(cfg=replace(slo, slo_horizon_s=0.0), summary=many))["slo_verdict"] == "met"  # the window
    assert build_row(facts(cfg=slo, summary=many))["slo_verdict"] == "unmeasured"  # no trend: no bound over the horizon
