"""results.row: the one place where the parts become a row, one writer per column, the rules where two may write,
the outcome steps in their one order, the types checked per part and again by the store."""

from __future__ import annotations

import pytest

from edgebench.results.row import (
    IdleBaseline,
    RowAssemblyError,
    RowParts,
    Verdict,
    assemble_row,
    merge_telemetry,
)
from edgebench.results.schema import COLUMN_NAMES, COLUMN_TYPES, COLUMNS, ColumnTypeError, type_problem
from edgebench.results.store import ResultsStore

IDENT = {"model": "tiny_cnn", "backend": "trt", "precision": "fp16", "batch": 4, "instances": 1, "mode": "process",
         "placement": "gpu", "run_id": "r", "row_index": 0, "config_hash": "abc", "edgebench_version": "0"}
METRICS = {"throughput_ips": 400.0, "window_s": 2.0, "inferences": 200, "samples": 800, "latency_ms_p99": 12.5}


def parts(**kw) -> RowParts:
    kw.setdefault("verdict", Verdict(judged=("ok", "")))
    return RowParts(dict(IDENT), metrics=dict(METRICS), **kw)


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
    row = assemble_row(parts())
    row["inferences"] = 200.0  # as if metrics had written a float
    store = ResultsStore(tmp_path)
    with pytest.raises(ColumnTypeError, match=r"column 'inferences' written by metrics: int column, got float 200.0"):
        store.append(row)
    with pytest.raises(ColumnTypeError, match=r"column 'slo_met' written by the caller: bool column, got text"):
        store.append({"model": "m", "status": "ok", "slo_met": "maybe"})
    assert store.rows() == []
    store.append({"model": "m", "status": "ok", "batch": "8", "slo_met": "true"})  # text that reads back typed
    assert store.records()[0]["batch"] == 8 and store.records()[0]["slo_met"] is True


def test_assembly_refuses_a_wrong_type_naming_the_part():
    with pytest.raises(ColumnTypeError, match=r"column 'samples' written by part 'metrics': int column, got str"):
        assemble_row(RowParts(dict(IDENT), metrics={"samples": "800"}))
    with pytest.raises(ColumnTypeError, match=r"'throttled' written by part 'telemetry:nvml'"):
        assemble_row(parts(telemetry=[("nvml", {"throttled": "yes"})]))


# ------------------------------------------------------------------ one writer per column


def test_two_writers_of_one_column_are_refused_naming_both():
    with pytest.raises(RowAssemblyError, match=r"column 'provider' written by two parts: 'setup' and 'backend'"):
        assemble_row(parts(setup={"provider": "x"}, backend={"provider": "CPUExecutionProvider"}))
    with pytest.raises(RowAssemblyError, match=r"column 'slo_ms' written by two parts: 'metrics' and 'load'"):
        assemble_row(RowParts(dict(IDENT), metrics={**METRICS, "slo_ms": 5.0}, load={"slo_ms": 5.0},
                              verdict=Verdict(judged=("ok", ""))))


def test_status_reason_and_derived_columns_are_no_parts_to_write():
    with pytest.raises(RowAssemblyError, match=r"part 'accuracy' wrote column 'reason', which only the outcome"):
        assemble_row(parts(accuracy={"reason": "x"}))
    with pytest.raises(RowAssemblyError, match=r"part 'load' wrote column 'power_w_idle', which only the energy step"):
        assemble_row(parts(load={"power_w_idle": 3.0}))
    with pytest.raises(RowAssemblyError, match=r"'latency_p50_ms', which is not a results column"):
        assemble_row(parts(backend={"latency_p50_ms": 1.0}))


def test_each_column_names_its_writer():
    row = assemble_row(parts(setup={"warmup_s": 0.5}, backend={"provider": "TensorrtExecutionProvider"},
                             telemetry=[("host", {"cpu_util_pct_mean": 50.0})]))
    assert row.writers["model"] == "identity" and row.writers["provider"] == "backend"
    assert row.writers["throughput_ips"] == "metrics" and row.writers["cpu_util_pct_mean"] == "telemetry"
    assert row.writers["status"] == "outcome" and row.writers["warmup_s"] == "setup"


# ------------------------------------------------------------------ the rules where two parts may write


def test_tensor_core_evidence_kernel_profile_wins_over_the_engine_in_either_order():
    engine = {"tensor_core_evidence": "gpu 42/50 layers fp16", "engine_cache": "gpu: built"}
    kernels = {"tensor_core_evidence": "3/5 kernels on tensor cores; top: sm80_xmma", "tensor_core_time_pct": 71.0}
    row = assemble_row(parts(backend=engine, kernels=kernels))
    assert row["tensor_core_evidence"] == kernels["tensor_core_evidence"] and row.writers["tensor_core_evidence"] == "kernels"
    assert row["engine_cache"] == "gpu: built" and row["tensor_core_time_pct"] == 71.0
    only_engine = assemble_row(parts(backend=engine))
    assert only_engine["tensor_core_evidence"] == "gpu 42/50 layers fp16"
    assert only_engine.writers["tensor_core_evidence"] == "backend"
    # a kernel profile that found nothing (None) does not blank the engine's evidence
    empty = assemble_row(parts(backend=engine, kernels={"tensor_core_evidence": None}))
    assert empty["tensor_core_evidence"] == "gpu 42/50 layers fp16"


