"""Studies outlive versions: a run folder written by edgebench at d8ecd54 (tests/fixtures/old_run_d8ecd54, the
results.csv schema before issue 22's columns) is read by column name, reported with the version that wrote
it, and resumed: results.csv is upgraded to this version's header with the original kept verbatim."""

from __future__ import annotations

import csv
import json
import random
import shutil
import subprocess

import pytest
from repo_paths import FIXTURES, REPO

from edgebench.results.runs import load_run
from edgebench.results.schema import COLUMN_NAMES
from edgebench.results.store import HEADER_LINE, ResultsStore

OLD = FIXTURES / "old_run_d8ecd54"
ISSUE_22_COLUMNS = {"repeat", "temp_c_start", "temp_c_end", "cooldown_s", "cooldown_note", "power_w_mean_calibrated",
                    "energy_per_inference_calibrated_mj", "power_calibration"}
# the columns added since d8ecd54: issue 22's and any other branch's merged since (e.g. slo_verdict)
NEW_COLUMNS = set(COLUMN_NAMES) - set((OLD / "results.csv").read_text().splitlines()[0].split(","))


def old_header() -> list[str]:
    with open(OLD / "results.csv", newline="") as fh:
        return next(csv.reader(fh))


def old_rows() -> list[dict[str, str]]:
    with open(OLD / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_fixture_header_is_the_schema_of_d8ecd54():
    header = old_header()
    assert ISSUE_22_COLUMNS <= NEW_COLUMNS and set(header) <= set(COLUMN_NAMES) and len(header) == 84
    shown = subprocess.run(["git", "show", "d8ecd54:edgebench/report/schema.py"], cwd=REPO, capture_output=True,
                           text=True)
    if shown.returncode != 0:
        pytest.skip(f"commit d8ecd54 not in this checkout (shallow clone?): {shown.stderr.strip()[:100]}")
    for name in header:  # every column of the fixture is declared in that commit's schema, in that order
        assert f'Column("{name}"' in shown.stdout, name
    positions = [shown.stdout.index(f'Column("{n}"') for n in header]
    assert positions == sorted(positions)


def test_store_reads_an_old_results_csv_by_column_name(tmp_path):
    shutil.copytree(OLD, tmp_path / "run")
    rows = ResultsStore(tmp_path / "run").rows()
    assert len(rows) == 4
    for got, raw in zip(rows, old_rows(), strict=True):
        assert got["repeat"] == "" and got["temp_c_start"] == ""
        assert got["throughput_ips"] == raw["throughput_ips"] and got["config_hash"] == raw["config_hash"]
    assert len(ResultsStore(tmp_path / "run").done_hashes()) == 4


def test_another_column_order_is_matched_by_name(tmp_path):
    header = old_header()
    shuffled = header[:]
    random.Random(3).shuffle(shuffled)
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=shuffled, lineterminator="\n")
        w.writeheader()
        w.writerows(old_rows())
    rows = ResultsStore(run).rows()
    assert [r["latency_ms_p50"] for r in rows] == [r["latency_ms_p50"] for r in old_rows()]
    store = ResultsStore.resume(run)
    assert (run / "results.csv").read_text().splitlines()[0] + "\n" == HEADER_LINE
    assert [r["stability_pct"] for r in store.rows()] == [r["stability_pct"] for r in old_rows()]


def test_report_of_an_old_run_says_which_edgebench_wrote_it_and_why_columns_are_empty(tmp_path):
    from edgebench.report.summary import build_report

    run = load_run(OLD)
    assert run.missing_columns and set(run.missing_columns) == NEW_COLUMNS
    assert run.written_by == f"0.1.0, 84 of {len(COLUMN_NAMES)} columns"
    assert any("column did not exist in edgebench 0.1.0" in n for n in run.notes)
    rep = build_report([OLD], tmp_path / "rep")
    md = rep.summary_md.read_text()
    assert f"0.1.0, 84 of {len(COLUMN_NAMES)} columns" in md and "has no repeat, " in md


def test_resume_upgrades_the_old_results_csv_and_runs_what_is_missing(tmp_path):
    from edgebench.cli import main

    run = tmp_path / "run"
    shutil.copytree(OLD, run)
    original = (run / "results.csv").read_text()
    lines = original.splitlines(keepends=True)
    (run / "results.csv").write_text("".join(lines[:-1]))  # the sweep was killed before its last row
    before = (run / "results.csv").read_text()
    assert main(["bench", "--resume", str(run)]) == 0
    kept = run / "results.0.1.0.csv"
    assert kept.read_text() == before  # verbatim: nothing written is lost
    note = json.loads((run / "columns.json").read_text())
    assert note["upgraded_from"] == "0.1.0" and note["rows"] == 3 and note["dropped_columns"] == []
    assert set(note["empty_columns"]) == NEW_COLUMNS
    assert note["empty_columns"]["repeat"] == "column did not exist in edgebench 0.1.0, which wrote these rows"
    text = (run / "results.csv").read_text()
    assert text.startswith(HEADER_LINE)
    rows = ResultsStore(run).rows()
    assert len(rows) == 4
    old = old_rows()
    for got, raw in zip(rows[:3], old[:3], strict=True):
        assert {k: got[k] for k in raw} == raw  # every old value, by name
        assert got["repeat"] == ""
    new = rows[3]
    assert new["config_hash"] == old[3]["config_hash"] and new["repeat"] == "1" and new["batch"] == "4"
    assert new["status"] in ("ok", "invalid") and float(new["throughput_ips"]) > 0
    run_read = load_run(run)
    assert any("upgraded by --resume from edgebench 0.1.0" in n for n in run_read.notes)


def test_side_files_absent_unreadable_or_outside_the_folder_are_stated_not_guessed(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "old_run_d8ecd54", run)
    good = load_run(run)
    assert good.system and good.profile and not any("system.json" in n or "profile.yaml" in n for n in good.notes)

    (run / "system.json").write_text("{not json")
    (run / "profile.yaml").unlink()
    notes = load_run(run).notes
    assert any(n.startswith(f"{run / 'system.json'}: unreadable (JSONDecodeError") for n in notes), notes
    assert "profile.yaml absent: profile not recorded for this run" in notes
    assert load_run(run).system is None and load_run(run).profile is None

    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("name: not-this-run\n")
    (run / "profile.yaml").symlink_to(outside)
    confined = load_run(run)
    assert confined.profile is None
    assert any("profile.yaml" in n and n.endswith("; not read") for n in confined.notes), confined.notes
