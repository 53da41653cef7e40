"""issue 34: a limit is checked on every repeat that measured it, an invalid one included; the answer names each
invalid repeat with its value and why; "worst repeat" is the true worst; verdicts count what was measured. The
cases are the ones the issue found in the published grids, rebuilt small enough to check by hand."""

from __future__ import annotations

from pathlib import Path

from test_report_tables import make_run, row

from edgebench.answer.best import Limits, best_answer
from edgebench.answer.candidates import load_sources
from edgebench.answer.pareto import pareto_fronts
from edgebench.report.answer import to_text
from edgebench.report.pareto import pareto_table

UNSTABLE = "throughput unstable across 5 sub-windows: 16% from the mean"


def _r(i: int, precision: str, batch: int, tput: float, repeat: int, p90: float, status: str = "ok", **extra) -> dict:
    return row(i, precision, batch, tput, status, UNSTABLE if status == "invalid" else "", repeat=repeat,
               config_hash=f"{precision}{batch}", latency_ms_p90=p90, inferences=300, power_w_mean=200.0,
               power_scope="gpu", **extra)


def _h100_like(tmp_path: Path) -> Path:
    """fp16 b16: one ok repeat with p90 5.9 ms and two invalid ones at 8.47 and 7.34 ms (issue 34's H100 case);
    fp16 b8: three ok repeats under 6 ms, slower."""
    return make_run(tmp_path / "grid", [
        _r(0, "fp16", 16, 3000.0, 0, 5.9), _r(1, "fp16", 16, 3400.0, 1, 8.47, "invalid"),
        _r(2, "fp16", 16, 3300.0, 2, 7.34, "invalid"),
        _r(3, "fp16", 8, 2000.0, 0, 4.1), _r(4, "fp16", 8, 2050.0, 1, 4.3), _r(5, "fp16", 8, 1980.0, 2, 4.2)])


def test_an_invalid_repeat_that_breaks_the_slo_rules_the_configuration_out(tmp_path: Path):
    answer = best_answer([_h100_like(tmp_path)], limits=Limits(slo_ms=6.0, percentile="p90"))
    (only,) = answer.answers
    assert [r.candidate.identity["batch"] for r in only.feasible] == [8]
    ((cand, why),) = only.missed
    assert cand.identity["batch"] == 16
    assert why == f"latency_ms_p90 8.47 > 6 on repeat 1 (invalid: {UNSTABLE}), worst of 3 repeat(s)"
    text = to_text(answer)
    assert "on every repeat that measured it (invalid ones included)" in text


def test_a_winner_with_an_invalid_repeat_names_it_and_its_worst_is_the_true_worst(tmp_path: Path):
    # under a 9 ms SLO every repeat of b16 meets: it wins on its one usable repeat, but says what stands beside it
    answer = best_answer([_h100_like(tmp_path)], limits=Limits(slo_ms=9.0, percentile="p90"))
    (only,) = answer.answers
    best = only.feasible[0]
    assert best.candidate.identity["batch"] == 16 and best.interval.n == 1
    assert best.limit_values["latency_ms_p90"] == 8.47  # the worst of all three repeats, not of the ok one (5.9)
    text = to_text(answer)
    assert "worst repeat: p90 8.47 ms" in text
    assert f"not pooled: repeat 1 invalid (p90 8.47 ms; {UNSTABLE}); repeat 2 invalid (p90 7.34 ms; {UNSTABLE})" \
        in text
    # three repeats were measured: the verdict counts them, it never asks for ">= 3 repeats" as if one had been
    assert "1 usable repeat + 2 invalid vs 3 usable repeats" in only.verdict.text
    assert only.verdict.text.endswith("measure 3 more usable repeat(s) of the best (2 of its 3 were invalid) and 1 more "
                                      "usable repeat(s) of the runner-up")  # 4 a side: the pick counted (issue 54)
    assert "measure >= 3" not in text and "--repeats 3" not in text


