"""benchmarks/search_stop_calibration.py reads the probability each stop line printed and counts the wrong stops per
bin with an exact binomial interval (issue 54). Checked on stop lines in the words the search printed before and
after issue 54, on the exact interval's known values, and on a table of planted records."""

from __future__ import annotations

import pytest
from search_landscape import benchmark_module

pytest.importorskip("scipy", reason="the exact binomial interval uses scipy.stats.beta")

OLD = ("settled: no configuration left is likely to change the answer (P(any of the 19 changes it) = 0.001 < 0.05; "
       "the most likely, torch fp32 b1 cuda, P = 0.000), and the answer's configurations have every planned repeat "
       "measured")
ONE = ("settled: no configuration left is likely to change the answer (the most likely, null fp16 b1 2x cpu, P = "
       "0.013 < 0.05), and the answer's configurations have every planned repeat measured")
NONE = ("settled: no answer: no measured configuration meets every limit, and the 13 candidate(s) left are unlikely "
        "to (P(any meets every limit) = 0.004 < 0.01; the most likely, torch fp32 b1 cuda, P = 0.003)")

# the same stops in the words of issue 54 (decide.BELIEF, decide.NOT_A_RATE)
NEW = ("settled: no configuration left is likely to change the answer by the surrogates' estimate (P(any of the 19 "
       "changes it) = 0.001 < 0.05, a model's belief, not a measured error rate; the most likely, torch fp32 b1 cuda, "
       "P = 0.000), and the answer's configurations have every planned repeat measured")
NEW_ONE = ("settled: no configuration left is likely to change the answer by the surrogates' estimate (the most "
           "likely, null fp16 b1 2x cpu, P = 0.013 < 0.05, a model's belief, not a measured error rate), and the "
           "answer's configurations have every planned repeat measured")
NEW_NONE = ("settled: no answer: no measured configuration meets every limit, and the 13 candidate(s) left are "
            "unlikely to by the surrogates' estimate (P(any meets every limit) = 0.004 < 0.01, a model's belief, not "
            "a measured error rate; the most likely, torch fp32 b1 cuda, P = 0.003)")


def test_the_stated_p_is_read_from_each_kind_of_stop_line():
    cal = benchmark_module("search_stop_calibration")
    assert cal.stated_p(OLD) == cal.stated_p(NEW) == ("answer", 0.001)
    assert cal.stated_p(ONE) == cal.stated_p(NEW_ONE) == ("answer", 0.013)
    assert cal.stated_p(NONE) == cal.stated_p(NEW_NONE) == ("no answer", 0.004)
    assert cal.stated_p("settled: every configuration is measured or exhausted; no answer: ...") is None
    assert cal.stated_p("budget spent") is None


def test_the_exact_binomial_interval():
    cal = benchmark_module("search_stop_calibration")
    lo, hi = cal.clopper_pearson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10), abs=1e-9)  # 0.3085
    lo, hi = cal.clopper_pearson(10, 10)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10), abs=1e-9)
    lo, hi = cal.clopper_pearson(7, 20)  # the 7 of 20
    assert 0.15 < lo < 0.16 and 0.59 < hi < 0.60


def test_a_bin_holds_only_while_its_interval_reaches_its_stated_p():
    cal = benchmark_module("search_stop_calibration")

    def rec(p: float, right: bool) -> dict:
        return {"stop": OLD.replace("= 0.001 <", f"= {p:.3f} <"), "right": right, "same": right}

    calibrated = [rec(0.03, i >= 1) for i in range(100)]  # 1 wrong of 100 at P 0.030: holds
    broken = [rec(0.001, i >= 7) for i in range(20)]  # the 7 of 20 at P 0.001: does not
    text = cal.table([("calibrated", calibrated), ("broken", broken)])
    line = next(ln for ln in text.splitlines() if ln.startswith("| calibrated | answer | 0.020-0.049 |"))
    assert "| 100 | 0.0300 | 1 | 1.0% [" in line and line.endswith("| yes |")
    line = next(ln for ln in text.splitlines() if ln.startswith("| broken | answer | 0.001-0.004 |"))
    assert "| 20 | 0.0010 | 7 | 35.0% [15.4%, 59.2%] |" in line and line.endswith("| **no** |")
    # the pooled line of a set is judged against the largest P its stops stated
    line = next(ln for ln in text.splitlines() if ln.startswith("| broken | answer | all |"))
    assert line.endswith("| **no** |")