def test_throttled_is_true_when_any_sampler_says_so_whatever_the_order():
    nvml = ("nvml", {"throttled": False, "throttle_reasons": None, "telemetry_source": "nvml", "power_w_mean": 80.0})
    jetson = ("jetson_throttle", {"throttled": True, "throttle_reasons": "gpu_thermal", "telemetry_source":
                                  "jetson_throttle", "power_w_mean": None})
    for order in ([nvml, jetson], [jetson, nvml]):
        merged = merge_telemetry(order)
        assert merged["throttled"] is True and merged["throttle_reasons"] == "gpu_thermal"
        assert merged["power_w_mean"] == 80.0  # the first sampler that measured it
        row = assemble_row(parts(telemetry=order))
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
    row = assemble_row(parts(verdict=verdict, telemetry=[("nvml", {"throttled": True, "throttle_reasons": "hw"})]))
    assert row["status"] == "invalid"
    assert row["reason"] == ("window too short; telemetry: jtop lost; device throttled: hw; mps: daemon log kept; "
                             "layer profile not written: X; accuracy not compared for out2; "
                             "accuracy vs labels not scored: y")
    ok = assemble_row(parts())
    assert ok["status"] == "ok" and ok["reason"] is None  # an empty cell, as the reader gives it back
    failed = assemble_row(RowParts(dict(IDENT), verdict=Verdict(failure="instance 1 died", sharing_notes=["mps: x"])))
    assert (failed["status"], failed["reason"]) == ("failed", "instance 1 died; mps: x")
    skipped = assemble_row(RowParts(dict(IDENT), verdict=Verdict(skip_reason="fp16 needs a GPU")))
    assert (skipped["status"], skipped["reason"]) == ("skipped", "fp16 needs a GPU")


def test_the_slo_part_is_judged_on_the_outcome_so_far_and_its_note_goes_in_order():
    seen = []

    def judge(status: str, reason: str) -> tuple[dict, str]:
        seen.append((status, reason))
        met = status == "ok"
        return {"slo_ms": 20.0, "slo_met": met, "slo_verdict": "met" if met else "unmeasured"}, "" if met else "slo: x"

    verdict = Verdict(judged=("ok", ""), sharing_notes=["mps: y"], layer_profile_note="layer profile not written: z")
    row = assemble_row(parts(load={"slo_ms": 20.0, "offered_rate_hz": 30.0}, slo=judge, verdict=verdict,
                             telemetry=[("nvml", {"throttled": True, "throttle_reasons": "hw"})]))
    assert seen == [("invalid", "device throttled: hw; mps: y")]  # after the invalidations and sharing notes
    assert row["reason"] == "device throttled: hw; mps: y; slo: x; layer profile not written: z"
    assert (row["slo_met"], row["slo_verdict"], row["slo_ms"]) == (False, "unmeasured", 20.0)
    assert row.writers["slo_ms"] == "slo" and row.writers["offered_rate_hz"] == "load"  # the stated rule for slo_ms
    met = assemble_row(parts(slo=judge))
    assert met["slo_met"] is True and met["status"] == "ok" and met["reason"] is None
    failed = assemble_row(RowParts(dict(IDENT), slo=lambda s, r: ({"slo_met": False, "slo_verdict": "failed"}, ""),
                                   verdict=Verdict(failure="died")))
    assert (failed["status"], failed["slo_verdict"]) == ("failed", "failed")
    with pytest.raises(ColumnTypeError, match="column 'slo_met' written by part 'slo'"):
        assemble_row(parts(slo=lambda s, r: ({"slo_met": "true"}, "")))


def test_energy_per_sample_and_dynamic_energy_only_where_the_idle_baseline_applies():
    tel = [("nvml", {"energy_j": 100.0, "power_w_mean": 50.0, "power_scope": "gpu-board"})]
    row = assemble_row(parts(telemetry=tel, idle=IdleBaseline(20.0, gpu_board_ok=True)))
    assert row["energy_per_inference_mj"] == pytest.approx(100.0 * 1000 / 800)
    assert row["power_w_idle"] == 20.0
    assert row["energy_per_inference_dynamic_mj"] == pytest.approx((50.0 - 20.0) * 2.0 * 1000 / 800)
    other_gpus = assemble_row(parts(telemetry=tel, idle=IdleBaseline(20.0, gpu_board_ok=False)))
    assert other_gpus["energy_per_inference_mj"] is not None and "power_w_idle" not in other_gpus
    host = [("host", {"energy_j": 10.0, "power_w_mean": 5.0, "power_scope": "cpu-package"})]
    assert assemble_row(parts(telemetry=host, idle=IdleBaseline(2.0, gpu_board_ok=False)))["power_w_idle"] == 2.0
    assert "energy_per_inference_mj" not in assemble_row(parts(telemetry=[("host", {"energy_j": None})]))


def test_a_row_that_cannot_be_assembled_fails_alone_and_the_sweep_goes_on(tmp_path):
    from edgebench.pipeline.sweep import _assemble

    row = _assemble(parts(setup={"provider": "a"}, backend={"provider": "b"}), tmp_path / "rows" / "0000-abc")
    assert row["status"] == "failed" and "internal error RowAssemblyError" in row["reason"]
    assert "'setup' and 'backend'" in row["reason"] and row["model"] == "tiny_cnn"
    assert "RowAssemblyError" in (tmp_path / "rows" / "0000-abc" / "error.txt").read_text()