def test_the_multi_gpu_case_judges_every_repeat_alike(tmp_path: Path):
    """issue 34's H200x2 case: cuda:0+cuda:1 was named with "worst repeat: p99 6.161" while its other (invalid)
    repeat measured 7.098, and cuda:1 was rejected for 7.19 on an ok repeat. Under the one rule both miss a 7 ms
    SLO and the answer is cuda:0."""
    def r(i: int, placement: str, tput: float, repeat: int, p99: float, status: str = "ok") -> dict:
        out = row(i, "fp16", 1, tput, status, UNSTABLE if status == "invalid" else "", repeat=repeat,
                  config_hash=placement, latency_ms_p99=p99, inferences=1000)
        out["placement"], out["instances"] = placement, placement.count("+") + 1
        return out

    run = make_run(tmp_path / "mg", [r(0, "cuda:0+cuda:1", 900.0, 0, 6.161), r(1, "cuda:0+cuda:1", 950.0, 1, 7.098,
                                                                              "invalid"),
                                     r(2, "cuda:1", 500.0, 0, 6.5), r(3, "cuda:1", 505.0, 1, 7.19),
                                     r(4, "cuda:0", 480.0, 0, 6.4), r(5, "cuda:0", 490.0, 1, 6.6)])
    (only,) = best_answer([run], limits=Limits(slo_ms=7.0)).answers
    assert [r.candidate.identity["placement"] for r in only.feasible] == ["cuda:0"]
    assert sorted(c.identity["placement"] for c, _why in only.missed) == ["cuda:0+cuda:1", "cuda:1"]


def test_a_configuration_whose_repeats_are_all_invalid_is_never_the_answer(tmp_path: Path):
    run = make_run(tmp_path / "r", [_r(0, "int8", 1, 9000.0, 0, 1.0, "invalid"), _r(1, "int8", 1, 9100.0, 1, 1.0,
                                                                                   "invalid"),
                                    _r(2, "fp32", 1, 100.0, 0, 5.0)])
    answer = best_answer([run])
    assert [r.candidate.identity["precision"] for r in answer.answers[0].feasible] == ["fp32"]
    assert answer.left_out.counts[f"invalid: {UNSTABLE.replace('5', 'N').replace('16', 'N')}"] == 2


def test_the_pareto_front_keeps_invalid_repeats_beside_its_points(tmp_path: Path):
    (front,) = pareto_fronts(load_sources([_h100_like(tmp_path)]))
    b16 = next(p for p in front.points if p.candidate.identity["batch"] == 16)
    assert b16.throughput.n == 1 and len(b16.candidate.invalid_rows) == 2
    table = pareto_table([front])
    (rec,) = [r for r in table.records if r["configuration"].startswith("ort fp16 b16")]
    assert rec["invalid_repeats"].startswith("repeat 1 invalid (throughput_ips 3400, p99 ")


def test_an_accuracy_limit_finer_than_one_sample_is_named_with_the_samples_it_needs(tmp_path: Path):
    run = make_run(tmp_path / "r", [
        _r(0, "fp32", 1, 100.0, 0, 5.0, accuracy_samples=8, accuracy_top1_agreement_pct=100.0),
        _r(1, "int8", 1, 300.0, 0, 2.0, accuracy_samples=8, accuracy_top1_agreement_pct=100.0)])
    fine = to_text(best_answer([run], limits=Limits(max_accuracy_drop_pct=0.5)))
    assert ("note: the accuracy limit 0.5 pp is finer than one sample: accuracy was measured on as few as 8 samples, "
            "where one sample is 12.5 pp, so a drop reads 0 or >= 12.5 pp; a 0.5 pp limit needs >= 200 samples") in fine
    coarse = to_text(best_answer([run], limits=Limits(max_accuracy_drop_pct=15.0)))
    assert "finer than one sample" not in coarse


def test_reasons_are_printed_verbatim(tmp_path: Path):
    """issue 34: the answer rewrote digits inside reasons ('CPUExecutionProvider computes floatN graphs in floatN').
    Rows of one cause still count together; what is printed is a row's reason as written."""
    skip = "CPUExecutionProvider computes float16 graphs in float32 (no fp16 kernels): the row would measure casts"
    run = make_run(tmp_path / "r", [
        _r(0, "fp32", 1, 100.0, 0, 5.0),
        row(1, "fp16", 1, None, "skipped", skip, repeat=0, config_hash="s1"),
        row(2, "fp16", 4, None, "skipped", skip, repeat=0, config_hash="s2"),
        _r(3, "int8", 1, 300.0, 0, 2.0, "invalid"), _r(4, "int8", 4, 310.0, 0, 2.0, "invalid")])
    text = to_text(best_answer([run]))
    assert f"2 row(s): skipped: {skip}" in text and "floatN" not in text
    assert f"2 row(s): invalid: {UNSTABLE} (and 1 more of this cause)" in text
