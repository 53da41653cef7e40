"""Medians with their order-statistic intervals over repeats and the coverage each really has (issue 34): exact
cases that can be worked out by hand, the repeats table (valid/asked, the shortfall named, the coverage in the cell
and the CSV), and the speedup / scaling tables carrying the interval and its coverage."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from test_report_tables import make_run, row

from edgebench.answer.intervals import median_ci, ratio_ci
from edgebench.report.repeats_table import interval_cell, repeats_table
from edgebench.report.tables import scaling_table, speedup_table
from edgebench.results.runs import load_run


def test_two_values_give_the_interval_from_one_to_the_other_and_say_it_covers_half():
    # [min, max] of 2 draws holds the true median unless both fall on one side: 1 - 2 * (1/2)^2 = 50%
    ci = median_ci([10.0, 14.0])
    assert (ci.median, ci.lo, ci.hi, ci.n, ci.coverage) == (12.0, 10.0, 14.0, 2, 0.5)
    assert ci.text() == "12 [10, 14] (50% interval)" and interval_cell(ci) == "[10, 14] 50%"


def test_interval_holds_the_median_lies_within_the_data_and_is_reproducible():
    values = [101.0, 98.5, 103.2, 99.9, 100.4, 97.1, 102.8]
    ci = median_ci(values)
    assert ci.median == statistics.median(values)
    # n=7: [x(2), x(6)] covers 1 - 2 * 8/128 = 87.5% < 95%, so [min, max]: 1 - 2/128 = 98.4%
    assert (ci.lo, ci.hi) == (97.1, 103.2) and ci.coverage == pytest.approx(1 - 2 / 128)
    assert ci.meets() and interval_cell(ci) == "[97.1, 103.2]"  # >= 95%: no percentage in the cell
    assert median_ci(values) == ci  # no resampling: a report re-built from the same CSV gives the same interval


@pytest.mark.parametrize("n, k", [(9, 2), (10, 2)])
def test_from_nine_repeats_the_interval_drops_the_extremes(n, k):
    values = [float(v) for v in range(1, n + 1)]  # x(i) = i
    ci = median_ci(list(reversed(values)))
    assert (ci.lo, ci.hi) == (values[k - 1], values[n - k])  # [x(2), x(n-1)]
    assert ci.coverage == pytest.approx(1 - 2 * (1 + n) / 2 ** n) and ci.coverage >= 0.95
    assert interval_cell(ci) == f"[{k}, {n - k + 1}]" and ci.text() == f"{statistics.median(values):g} [{k}, {n - k + 1}]"



def test_one_value_has_no_interval_and_says_so():
    ci = median_ci([5.0])
    assert (ci.median, ci.lo, ci.hi) == (5.0, None, None)
    assert ci.text() == "5 (n=1, no CI)"
    assert median_ci([]).text() == ""


def test_ratio_interval_of_constant_sides_is_the_ratio():
    ci = ratio_ci([300.0, 300.0, 300.0], [100.0, 100.0])
    assert (ci.median, ci.lo, ci.hi) == (3.0, 3.0, 3.0)
    assert ci.coverage == 0.75 * 0.5  # the product of the sides' coverages
    spread = ratio_ci([280.0, 300.0, 320.0], [95.0, 100.0, 105.0])
    # [lo_a / hi_b, hi_a / lo_b] of the sides' [min, max]: the worst and best pairing, covering >= 75% * 75%
    assert (spread.lo, spread.hi) == (280.0 / 105.0, 320.0 / 95.0) and spread.coverage == 0.5625
    assert interval_cell(spread, lower_bound=True) == "[2.667, 3.368] >=56.2%"


def _repeats(tmp_path: Path):
    rows = [row(0, "fp32", 1, 100.0, repeat=0), row(1, "fp32", 1, 104.0, repeat=1),
            row(2, "fp32", 1, 250.0, "invalid", "throughput unstable across 5 sub-windows: 30% from the mean",
                repeat=2),
            row(3, "int8", 1, 200.0, repeat=0), row(4, "int8", 1, 210.0, repeat=1), row(5, "int8", 1, 190.0, repeat=2),
            row(6, "fp32", 1, 180.0, instances=2, repeat=0), row(7, "fp32", 1, 190.0, instances=2, repeat=1),
            row(8, "fp32", 1, 200.0, instances=2, repeat=2)]
    path = make_run(tmp_path / "rep", rows)
    (path / "profile.yaml").write_text("name: board\nrun:\n  repeats: 3\n")
    return load_run(path)


def test_repeats_table_gives_median_interval_and_names_the_shortfall(tmp_path):
    run = _repeats(tmp_path)
    table = repeats_table([run])
    by = {(r["precision"], r["instances"]): r for r in table.records}
    fp32 = by[("fp32", 1)]
    assert fp32["ok_asked"] == "2/3"
    assert fp32["throughput_ips_median"] == 102.0  # the invalid 250 img/s repeat is not pooled
    assert (fp32["throughput_ips_ci_lo"], fp32["throughput_ips_ci_hi"]) == (100.0, 104.0)
    assert fp32["throughput_ips_ci_coverage"] == 0.5
    assert fp32["note"].startswith("fewer valid repeats than asked: 2 of 3: 1 invalid (throughput unstable")
    int8 = by[("int8", 1)]
    assert int8["ok_asked"] == "3/3" and int8["note"] == "" and int8["throughput_ips_median"] == 200.0
    # [min, max] of 3 repeats, exactly, covering the median 75% of the time
    assert (int8["throughput_ips_ci_lo"], int8["throughput_ips_ci_hi"], int8["throughput_ips_ci_coverage"]) == (
        190.0, 210.0, 0.75)
    md = table.to_markdown()
    assert "95% CI" not in md and "bootstrap" not in md  # issue 34: no label claims a coverage it does not have
    assert "102 [100, 104] (50% interval)" in md and "200 [190, 210] (75% interval)" in md
    written = table.write(tmp_path / "tables")
    header = written[0].read_text().splitlines()[0].split(",")
    i = header.index("throughput_ips_ci_hi")
    assert header[i - 1:i + 2] == ["throughput_ips_ci_lo", "throughput_ips_ci_hi", "throughput_ips_ci_coverage"]


def test_a_repeat_that_never_ran_counts_against_the_asked_number(tmp_path):
    path = make_run(tmp_path / "short", [row(0, "fp32", 1, 100.0, repeat=0)])
    (path / "profile.yaml").write_text("name: board\nrun:\n  repeats: 3\n")
    rec = repeats_table([load_run(path)]).records[0]
    assert rec["ok_asked"] == "1/3" and rec["note"].endswith("2 not run")
    assert rec["throughput_ips_text"] == "100 (n=1, no CI)"


def test_results_table_names_the_repeat_of_each_row(tmp_path):
    from edgebench.report.tables import results_table

    table = results_table([_repeats(tmp_path)])
    assert "repeat" in [c.key for c in table.columns]
    assert [r["repeat"] for r in table.records if r["precision"] == "int8"] == [0, 1, 2]


def test_speedup_and_scaling_tables_carry_the_interval(tmp_path):
    run = _repeats(tmp_path)
    sp = {r["precision"]: r for r in speedup_table([run]).records if r["instances"] == 1}
    int8 = sp["int8"]
    assert int8["speedup_vs_fp32"] == pytest.approx(200.0 / 102.0)
    # int8's [190, 210] (3 repeats, 75%) over fp32's [100, 104] (2 repeats, 50%): [190/104, 210/100], >= 37.5%
    assert (int8["speedup_ci_lo"], int8["speedup_ci_hi"]) == (190.0 / 104.0, 210.0 / 100.0)
    assert int8["speedup_ci_coverage"] == 0.375 and int8["speedup_ci"] == "[1.827, 2.1] >=37.5%"
    assert int8["throughput_ci"] == "[190, 210] 75%" and int8["throughput_ips_ci_coverage"] == 0.75
    fp32 = sp["fp32"]  # over itself: 1 by definition, no interval (one sample on both sides is not independent)
    assert fp32["speedup_vs_fp32"] == 1.0 and fp32["speedup_ci"] == "baseline"
    assert (fp32["speedup_ci_lo"], fp32["speedup_ci_hi"], fp32["speedup_ci_coverage"]) == (None, None, None)
    notes = " ".join(speedup_table([run]).notes)
    assert "bootstrap" not in notes and "product" in notes and "lower bound" in notes
    sc = {r["instances"]: r for r in scaling_table([run]).records if r["precision"] == "fp32"}
    assert sc[2]["throughput_ips_median"] == 190.0
    assert (sc[2]["throughput_ips_ci_lo"], sc[2]["throughput_ips_ci_hi"]) == (180.0, 200.0)
    assert sc[2]["throughput_ips_ci_coverage"] == 0.75 and sc[2]["throughput_ci"] == "[180, 200] 75%"
    assert sc[1]["throughput_ci"] == "[100, 104] 50%"
