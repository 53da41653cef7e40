"""What a configuration is (IDENTITY: the row cells its repeats share), and how two configurations whose labels
would read alike are told apart.

A configuration's identity is everything that changes what runs: every axis a sweep can vary (repeat is not one:
rows that differ only there are repeats), the threads each instance got, and what the model ran on: its workload
(results.csv's workload column, pipeline/workload.py: an external ONNX's content and resolved inputs, given shapes,
fixed values, data, weights, data set, int8 calibration settings, the synthetic inputs' seed), the inputs as fed
(input_shapes), the ONNX file the backend prepared from (onnx_sha256) and the int8 calibration data
(calibration_source). A cell a row does not record (an older results.csv) reads as None: such rows pool with each
other, never with a row that records a value. One exception, where the value is not unknown: a run folder holds one
plan (--resume refuses anything that would change it), so a row that a resumed run's older edgebench wrote without
a cell takes the one value the folder's other rows of the same axes record for it (known_within_run).
"""

from __future__ import annotations

from typing import Any

IDENTITY = ("model", "backend", "precision", "batch", "instances", "mode", "placement", "options", "power_mode",
            "scenario", "gpu_sharing", "rate_per_stream_hz", "arrival", "threads_per_instance", "workload",
            "input_shapes", "onnx_sha256", "calibration_source")
# what tells two configurations apart when their labels would read alike, in the order it is tried
DETAIL_COLUMNS = ("input_shapes", "threads_per_instance", "workload", "calibration_source", "onnx_sha256")
# the workload's entries in the order they are tried (others after these, by name)
WORKLOAD_ORDER = ("inputs", "shapes", "values", "onnx", "data", "weights", "dataset", "labels", "calibration", "seed")


def workload_entries(cell: Any) -> dict[str, str] | None:
    """A workload cell ('onnx=1a2b...; inputs=x:float32[Nx3x640x640]; seed=0') as {key: text}; None when the row
    does not record one (written before the column existed)."""
    if cell is None or cell == "":
        return None
    out = {}
    for part in str(cell).split("; "):
        key, _, text = part.partition("=")
        out[key.strip()] = text.strip()
    return out


def detail_text(ident: dict[str, Any], key: str) -> str:
    """How `key` of an identity reads in a label: a column of DETAIL_COLUMNS, or 'workload.<entry>'."""
    if key.startswith("workload."):
        entry = key.removeprefix("workload.")
        entries = workload_entries(ident.get("workload"))
        if entries is None:
            return "workload not recorded"
        return f"{entry}={entries[entry]}" if entry in entries else f"no {entry}"
    value = ident.get(key)
    if key == "input_shapes":
        return "inputs not recorded" if value is None else f"inputs {value}"
    if key == "threads_per_instance":
        return "threads not recorded" if value is None else f"{value} thread(s) per instance"
    if key == "calibration_source":
        return "no calibration recorded" if value is None else f"calibration {value}"
    if key == "onnx_sha256":
        return "ONNX file not recorded" if value is None else f"ONNX sha256 {str(value)[:12]}"
    raise KeyError(f"{key} is not a detail of an identity ({', '.join(DETAIL_COLUMNS)}, workload.<entry>)")


def detail_keys(identities: list[dict[str, Any]]) -> list[str]:
    """The keys tell_apart tries, in order: DETAIL_COLUMNS with the workload expanded into its entries."""
    entries: set[str] = set()
    for ident in identities:
        entries |= set(workload_entries(ident.get("workload")) or {})
    ordered = [e for e in WORKLOAD_ORDER if e in entries] + sorted(entries - set(WORKLOAD_ORDER))
    keys: list[str] = []
    for col in DETAIL_COLUMNS:
        keys += [f"workload.{e}" for e in ordered] if col == "workload" else [col]
    return keys


def tell_apart(identities: list[dict[str, Any]]) -> list[list[str]]:
    """Per identity (of configurations whose labels read alike), the parts that tell them apart: keys are tried
    in detail_keys order and one is added (to every one of them, so the difference reads side by side) only when
    it splits some of them further; it stops once all are apart (identities equal in every key stay alike)."""
    parts: list[list[str]] = [[] for _ in identities]
    for key in detail_keys(identities):
        if len({tuple(p) for p in parts}) == len(identities):
            break
        texts = [detail_text(ident, key) for ident in identities]
        if len({(*p, t) for p, t in zip(parts, texts)}) > len({tuple(p) for p in parts}):
            for p, t in zip(parts, texts):
                p.append(t)
    return parts


# the identity cells a row of an older edgebench lacks; the others (the sweep's axes) every version records
RECORDED_LATER = ("workload", "input_shapes", "onnx_sha256", "calibration_source")


def _hash_unchanged(workload_cell: str) -> bool:
    """Whether a workload cell (RunConfig.workload_cell) holds only the entries every row has had a field for (the
    synthetic inputs' seed, fixed input values): then the row's config_hash is the one it had before the column."""
    return set(workload_entries(workload_cell) or {}) <= {"seed", "values"}


def known_within_run(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ONE run folder, where a row lacks a RECORDED_LATER cell that the folder's other rows of the same
    axes (the rest of IDENTITY) record with one value: a copy of it with that value (one plan ran them all, so a
    run resumed by a newer edgebench does not split a configuration into its old and new repeats). A cell the
    folder records with two values, or not at all, stays as it is. A workload is taken only when it holds nothing
    but the seed and fixed values (the config's own workload empty, so its config_hash is the one the older
    edgebench wrote and --resume kept the old rows): a workload that changed the hash made --resume measure those
    configurations again, and the old rows, whose inputs no cell says, stay a configuration of their own."""
    axes = [k for k in IDENTITY if k not in RECORDED_LATER]
    known: dict[tuple, dict[str, set[Any]]] = {}
    for r in rows:
        seen = known.setdefault(tuple(r.get(k) for k in axes), {})
        for col in RECORDED_LATER:
            if r.get(col) not in (None, ""):
                seen.setdefault(col, set()).add(r.get(col))
    out = []
    for r in rows:
        seen = known.get(tuple(r.get(k) for k in axes), {})
        fill = {col: next(iter(vals)) for col, vals in seen.items() if len(vals) == 1 and r.get(col) in (None, "")}
        if r.get("workload") in (None, "") and "workload" in fill and not _hash_unchanged(fill["workload"]):
            fill = {}  # not the same configuration (its hash changed): none of the newer rows' cells is its
        out.append({**r, **fill} if fill else r)
    return out
