"""Multiply-accumulates of an ONNX graph's nodes at a given input shape, read from the graph alone: what a
runtime outside torch ran, where no forward hook can count them (utils/measure/layers/flops.py counts a torch module's,
with the same conventions: Conv, ConvTranspose, MatMul and Gemm count, one MAC per weight-times-input product;
everything else 0).

The image input's dimensions are fixed to the shape, ONNX's shape inference gives every tensor's shape, and each
node's MACs follow from its output and weight shapes. A node whose shapes inference cannot tell counts 0.
"""
from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Sequence

CONVOLUTIONS = ("Conv", "ConvInteger", "QLinearConv")
MATRIX_PRODUCTS = ("MatMul", "Gemm", "MatMulInteger", "QLinearMatMul")


@lru_cache(maxsize=16)
def node_macs(onnx_path: str, input_shape: tuple[int, ...]) -> dict[str, int]:
    """{node name: MACs of one inference at `input_shape`} for the nodes that do multiply-accumulates."""
    import onnx

    model = onnx.load(onnx_path, load_external_data=False)
    graph = model.graph
    constants = {tensor.name: tuple(tensor.dims) for tensor in graph.initializer}
    image = next(value for value in graph.input if value.name not in constants)
    for dim, size in zip(image.type.tensor_type.shape.dim, input_shape):
        dim.Clear()
        dim.dim_value = int(size)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False).graph
    shapes: dict[str, tuple[int, ...]] = dict(constants)
    for value in (*inferred.input, *inferred.value_info, *inferred.output):
        dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in value.type.tensor_type.shape.dim)
        if dims and all(size > 0 for size in dims):
            shapes[value.name] = dims
    found: dict[str, int] = {}
    for node in inferred.node:
        macs = _macs(node.op_type, [shapes.get(name) for name in node.input], shapes.get(node.output[0]))
        if macs:
            found[node.name] = macs
    return found


def _macs(op: str, inputs: Sequence, output) -> int:
    if output is None:
        return 0
    if op in ("Conv", "ConvInteger"):
        weight = inputs[1] if len(inputs) > 1 else None
        return math.prod(output) * math.prod(weight[1:]) if weight else 0
    if op == "QLinearConv":  # x, x_scale, x_zero, w, ...
        weight = inputs[3] if len(inputs) > 3 else None
        return math.prod(output) * math.prod(weight[1:]) if weight else 0
    if op == "ConvTranspose":
        source, weight = inputs[0], inputs[1] if len(inputs) > 1 else None
        return math.prod(source) * math.prod(weight[1:]) if source and weight else 0
    if op in MATRIX_PRODUCTS:
        left = inputs[0] if op != "QLinearMatMul" else inputs[0]
        return math.prod(output) * left[-1] if left else 0
    return 0


def macs_by_scope(onnx_path: Path, input_shape: tuple[int, ...], scope_of) -> dict[tuple[str, ...], int]:
    """MACs of one inference summed per module scope (`scope_of(node name)`, the layer readers' own rule)."""
    summed: dict[tuple[str, ...], int] = {}
    for name, macs in node_macs(str(onnx_path), tuple(input_shape)).items():
        scope = scope_of(name)
        summed[scope] = summed.get(scope, 0) + macs
    return summed
