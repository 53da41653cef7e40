"""int8_reduce_range: 7-bit int8 weights exactly on hosts whose ONNX Runtime int8 CPU kernels saturate (x86, no VNNI)."""

from __future__ import annotations

import platform
from pathlib import Path

from edgebench.models.int8_host import int8_reduce_range

ZEN3_FLAGS = "flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 fma avx f16c avx2 bmi1 bmi2 sha_ni vaes vpclmulqdq"
CPUINFO = "processor\t: 0\nvendor_id\t: {vendor}\nmodel name\t: {model}\n{flags}\n\nprocessor\t: 1\n{flags}\n"


def _cpuinfo(flags: str, vendor: str = "AuthenticAMD", model: str = "AMD EPYC") -> str:
    return CPUINFO.format(vendor=vendor, model=model, flags=flags)


def test_x86_without_vnni_reduces_the_weight_range():
    reduce, reason = int8_reduce_range("x86_64", _cpuinfo(ZEN3_FLAGS))
    assert reduce is True and "without VNNI" in reason and "saturate" in reason
    avx512_only = ZEN3_FLAGS + " avx512f avx512bw avx512vl"  # Skylake-SP: AVX-512 but no VNNI
    assert int8_reduce_range("AMD64", _cpuinfo(avx512_only, "GenuineIntel", "Xeon Gold 6148"))[0] is True


def test_vnni_or_amx_keeps_8_bit_weights():
    for flag in ("avx512_vnni", "avx_vnni", "amx_int8"):
        reduce, reason = int8_reduce_range("x86_64", _cpuinfo(f"{ZEN3_FLAGS} {flag}", "GenuineIntel", "Xeon"))
        assert reduce is False and flag in reason
    # a flag that only contains the name does not count
    assert int8_reduce_range("x86_64", _cpuinfo(f"{ZEN3_FLAGS} avx512_vnni_fake"))[0] is True


def test_arm_keeps_8_bit_weights_and_unreadable_x86_is_conservative():
    assert int8_reduce_range("aarch64", "")[0] is False  # Jetson, Graviton, Apple silicon
    reduce, reason = int8_reduce_range("x86_64", "")
    assert reduce is True and "cannot be read" in reason


def test_this_host_follows_its_own_flags():
    reduce, reason = int8_reduce_range()
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        assert reduce is False, reason
        return
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    flags = next((set(line.split(":", 1)[1].split()) for line in text.splitlines() if line.startswith("flags")), set())
    assert reduce is (not flags & {"avx512_vnni", "avx_vnni", "amx_int8"}), reason
