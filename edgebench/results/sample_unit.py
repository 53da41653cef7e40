"""The unit of a row's samples, from its inputs: 'img' when its one input is an image, else 'sample' (issue 37).

A row's `input_shapes` (name:dtype[shape] per input) decides: one float or uint8 input [N, 1|3, H, W] or
[N, H, W, 1|3] (the layouts models/missing_inputs.image_layout tells apart) is an image; audio,
text, several inputs or a state are samples. A row without input_shapes (older runs) keeps 'img'. The console and
the report tables name throughput (img/s or samples/s) and energy (mJ/img or mJ/sample) by it; the CSV columns keep
their names (throughput_ips, energy_per_inference_mj).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

IMAGE_SHAPE = re.compile(r"^[^:;]+:(?:float16|float32|uint8)\[\d+x(?:[13]x\d+x\d+|\d+x\d+x[13])\]$")  # NCHW or NHWC


def rate_unit(row: dict[str, Any]) -> str:
    """'img/s' when the row's one input is an image ([N, 1|3, H, W] or [N, H, W, 1|3]), else 'samples/s'."""
    shapes = str(row.get("input_shapes") or "")
    if not shapes:
        return "img/s"
    return "img/s" if IMAGE_SHAPE.match(shapes) else "samples/s"


def sample_noun(rows: Iterable[dict[str, Any]]) -> str:
    """'img' when every row's input is an image, else 'sample'."""
    return "img" if all(rate_unit(r) == "img/s" for r in rows) else "sample"


def in_unit(header: str, noun: str) -> str:
    """A header written in images ('Throughput (img/s)', 'Energy (mJ/img)') in `noun`'s unit."""
    if noun == "img":
        return header
    return header.replace("img/s", "samples/s").replace("mJ/img", f"mJ/{noun}")
