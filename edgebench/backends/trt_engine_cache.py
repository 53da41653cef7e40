"""TensorRT engine cache: what identifies an engine, where it lives, and whether a cached one may be loaded.

Pure Python (no TensorRT import), so every decision here is tested on a CPU.

An engine is only valid for the exact TensorRT version and GPU it was built on, and for the ONNX file,
precision, shapes, placement and builder settings that went into it. All of that is the `EngineKey`.
Layout under the cache root:

  trt_engines/<slot>/model.engine        the serialized engine
  trt_engines/<slot>/model.engine.json   its sidecar: the full key, the engine's sha256, build facts
  trt_timing/<device>-sm<cc>-trt<ver>.cache   one timing cache per (TensorRT version, device)
  trt_calibration/<key>/calibration.cache     implicit-INT8 calibration table per (model, TRT version, batch)

<slot> hashes the key WITHOUT the build environment (TensorRT version, device name, compute capability),
so an engine built by another TensorRT or on another board lands in the same slot and is found: it is then
reported as stale/foreign with the differing fields and rebuilt in place, never loaded. An engine whose
sidecar is missing or unreadable, or whose bytes do not match the sidecar's sha256, is rebuilt too.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edgebench.atomic_files import write_bytes_atomic, write_json_atomic
from edgebench.errors import exc_text
from edgebench.models.artifacts import key_of, sha256_file

ENGINE_FORMAT = 1  # bump when the sidecar layout changes: older entries are then rebuilt
ENVIRONMENT_FIELDS = ("trt_version", "device_name", "compute_capability")
ENGINE_FILE = "model.engine"


@dataclass(frozen=True)
class EngineKey:
    """Everything that decides an engine's content. Shapes are full tensor shapes (batch first)."""

    onnx_sha256: str
    precision: str
    strategy: str  # how the precision is obtained, see trt_logic.precision_strategy
    input_name: str
    min_shape: tuple[int, ...]
    opt_shape: tuple[int, ...]
    max_shape: tuple[int, ...]
    device_type: str  # "gpu" or "dla"
    dla_core: int | None
    gpu_fallback: bool
    trt_version: str
    device_name: str
    compute_capability: str  # "8.7"
    workspace_mib: int
    builder_options: tuple[tuple[str, Any], ...] = field(default_factory=tuple)  # sorted (name, value)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for name in ("min_shape", "opt_shape", "max_shape"):
            d[name] = list(d[name])
        d["builder_options"] = {k: v for k, v in self.builder_options}
        return d

    def slot(self) -> str:
        """Directory name: the key without the build environment (see the module doc)."""
        d = self.to_dict()
        for name in ENVIRONMENT_FIELDS:
            d.pop(name)
        return key_of(d)

    def digest(self) -> str:
        """Hash of the whole key (recorded in the sidecar)."""
        return key_of(self.to_dict())


def key_differences(expected: dict[str, Any], found: dict[str, Any]) -> list[str]:
    """'field: cached X, wanted Y' for every key field that differs (missing fields count as different)."""
    out = []
    for name in sorted(set(expected) | set(found)):
        want, have = expected.get(name, "<absent>"), found.get(name, "<absent>")
        if json.dumps(want, sort_keys=True, default=str) != json.dumps(have, sort_keys=True, default=str):
            out.append(f"{name}: cached {have!r}, wanted {want!r}")
    return out


@dataclass(frozen=True)
class CacheDecision:
    """Whether the cached engine may be loaded; when not, why (recorded in the row and logged)."""

    load: bool
    reason: str


