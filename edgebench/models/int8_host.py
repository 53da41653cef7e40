"""Whether this host quantizes int8 weights to 7 bits (the quantizer's reduce_range), and why.

ONNX Runtime's CPU kernels on x86-64 without VNNI (AVX2, or AVX-512 without VNNI: AMD Zen 2/3, Intel before
Cascade Lake) compute an int8 MatMul/Gemm/Conv as u8 x s8 with VPMADDUBSW, which adds each pair of products into a
saturating int16. Symmetric int8 activations run as u8 with zero point 128, so two full-range 8-bit weights times
activations near 255 overflow it (255*127*2 = 64770 > 32767) and the fused int8 op returns wrong values (tiny_cnn's
last Gemm on an AMD EPYC: 21% of the pair sums saturate, int8 vs fp32 cosine 0.79; the same file gives 0.99996 on a
Xeon with VNNI, and on any host with the graph optimizations that fuse Q/DQ off). ONNX Runtime's documented remedy
is reduce_range: weights in [-64, 64], so a pair is at most 255*64*2 = 32640. VNNI / AMX (32-bit accumulation) and
Arm kernels do not saturate, so there the weights keep their 8 bits (TensorRT on a Jetson quantizes on the board).
"""

from __future__ import annotations

import platform
from pathlib import Path

NO_SATURATION_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")  # int8 dot products accumulated in 32 bits
X86_MACHINES = ("x86_64", "amd64", "i386", "i686", "x86")
CPUINFO = Path("/proc/cpuinfo")


def int8_reduce_range(machine: str | None = None, cpuinfo: str | None = None) -> tuple[bool, str]:
    """(reduce_range, reason) for quantizing on this host; `machine` / `cpuinfo` (text of /proc/cpuinfo) default
    to this host's. x86 whose flags cannot be read counts as saturating (7 bits cost little, saturation a lot)."""
    arch = (machine if machine is not None else platform.machine()).lower()
    if arch not in X86_MACHINES:
        return False, f"{arch or 'unknown'} CPU: ONNX Runtime's int8 kernels do not saturate, 8-bit weights"
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO.read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    flags = _flags(cpuinfo)
    if not flags:
        return True, (f"x86 CPU whose flags cannot be read ({CPUINFO}): 7-bit weights, as ONNX Runtime's u8s8 "
                      "kernels without VNNI saturate int16 pair sums")
    have = [f for f in NO_SATURATION_FLAGS if f in flags]
    if have:
        return False, f"x86 CPU with {'/'.join(have)}: int8 dot products accumulate in 32 bits, 8-bit weights"
    return True, ("x86 CPU without VNNI (no avx512_vnni/avx_vnni/amx_int8): 7-bit weights, as ONNX Runtime's "
                  "u8s8 kernels (VPMADDUBSW) saturate int16 pair sums of 8-bit ones")


def _flags(cpuinfo: str) -> set[str]:
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()
