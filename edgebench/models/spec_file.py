"""What a model spec file (models/<name>.yaml, or a user's spec) may hold, as a typed model (pydantic v2): each
key's type, default, limits and doc, in one place.

`ModelSpecFile` checks types, ranges, choices and unknown keys (config/problems.py turns its errors into the
one-line "file: field 'opset': ..." messages, with "did you mean" for a near-miss key). What spans keys is checked
in models/spec.py after the types: arch or onnx_path as the source needs, input_shape unless `inputs:` (or the
graph) gives the inputs, the `shapes` and `batch_axis` grammars, each `inputs:` entry. models/spec.py also turns
the single-input keys (input_name, input_shape, input_dtype) into the one `inputs` entry of the ModelSpec.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from edgebench.config.typed import BaseModel, ConfigDict, Field

ModelSource = Literal["torchvision", "builtin", "onnx"]
InputDtype = Literal["float32", "float16", "int64", "int32", "bool"]  # = edgebench.models.inputs.INPUT_DTYPES
MODEL_SOURCES: tuple[str, ...] = get_args(ModelSource)
DTYPES: tuple[str, ...] = get_args(InputDtype)

# lists are never empty (a list of nothing is a mistake; leave the key out instead)
NonEmpty = Field(min_length=1)
Dims = Annotated[list[Annotated[int, Field(ge=1)]], NonEmpty]
InputEntries = Annotated[list[dict[str, Any]], NonEmpty]
Names = Annotated[list[str], NonEmpty]
Mapping_ = dict[str, Any]


class ModelSpecFile(BaseModel):
    """The keys of a model spec file: unknown keys refused, values of exactly their type (no '17' for 17)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    name: str = Field(description="the model's name: the spec file is models/<name>.yaml")
    description: str = Field(default="", description="one line about the model")
    source: ModelSource = Field(description="where the model comes from: a torchvision constructor, an edgebench "
                                            "builtin, or an ONNX file")
    arch: str = Field(default="", description="torchvision constructor or builtin model name "
                                              "(required for source torchvision and builtin)")
    weights: str | None = Field(default=None, description="torchvision:<enum member> (e.g. torchvision:IMAGENET1K_V2) "
                                                          "or a local .pth state_dict; random init when absent")
    preprocess: Mapping_ | None = Field(default=None, description="image preprocessing for labelled data: resize, crop, "
                                                                  "mean, std, interpolation (torchvision weights bring "
                                                                  "their own)")
    onnx_path: str | None = Field(default=None, description="for source: onnx (required there)")
    input_name: str = Field(default="input", description="one-input models: the input's name")
    input_shape: Dims | None = Field(default=None, description="one-input models: per-sample shape, without the batch "
                                                               "axis (required unless `inputs` is given or the "
                                                               "source is onnx)")
    inputs: InputEntries | None = Field(default=None, description="several inputs: [{name, dtype, shape (per sample), "
                                                                  "vocab, role, batch_axis}], in the order the model's "
                                                                  "forward() takes them")
    outputs: Names | None = Field(default=None, description="names of the model's outputs, in forward() order "
                                                            "(default: [output_name])")
    config: Mapping_ | None = Field(default=None, description="keyword arguments of the model constructor (random "
                                                              "init from a config)")
    vocab: int | None = Field(default=None, ge=1, description="vocabulary size: token-id inputs are drawn from "
                                                              "[0, vocab)")
    shapes: str | None = Field(default=None, description="source onnx: shapes of symbolic axes, trtexec form "
                                                         "'name:1x3x320x320'")
    batch_axis: dict[Any, Any] | None = Field(default=None, description="source onnx: batch axis per input name (an "
                                                                        "int, or none: no batch axis, fed as is at "
                                                                        "every batch); default: found from the graph")
    data: str | None = Field(default=None, description=".npz (one array per input name) or folder of them: accuracy "
                                                       "+ calibration")
    values: dict[str, int | float] | None = Field(default=None, description="constant input values: {input name: "
                                                                            "value}, used for timing, calibration "
                                                                            "and accuracy")
    input_dtype: InputDtype = Field(default="float32", description="one-input models: the input's dtype")
    output_name: str = Field(default="output", description="one-output models: the output's name")
    num_classes: int = Field(default=1000, ge=1, description="classes of the classifier head")
    dynamic_batch: bool = Field(default=True, description="export with a dynamic batch axis (false: batch 1, fixed)")
    opset: int = Field(default=17, ge=7, description="ONNX opset of the export")
    parity_atol: float = Field(default=1e-3, ge=0.0, allow_inf_nan=False,
                               description="absolute tolerance of the export's parity check against the torch model")
