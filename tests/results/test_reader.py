"""results.reader: results.csv read back typed (None for empty), equal to what a real null-backend sweep wrote, and
every consumer (report runs, speedup, console, SLO probes, --resume) reading through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench.cli import main
from edgebench.errors import EdgebenchError
from edgebench.results.reader import parse_cell, read_rows, read_table, typed_row
from edgebench.results.schema import COLUMN_NAMES
from edgebench.results.store import ResultsStore

PROFILE = """\
name: readnull
extends: base
description: a null-backend sweep whose rows are read back typed
sweep:
  models: [tiny_cnn]
  backends: ["null", ort]
  precisions: [fp32, fp16]
  batches: [2]
  instances: [1]
  modes: [streams]
run:
  warmup_s: 0.05
  duration_s: 0.25
  max_duration_s: 2.0
  min_inferences: 20
  accuracy_samples: 4
  stability_tolerance_pct: 500.0
telemetry:
  samplers: [host]
  interval_s: 0.05
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """(run folder, every row as the sweep handed it to the store)."""
    pytest.importorskip("torch", reason="the sweep exports tiny_cnn to ONNX with torch (pip install 'edgebench[export]')")
    pytest.importorskip("psutil", reason="the host sampler needs psutil")
    base = tmp_path_factory.mktemp("reader-sweep")
    (base / "readnull.yaml").write_text(PROFILE)
    written: list[dict] = []
    original = ResultsStore.append

    def spy(self: ResultsStore, row: dict) -> None:
        original(self, row)
        written.append(row)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ResultsStore, "append", spy)
        assert main(["--cache", str(base / "cache"), "bench", "--device", str(base / "readnull.yaml"),
                     "--out", str(base / "runs")]) == 0
    (run,) = (base / "runs").iterdir()
    return run, written


def test_rows_read_back_equal_the_rows_written(sweep):
    run, written = sweep
    rows = read_rows(run / "results.csv")
    assert len(rows) == len(written) == 4
    assert rows == [{name: w.get(name) for name in COLUMN_NAMES} for w in written]
    statuses = sorted(r["status"] for r in rows)
    assert "skipped" in statuses and statuses.count("skipped") < 4  # ort fp16 on a CPU is skipped, the rest ran
    measured = next(r for r in rows if r["backend"] == "null" and r["status"] != "skipped")
    assert type(measured["batch"]) is int and measured["batch"] == 2 and type(measured["inferences"]) is int
    assert type(measured["throughput_ips"]) is float and measured["throughput_ips"] > 0
    assert measured["samples"] == measured["inferences"] * 2
    assert measured["accuracy_samples"] == 4 and type(measured["accuracy_cosine_min"]) is float
    assert measured["power_w_idle"] is None and measured["slo_met"] is None  # empty cells: None, never 0 or ""
    assert measured["telemetry_source"] == "host" and isinstance(measured["warmup_s"], float)
    # the writers the store was given name the part of each column
    row = next(w for w in written if w["backend"] == "null" and w["status"] != "skipped")
    assert row.writers["throughput_ips"] == "metrics" and row.writers["telemetry_source"] == "telemetry"
    assert row.writers["accuracy_cosine_min"] == "accuracy" and row.writers["provider"] == "backend"
    assert row.writers["energy_per_inference_mj" if row.get("energy_j") is not None else "status"] in ("energy",
                                                                                                      "outcome")


def test_every_consumer_reads_the_same_typed_rows(sweep, capsys):
    from edgebench.commands.console import summary_table
    from edgebench.pipeline.slo_search import probe_of
    from edgebench.report.speedup import read_rows as speedup_read_rows
    from edgebench.report.speedup import speedup_rows
    from edgebench.results.runs import load_run

    run, _written = sweep
    typed = read_rows(run / "results.csv")
    text = ResultsStore(run).rows()
    assert load_run(run).rows == typed  # report/
    assert ResultsStore(run).records() == typed  # cli summary, --resume, SLO probes
    assert speedup_read_rows([run]) == typed
    assert speedup_rows(text) == speedup_rows(typed)
    assert summary_table(text, title="t") == summary_table(typed, title="t")
    assert "-" in summary_table(typed, title="t").splitlines()[-1].split()  # the skipped row's empty cells
    capsys.readouterr()
    ok = next(r for r in typed if r["status"] != "skipped")
    probe = probe_of(2, ok)
    assert probe.p99_ms == ok["latency_ms_p99"] and probe.status == ok["status"]
    assert probe.verdict == "missed"  # a closed-loop row has no slo_verdict / slo_met: never counted as met
    assert probe_of(3, {**ok, "slo_verdict": "unmeasured", "slo_met": None}).verdict == "unmeasured"
    assert ResultsStore(run).done_hashes() == {r["config_hash"] for r in typed}  # failed rows would be re-run


def test_the_private_converters_are_gone():
    import edgebench.commands.console as console
    import edgebench.pipeline.slo_search as slo_search
    import edgebench.report.speedup as speedup
    import edgebench.results.runs as runs

    assert not any(hasattr(m, n) for m, n in ((runs, "num"), (speedup, "_num"), (console, "_fmt"),
                                               (slo_search, "_as_probe")))


@pytest.mark.parametrize("name, text, value", [
    ("batch", "8", 8), ("throughput_ips", "0.30000000000000004", 0.1 + 0.2), ("throughput_ips", "nan", None),
    ("throttled", "true", True), ("slo_met", "false", False), ("reason", "a, b", "a, b"), ("energy_j", "", None),
    ("config_hash", "0123", "0123"),
])
def test_cells_read_as_their_column_type(name, text, value):
    assert parse_cell(name, text) == value
    assert type(parse_cell(name, text)) is type(value)


def test_a_bad_cell_is_one_error_naming_file_line_and_column(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text("model,backend,precision,batch,status,extra\nm,ort,fp32,four,ok,x\n")
    with pytest.raises(EdgebenchError, match=r"results.csv line 2: column 'batch': 'four' is not an integer"):
        read_table(path)
    path.write_text("model,backend,precision,batch,status,extra\nm,ort,fp32,4,ok,x\n")
    assert read_table(path) == [{"model": "m", "backend": "ort", "precision": "fp32", "batch": 4, "status": "ok",
                                 "extra": "x"}]  # a column the schema does not know stays text
    with pytest.raises(EdgebenchError, match="missing column"):
        read_table(path, required=("config_hash",))
    assert typed_row({"batch": 3, "throttled": "false"}) == {"batch": 3, "throttled": False}  # typed values pass


def test_a_torn_last_line_is_not_a_row(tmp_path):
    store = ResultsStore(tmp_path)
    store.append({"model": "m", "config_hash": "h0", "status": "ok", "throughput_ips": 1.5, "batch": 1})
    with open(store.path, "a") as fh:
        fh.write("m,ort,fp32,1")  # killed mid-write: no newline
    (row,) = read_rows(store.path)
    assert row["throughput_ips"] == 1.5 and row["batch"] == 1 and row["window_s"] is None
    ResultsStore.resume(tmp_path)
    assert (tmp_path / "results.partial.txt").read_text() == "m,ort,fp32,1\n" and len(read_rows(store.path)) == 1
