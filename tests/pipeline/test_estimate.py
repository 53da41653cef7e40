"""Issue 28: the estimate a sweep prints before it runs, from windows, warm-ups, set-up and earlier runs' speeds."""

from __future__ import annotations

import pytest
from estimate_rows import cfg, earlier_run

from edgebench.commands.progress import SweepProgress, describe_estimate
from edgebench.config.profile import load_profile
from edgebench.pipeline.estimate import DEFAULT_SETUP_S, estimate
from edgebench.pipeline.plan import PlannedRun


@pytest.fixture()
def profile():
    return load_profile("smoke").with_overrides("telemetry", idle_baseline_s=2.0)


def test_a_known_speed_gives_the_window_and_says_which_rows_cannot_back_a_p99(tmp_path, profile):
    runs = tmp_path / "runs"
    fast, slow, new = cfg(1), cfg(4, 2), cfg(8)
    # fast: 1000 inferences in 2 s (500/s): the 2 s duration rules; slow: 300 in 30 s (10/s): capped at 30 s
    earlier_run(runs, "20260101-000000-host", [(fast, 2.0, 1000, 4.0), (slow, 30.0, 300, 6.0)])
    planned = [PlannedRun(fast, None), PlannedRun(slow, None), PlannedRun(new, None),
               PlannedRun(cfg(1, precision="fp16"), "fp16 needs a GPU provider")]
    est = estimate(planned, profile, runs)
    assert [r.cfg for r in est.rows] == [fast, slow, new] and est.skipped == 1
    by = {r.cfg: r for r in est.rows}
    assert by[fast].inferences_per_s == pytest.approx(500.0) and by[fast].window_s == 2.0
    assert by[slow].window_s == 30.0 and by[slow].p99_backed is False
    assert by[slow].p99_needs_s == pytest.approx(666 / 10.0)  # 662 + 2 per instance, at 10/s
    assert by[new].inferences_per_s is None and (by[new].window_min_s, by[new].window_s) == (2.0, 30.0)
    # the plan's first resnet18/ort/fp32 row pays the shared set-up (median of earlier ones), later rows the least
    assert (by[fast].setup_s, by[slow].setup_s, by[new].setup_s) == (5.0, 4.0, 4.0)
    assert est.total_s == pytest.approx(2.0 + (5 + 1 + 2) + (4 + 1 + 30) + (4 + 1 + 30))
    assert est.total_min_s == pytest.approx(est.total_s - 28.0)
    text = describe_estimate(est)
    assert text.splitlines()[0].startswith("estimate: 52 s to 1 min 20 s for 3 row(s)")
    assert "speed known from earlier runs for 2 of 3 row(s) (20260101-000000-host)" in text
    assert "speed unknown for 1 row(s)" in text
    assert ("1 row(s) cannot back a p99 (662 inferences) within max_duration_s; they stay valid, the p99 empty "
            "with its reason:") in text
    assert "resnet18/ort/fp32/b4/2x cpu/process: ~10 inferences/s, a p99 needs about 1 min 07 s " \
           "(--max-duration 67 would back it)" in text


def test_without_earlier_runs_the_window_is_a_range_and_set_up_a_default(tmp_path, profile):
    est = estimate([PlannedRun(cfg(1), None)], profile, tmp_path / "no-runs")
    (row,) = est.rows
    assert row.setup_s == DEFAULT_SETUP_S == 5.0 and row.p99_backed is None
    assert (est.total_min_s, est.total_s) == (2.0 + DEFAULT_SETUP_S + 1 + 2, 2.0 + DEFAULT_SETUP_S + 1 + 30)


def test_rows_a_resumed_run_has_are_not_estimated(tmp_path, profile):
    planned = [PlannedRun(cfg(1), None), PlannedRun(cfg(2), None)]
    est = estimate(planned, profile, tmp_path, done={cfg(1).config_hash()})
    assert [r.cfg.batch for r in est.rows] == [2]


def test_the_eta_counts_down_and_scales_by_how_the_rows_so_far_compared(tmp_path, profile):
    planned = [PlannedRun(cfg(1), None), PlannedRun(cfg(2), None)]
    est = estimate(planned, profile.with_overrides("telemetry", idle_baseline_s=0.0), tmp_path)
    shown = SweepProgress(est, live=False)
    assert shown.eta_s() == pytest.approx(est.total_s)
    shown.on_start(0, 2, cfg(1))
    shown.row_t0 -= 1000.0  # the first row took far longer than its estimate
    shown.on_row(0, 2, {"status": "ok", "model": "resnet18"})
    assert shown.done == 1 and shown.eta_s() == pytest.approx(est.rows[1].total_s * 4.0)  # scaled, at most 4x
    assert shown.status_lines()[0].startswith("1/2 rows, 1 left, ")


def test_after_a_sweep_rows_without_a_p99_are_counted_with_the_max_duration_that_would_back_them():
    from edgebench.commands.progress import p99_note

    rows = [{"status": "ok", "latency_ms_p99": None, "inferences": 500, "window_s": 20.0, "instances": 1},  # 25/s
            {"status": "invalid", "latency_ms_p99": None, "inferences": 300, "window_s": 20.0, "instances": 2},
            {"status": "ok", "latency_ms_p99": 4.2, "inferences": 900, "window_s": 3.0, "instances": 1},
            {"status": "skipped"}]
    assert p99_note(rows) == ("p99 empty in 2 of 3 measured row(s): too few inferences in their windows "
                              "(empty_reasons says so per row); --max-duration 45 would back all of them")  # 666/15
    assert p99_note(rows[2:]) is None