def decide(expected: EngineKey, engine_exists: bool, sidecar: dict[str, Any] | None, sidecar_error: str | None,
           engine_sha256: str | None) -> CacheDecision:
    """The load-or-rebuild decision from plain facts about the slot (pure; `EngineCache.lookup` gathers them).

    engine_sha256 is the sha256 of the engine file's bytes (None when it has none)."""
    if not engine_exists:
        if sidecar is not None or sidecar_error is not None:
            return CacheDecision(False, "rebuild: the sidecar has no engine file beside it")
        return CacheDecision(False, "build: no cached engine")
    if sidecar_error is not None:
        return CacheDecision(False, f"rebuild: engine sidecar unreadable ({sidecar_error})")
    if sidecar is None:
        return CacheDecision(False, "rebuild: engine has no sidecar (unknown origin)")
    if sidecar.get("format") != ENGINE_FORMAT:
        return CacheDecision(False, f"rebuild: sidecar format {sidecar.get('format')!r}, this edgebench writes {ENGINE_FORMAT}")
    found = sidecar.get("key")
    if not isinstance(found, dict):
        return CacheDecision(False, "rebuild: sidecar has no key")
    diffs = key_differences(expected.to_dict(), found)
    if diffs:
        env = [d for d in diffs if d.split(":", 1)[0] in ENVIRONMENT_FIELDS]
        kind = "foreign engine (built by another TensorRT/device)" if env else "stale engine"
        return CacheDecision(False, f"rebuild: {kind}: " + "; ".join(diffs))
    if not engine_sha256 or sidecar.get("sha256") != engine_sha256:
        return CacheDecision(False, "rebuild: engine bytes do not match the sidecar's sha256 (corrupt or replaced)")
    return CacheDecision(True, "hit: cached engine matches every key field")


@dataclass(frozen=True)
class CachedEngine:
    path: Path
    sidecar: dict[str, Any]
    decision: CacheDecision


class EngineCache:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def engine_path(self, key: EngineKey) -> Path:
        return self.root / "trt_engines" / key.slot() / ENGINE_FILE

    def lookup(self, key: EngineKey) -> CachedEngine:
        """The cached engine for `key` and whether it may be loaded (never raises for a bad entry)."""
        path = self.engine_path(key)
        side_path = path.with_name(path.name + ".json")
        sidecar: dict[str, Any] | None = None
        error: str | None = None
        if side_path.exists():
            try:
                loaded = json.loads(side_path.read_text())
                if isinstance(loaded, dict):
                    sidecar = loaded
                else:
                    error = f"top level is {type(loaded).__name__}, not an object"
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                error = exc_text(exc)
        sha = sha256_file(path) if path.exists() else None
        decision = decide(key, path.exists(), sidecar, error, sha)
        return CachedEngine(path, sidecar or {}, decision)

    def store(self, key: EngineKey, engine: bytes, info: dict[str, Any]) -> CachedEngine:
        """Write the engine (temp file + rename) and then its sidecar; returns the stored entry."""
        path = self.engine_path(key)
        write_bytes_atomic(path, engine)
        sidecar = {**info, "format": ENGINE_FORMAT, "key": key.to_dict(), "key_digest": key.digest(),
                   "sha256": hashlib.sha256(engine).hexdigest(), "bytes": len(engine)}
        write_json_atomic(path.with_name(path.name + ".json"), sidecar)
        return CachedEngine(path, sidecar, CacheDecision(True, "stored"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "unknown"


def timing_cache_path(root: Path | str, trt_version: str, device_name: str, compute_capability: str) -> Path:
    """One timing cache per (TensorRT version, device): tactic timings are only valid there."""
    return (Path(root) / "trt_timing" /
            f"{_slug(device_name)}-sm{compute_capability.replace('.', '')}-trt{_slug(trt_version)}.cache")


def calibration_cache_path(root: Path | str, onnx_sha256: str, trt_version: str, batch: int,
                           calibration_sha256: str) -> Path:
    """Implicit-INT8 calibration table per (model, TensorRT version, calibration batch, calibration data)."""
    key = key_of({"onnx_sha256": onnx_sha256, "trt_version": trt_version, "batch": batch,
                  "calibration_sha256": calibration_sha256})
    return Path(root) / "trt_calibration" / key / "calibration.cache"
