"""What an int8 QDQ build needs from the graph itself: an opset that allows per-channel Q/DQ, the nodes to leave in
float (domains the quantizer does not know), proof that ONNX Runtime loads the result, and whether it quantized
anything at all (nothing_quantized), and a folder of its own to run in (working_folder)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebench.errors import ModelError, exc_message, exc_text

QDQ_PER_CHANNEL_OPSET = 13  # DequantizeLinear's `axis` (per-channel scales) exists from opset 13
STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "com.microsoft")


@contextlib.contextmanager
def working_folder(folder: Path) -> Iterator[None]:
    """Run the block with `folder` as the current directory, then go back. ONNX Runtime's quantization tools write
    into the current directory: symbolic shape inference that gives up (a graph whose dims it cannot prove equal,
    as a detector's FPN with symbolic H/W) saves sym_shape_infer_temp.onnx and a <uuid>.data file there. Run in a
    temporary folder edgebench removes, they never land in the user's folder (issue 37); every path the block is
    given must be absolute. The sweep's main thread builds artifacts alone (no sampler runs then)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def opset_for_qdq(src: Path, out: Path) -> tuple[Path, str, bool]:
    """(file to quantise, what was done, per_channel). Opset >= 13: as is, per-channel. Older: upgraded to 13
    with onnx's version converter (per-channel); when that fails, kept and quantised per-tensor."""
    import onnx
    from onnx import version_converter

    proto = onnx.load(str(src))
    opset = next((int(i.version) for i in proto.opset_import if i.domain in ("", "ai.onnx")), 0)
    if opset >= QDQ_PER_CHANNEL_OPSET:
        return src, "", True
    try:
        upgraded = version_converter.convert_version(proto, QDQ_PER_CHANNEL_OPSET)
        onnx.checker.check_model(upgraded)
        onnx.save(upgraded, str(out))
        import onnxruntime as ort

        ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    except Exception as exc:  # the converter raises many kinds; so does ORT on a bad result
        return src, (f"opset {opset} < {QDQ_PER_CHANNEL_OPSET}: per-tensor weights (the version converter could not "
                     f"upgrade it: {exc_text(exc, first_line=True, limit=300)})"), False
    return out, f"opset {opset} upgraded to {QDQ_PER_CHANNEL_OPSET} (onnx version converter) for per-channel Q/DQ", True


@dataclass(frozen=True)
class Kept:
    names: tuple[str, ...] = ()
    note: str = ""
    path: Path | None = None  # a copy with every node named (None: the source already was)


def custom_domain_nodes(src: Path, out: Path) -> Kept:
    """Nodes of a domain the quantizer does not know stay in float (nodes_to_exclude); unnamed nodes get names."""
    import onnx

    proto = onnx.load(str(src))
    custom = [n for n in proto.graph.node if n.domain not in STANDARD_DOMAINS]
    if not custom:
        return Kept()
    renamed = False
    for i, node in enumerate(proto.graph.node):
        if not node.name:
            node.name = f"edgebench_node_{i}"
            renamed = True
    if renamed:
        onnx.save(proto, str(out))
    domains = sorted({n.domain for n in custom})
    note = (f"{len(custom)} node(s) of domain {', '.join(domains)} left in float "
            f"({', '.join(n.op_type for n in custom[:3])}{', ...' if len(custom) > 3 else ''})")
    return Kept(tuple(n.name for n in custom), note, out if renamed else None)


def check_loads(name: str, path: Path) -> None:
    """ORT must load the int8 file it wrote; else the reason names what it refused."""
    import onnxruntime as ort

    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:  # ORT raises its own kinds
        raise ModelError(f"{name}: the int8 QDQ file does not load in ONNX Runtime "
                         f"({exc_message(exc, first_line=True, limit=300)})") from None


def nothing_quantized(sidecar: Mapping[str, Any], onnx_path: str | Path) -> str | None:
    """Why an int8 artifact (its `sidecar` and file) is no int8 model: the sidecar counts 0 QuantizeLinear and 0
    DequantizeLinear nodes (the quantizer found no op it quantizes), so a row run from it would be the fp32 graph
    labelled int8. None when it has Q/DQ nodes, or its sidecar does not count them (a file from before the count)."""
    qdq = sidecar.get("qdq_nodes") if isinstance(sidecar, Mapping) else None
    if not isinstance(qdq, Mapping) or qdq.get("QuantizeLinear", 1) or qdq.get("DequantizeLinear", 1):
        return None
    ops = _op_types(onnx_path)
    return (f"nothing quantized (0 Q/DQ nodes): ONNX Runtime's QDQ quantizer found no op it quantizes in this graph "
            f"({'ops: ' + ops if ops else 'its ops are unknown'}), so the int8 file computes in fp32 and a row from "
            "it would be fp32 labelled int8; measure fp32, or quantize the model with a tool that handles these ops "
            "and run that file with --onnx")


def _op_types(path: str | Path) -> str:
    """'GRU x2, If, MatMul': the graph's op types with counts (subgraphs included), most frequent first, at most 8."""
    from collections import Counter

    import onnx

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - an unreadable file: the reason says the ops are unknown
        return ""
    counts: Counter[str] = Counter()
    graphs = [proto.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            counts[node.op_type] += 1
            graphs.extend(a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH)
    top = counts.most_common(8)
    more = ", ..." if len(counts) > len(top) else ""
    return ", ".join(f"{op} x{n}" if n > 1 else op for op, n in top) + more
