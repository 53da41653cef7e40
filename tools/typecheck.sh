#!/usr/bin/env bash
# Type-check all of edgebench/ (mypy, tools/mypy.ini), the TensorRT backend against the real TensorRT Python API
# (tensorrt-stubs 10.13 from PyPI), on any machine: no TensorRT needed. Used by `make test`.
#  1. install the stubs (--no-deps: they "require" the multi-GB tensorrt wheels) into $VENV/trt-stubs, a
#     folder of their own, NOT site-packages: there their tensorrt/ (only __init__.pyi) would import as an
#     empty namespace package and hide that TensorRT is absent;
#  2. patch the two spots of the generated stubs that are not valid Python (idempotent);
#  3. run mypy with tools/mypy.ini over edgebench/ (strict on edgebench/backends/trt*.py and cuda_buffers.py).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY="$VENV/bin/python"
STUBS_VERSION=10.13.0.35.1
STUBS="$VENV/trt-stubs"
PYI="$STUBS/tensorrt_bindings/tensorrt.pyi"

if [ ! -f "$STUBS/.version-$STUBS_VERSION" ]; then
    rm -rf "$STUBS"
    "$PY" -m pip install -q --no-deps --target "$STUBS" "tensorrt-stubs==$STUBS_VERSION"
    touch "$STUBS/.version-$STUBS_VERSION"
fi
# (1) parameters named `in` (a keyword) in the plugin interfaces; (2) add_scale_nd's `channel_axis` has no
# default after parameters with defaults. Both patterns no longer match once patched.
sed -i -E 's/([(,] *)in: /\1in_: /g' "$PYI"
sed -i -E 's/(power: Weights = None, channel_axis: int)\)/\1 = ...)/' "$PYI"

MYPYPATH="$STUBS" "$PY" -m mypy --config-file tools/mypy.ini "$@"
