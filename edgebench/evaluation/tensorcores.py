"""Tensor-core evidence from GPU kernel names: did the model's math run on tensor cores, and for how
much of the GPU time?

NVIDIA's libraries put the math instruction in their kernel names, which is what profilers show:
  cuBLAS / cuDNN (SASS libraries)   volta_h884gemm_*, volta_fp16_s884cudnn_*, turing_fp16_s1688cudnn_*,
                                    ampere_h16816gemm_*, ampere_bf16_s16816gemm_*   (MMA shape: 884,
                                    1688, 16816, ... = tensor cores) vs ampere_sgemm_*, volta_scudnn_*,
                                    implicit_convolve_sgemm (FFMA on CUDA cores)
  XMMA (cuBLAS, cuDNN, TensorRT)    sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_..._tensor16x8x8
                                    (tensor), sm80_xmma_fprop_..._f32f32_f32f32_f32_..._ffma_... (CUDA
                                    cores); Hopper: ..._hgmma64x128x16 / igmma (warpgroup MMA)
  CUTLASS                           cutlass_80_tensorop_*, cutlass3x_sm90_tensorop_* vs cutlass_80_simt_*
  cuBLAS on Hopper                  nvjet_hsh_* / nvjet_tst_* / nvjet_sss_tf32_* (warpgroup MMA)
  attention                         flash_fwd_* / pytorch_flash::* / fmha_cutlassF_f16_* (tensor) vs
                                    fmha_cutlassF_f32_* (CUDA cores)
So an "xmma" in a name is not proof by itself (XMMA also has FFMA kernels): the classifier reads the
data types and MMA shape. On an H200 (cuDNN 9.19), fp32 with TF32 off ran only FFMA/FFT/sgemm kernels;
the "nvjet_sss without tf32 = CUDA cores" rule is inferred from the naming, not yet seen. Triton kernels from torch.compile (triton_*) carry no such hint and count
as not-tensor-core, so the share is a lower bound for compiled models. Rules are checked first to
last; the first that matches decides (`classify_kernel` says which).

`profile_kernels` collects (name, device µs) of every CUDA kernel launched in this process over
`steps` calls of a function, through torch.profiler (CUPTI) — it sees ONNX Runtime's CUDA kernels
too when ORT runs in the same process.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable

# (rule name, regex on the lower-cased name, is tensor core). First match wins.
_RULES: tuple[tuple[str, re.Pattern[str], bool], ...] = (
    ("simt marker", re.compile(r"ffma|hfma|dfma|idp4a|(^|[_:<])simt_"), False),
    ("mma instruction", re.compile(
        r"(^|[^a-z])[hidb]mma|wmma|wgmma|[hiqb]?gmma\d|tcgen05|(^|_)umma|mma_sync|mma\.sync"), True),
    ("xmma mma shape", re.compile(r"(^|_)(sp)?tensor\d+x\d+x\d+"), True),
    ("cute mma atom", re.compile(r"sm\d{2,3}_\d+x\d+x\d+_[a-z0-9]*(f16|bf16|tf32|s8|u8|e4m3|e5m2)"), True),
    ("tensorop", re.compile(r"tensor_?op|tensorcore|tensor_core"), True),
    ("mma shape in name", re.compile(
        r"[a-z](884|1684|1688|8816|8832|16816|16832|16864|161616)(tf32)?(gemm|cudnn|fprop|dgrad|wgrad|conv|_)"), True),
    ("nvjet fp32 ieee", re.compile(r"nvjet_(sm\d+_)?sss(?!.*tf32)"), False),
    ("nvjet", re.compile(r"(^|[^a-z])nvjet_"), True),
    ("flash attention", re.compile(
        r"flash_fwd|flash_bwd|flash_attention|fmha_v2|fa_dc90|fmha_cutlass[fb]_(f16|bf16)"), True),
    ("tf32 math", re.compile(r"(^|_)tf32|tf32(gemm|_|$)"), True),
)
_XMMA_TYPES = re.compile(r"^(?:bf16|tf32|f16|f32|f64|i8|i32|s8|u8|e4m3|e5m2|fp8|i4)+$")
_WIDE_TYPES = re.compile(r"f32|f64|i32")


def _xmma_types(name: str) -> bool | None:
    """For an xmma kernel: True if a data-type token has a tensor-core type (f16, bf16, tf32, int8,
    fp8), False if every type is f32/f64/i32, None when the name carries no type tokens."""
    tokens = [t for t in re.split(r"[^a-z0-9]+", name) if _XMMA_TYPES.match(t)]
    if not tokens:
        return None
    return any(_WIDE_TYPES.sub("", t) for t in tokens)


def classify_kernel(name: str) -> tuple[bool, str]:
    """(uses tensor cores, the rule that decided) for one CUDA kernel name (mangled or demangled)."""
    low = name.lower()
    for rule, pattern, tensor in _RULES:
        if pattern.search(low):
            return tensor, rule
    if "xmma" in low:
        typed = _xmma_types(low)
        if typed is not None:
            return typed, "xmma data types"
    return False, "no tensor-core marker"


def is_tensor_core_kernel(name: str) -> bool:
    """True when the kernel's name says it runs on tensor cores (see the module doc for the rules)."""
    return classify_kernel(name)[0]


def tensor_core_time_pct(kernels: Iterable[tuple[str, float]]) -> float | None:
    """Share (0..100) of the kernels' summed device time spent in tensor-core kernels; None when
    there is no kernel time (no GPU work was seen)."""
    total_us = 0.0
    tensor_us = 0.0
    for name, us in kernels:
        total_us += us
        if is_tensor_core_kernel(name):
            tensor_us += us
    if total_us <= 0.0:
        return None
    return 100.0 * tensor_us / total_us


def kernel_summary(kernels: Iterable[tuple[str, float]], top: int = 5) -> dict[str, object]:
    """Row/sidecar evidence: tensor-core time share, kernel counts and the top kernels by time."""
    by_name: dict[str, float] = {}
    for name, us in kernels:
        by_name[name] = by_name.get(name, 0.0) + us
    ranked = sorted(by_name.items(), key=lambda kv: kv[1], reverse=True)
    return {
        "tensor_core_time_pct": tensor_core_time_pct(by_name.items()),
        "kernel_time_us": sum(by_name.values()),
        "distinct_kernels": len(by_name),
        "tensor_core_kernels": sum(1 for n in by_name if is_tensor_core_kernel(n)),
        "top_kernels": [
            {"name": n, "time_us": us, "tensor_core": is_tensor_core_kernel(n)} for n, us in ranked[:top]
        ],
    }


def profile_kernels(fn: Callable[[], object], steps: int = 10, warmup: int = 2) -> list[tuple[str, float]]:
    """(kernel name, device time µs), one entry per kernel launch, over `steps` calls of fn after
    `warmup` unprofiled calls. GPU only (CUPTI through torch.profiler); memcpy/memset are left out."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    if not torch.cuda.is_available():
        raise RuntimeError("profile_kernels needs a CUDA GPU (torch.cuda.is_available() is False)")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    with warnings.catch_warnings():  # "Profiler clears events at the end of each cycle": one cycle here
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                fn()
            torch.cuda.synchronize()
    out: list[tuple[str, float]] = []
    for evt in prof.profiler.kineto_results.events():
        if evt.device_type() != torch.autograd.DeviceType.CUDA:
            continue
        kind = str(evt.activity_type()).lower() if hasattr(evt, "activity_type") else ""
        name = evt.name()
        if "memcpy" in kind or "memset" in kind or name.startswith(("Memcpy", "Memset")):
            continue
        out.append((name, evt.duration_ns() / 1e3))
    return out
