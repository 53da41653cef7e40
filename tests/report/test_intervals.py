"""Medians with bootstrap intervals over repeats: exact cases that can be worked out by hand, the repeats
table (valid/asked, the shortfall named), and the speedup / scaling tables carrying the interval."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from test_report_tables import make_run, row

from edgebench.answer.intervals import median_ci, ratio_ci
from edgebench.report.repeats_table import repeats_table
from edgebench.report.tables import scaling_table, speedup_table
from edgebench.results.runs import load_run


def test_two_values_give_the_interval_from_one_to_the_other():
    # bootstrap medians of [a, b] are a, (a+b)/2, b with probability 1/4, 1/2, 1/4: the 2.5% and 97.5%
    # percentiles are a and b
    ci = median_ci([10.0, 14.0])
    assert (ci.median, ci.lo, ci.hi, ci.n) == (12.0, 10.0, 14.0, 2)


def test_interval_holds_the_median_lies_within_the_data_and_is_reproducible():
    values = [101.0, 98.5, 103.2, 99.9, 100.4, 97.1, 102.8]
    ci = median_ci(values)
    assert ci.median == statistics.median(values)
    assert min(values) <= ci.lo <= ci.median <= ci.hi <= max(values)
    assert ci.lo < ci.hi
    assert median_ci(values) == ci  # fixed seed: a report re-built from the same CSV gives the same interval


def test_one_value_has_no_interval_and_says_so():
    ci = median_ci([5.0])
    assert (ci.median, ci.lo, ci.hi) == (5.0, None, None)
    assert ci.text() == "5 (n=1, no CI)"
    assert median_ci([]).text() == ""


def test_ratio_interval_of_constant_sides_is_the_ratio():
    ci = ratio_ci([300.0, 300.0, 300.0], [100.0, 100.0])
    assert (ci.median, ci.lo, ci.hi) == (3.0, 3.0, 3.0)
    spread = ratio_ci([280.0, 300.0, 320.0], [95.0, 100.0, 105.0])
    assert spread.lo < 3.0 < spread.hi
    assert spread.lo >= 280.0 / 105.0 and spread.hi <= 320.0 / 95.0  # never beyond the worst/best pairing


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
    assert fp32["note"].startswith("fewer valid repeats than asked: 2 of 3: 1 invalid (throughput unstable")
    int8 = by[("int8", 1)]
    assert int8["ok_asked"] == "3/3" and int8["note"] == "" and int8["throughput_ips_median"] == 200.0
    assert 190.0 <= int8["throughput_ips_ci_lo"] < 200.0 < int8["throughput_ips_ci_hi"] <= 210.0
    md = table.to_markdown()
    assert "95% CI" in md and "bootstrap" in md and "102 [100, 104]" in md


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
    assert 190.0 / 104.0 <= int8["speedup_ci_lo"] < int8["speedup_vs_fp32"] < int8["speedup_ci_hi"] <= 210.0 / 100.0
    assert int8["speedup_ci"].startswith("[") and "bootstrap" in " ".join(speedup_table([run]).notes)
    sc = {r["instances"]: r for r in scaling_table([run]).records if r["precision"] == "fp32"}
    assert sc[2]["throughput_ips_median"] == 190.0
    assert 180.0 <= sc[2]["throughput_ips_ci_lo"] < 190.0 < sc[2]["throughput_ips_ci_hi"] <= 200.0
    assert sc[1]["throughput_ci"] == "[100, 104]"
