"""Which DLA core ONNX Runtime's TensorRT execution provider used, as far as ORT says.

Users report that ORT's TensorRT EP ignores `trt_dla_core=1` and runs on DLA0. ORT tells only which options
its provider holds (`InferenceSession.get_provider_options()`, values as strings); it does not report the core
TensorRT then ran the engine on. So: a provider that reports another core than the placement asked for fails
the instance with both numbers; otherwise the row's `dla_core_check` says the request was accepted and that the
core actually used is unverified.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from edgebench.placement import Placement

TRT_EP = "TensorrtExecutionProvider"


def requested_core(device: str) -> int | None:
    """'dla1' -> 1 ('dla' -> 0); None for non-DLA placements."""
    return Placement(device).dla_core


def reported_core(provider_options: Mapping[str, Mapping[str, Any]]) -> tuple[bool | None, int | None]:
    """(dla enabled, core) as ORT's provider options state them; None where ORT does not say."""
    opts = provider_options.get(TRT_EP) or {}
    enabled = opts.get("trt_dla_enable")
    core = opts.get("trt_dla_core")
    on = None if enabled is None else str(enabled).strip().lower() in ("1", "true")
    try:
        return on, None if core is None else int(str(core).strip())
    except ValueError:
        return on, None


def core_mismatch(device: str, provider_options: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Why the session does not run on the requested DLA core according to ORT, or None (match / ORT silent)."""
    want = requested_core(device)
    if want is None:
        return None
    enabled, core = reported_core(provider_options)
    if enabled is False:
        return f"placement {device}: ORT's TensorRT EP reports trt_dla_enable=0 (DLA off): it would run on the GPU"
    if core is not None and core != want:
        return (f"placement {device}: ORT's TensorRT EP reports trt_dla_core={core}, not {want}: it would run on "
                f"DLA{core}")
    return None


def dla_core_check(placements: Iterable[str]) -> str | None:
    """The row's dla_core_check for an ORT TensorRT EP row; None when no placement is a DLA."""
    cores = sorted({d for d in placements if requested_core(d) is not None})
    if not cores:
        return None
    return "; ".join(f"{d}: trt_dla_core={requested_core(d)} requested and held by ORT's provider options (checked "
                     "per instance); the core TensorRT ran on is not reported by ORT: unverified" for d in cores)
