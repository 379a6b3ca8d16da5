"""A QDQ-quantized ONNX model with single operations fed float again, for the accuracy-aware search
(pipelines/runtimes/int8_repair.py).

ONNX Runtime's static quantization puts QuantizeLinear and DequantizeLinear in front of each quantized input and
stores weights and biases as integer initializers behind a DequantizeLinear. Reverting an operation connects
each such input to the float tensor the pair was given, and each weight to the float model's initializer of the
same name (the integer one dequantized where the float model has none), so the operation computes as in fp32;
the quantizers of other consumers stay. An operation whose output is a graph output the quantizer left quantized
(through a QuantizeLinear/DequantizeLinear pair) hands its float output out when reverted: a decode's last Concat
fed float but quantized on its way out still loses the scores beside the pixel boxes.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from pipelines.runtimes.int8_contract import FLOAT, RawForward, named_inputs
from pipelines.runtimes.quantization import staging

QUANTIZE, DEQUANTIZE = "QuantizeLinear", "DequantizeLinear"


class OnnxRuntimeGraph:
    def __init__(self, quantized: Path, float_file: Path, threads: Optional[int]):
        import onnx

        self.threads = threads
        self.quantized = onnx.load(str(quantized))
        self.float_model = onnx.load(str(float_file))
        self._float_inputs = {node.name: list(node.input) for node in self.float_model.graph.node if node.name}
        self._float_initializers = {tensor.name: tensor for tensor in self.float_model.graph.initializer}

    def operations(self) -> list[str]:
        graph = self.quantized.graph
        produced = _producers(graph)
        return [node.name for node in graph.node
                if node.op_type not in (QUANTIZE, DEQUANTIZE) and node.name
                and any(getattr(produced.get(name), "op_type", "") == DEQUANTIZE for name in node.input)]

    def reverted(self, names: Sequence[str]) -> Any:
        from onnx import numpy_helper

        model = type(self.quantized)()
        model.CopyFrom(self.quantized)
        graph = model.graph
        produced = _producers(graph)
        initializers = {tensor.name: tensor for tensor in graph.initializer}
        wanted = set(names)
        for output in graph.output:
            pair = _quantized_output(produced, output.name)
            if pair is not None and getattr(produced.get(pair[1].input[0]), "name", None) in wanted:
                dequantize, quantize = pair
                # The DequantizeLinear becomes an Identity of the float tensor: the output keeps its name.
                dequantize.op_type = "Identity"
                dequantize.domain = ""
                del dequantize.attribute[:]
                del dequantize.input[:]
                dequantize.input.append(quantize.input[0])
        for node in graph.node:
            if node.name not in wanted:
                continue
            originals = self._float_inputs.get(node.name, [])
            for index, name in enumerate(node.input):
                dequantize = produced.get(name)
                if dequantize is None or dequantize.op_type != DEQUANTIZE:
                    continue
                source = produced.get(dequantize.input[0])
                if source is not None and source.op_type == QUANTIZE:
                    node.input[index] = source.input[0]
                    continue
                original = originals[index] if index < len(originals) else None
                if original not in self._float_initializers and dequantize.input[0] not in initializers:
                    continue
                # A new name: the quantized graph may already use the float one (a DequantizeLinear's output).
                float_name = f"{original or dequantize.input[0]}_reverted_float"
                if float_name not in initializers:
                    value = (numpy_helper.to_array(self._float_initializers[original])
                             if original in self._float_initializers
                             else _dequantized(dequantize, initializers, numpy_helper))
                    initializers[float_name] = numpy_helper.from_array(value, float_name)
                    graph.initializer.append(initializers[float_name])
                node.input[index] = float_name
        return model

    def forward(self, model: Any) -> RawForward:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if self.threads:
            options.intra_op_num_threads = self.threads
        chosen = self.quantized if model is None else self.float_model if model is FLOAT else model
        session = ort.InferenceSession(chosen.SerializeToString(), options, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name

        def run(value: Any) -> Any:
            outputs = session.run(None, named_inputs(value, name))
            return outputs[0] if len(outputs) == 1 else tuple(outputs)

        return run

    def save(self, model: Any, target: Path) -> None:
        import onnx

        with staging(target) as directory:
            partial = directory / target.name
            onnx.save(model, str(partial))
            os.replace(partial, target)


def _producers(graph: Any) -> dict[str, Any]:
    return {output: node for node in graph.node for output in node.output}


def _quantized_output(produced: dict[str, Any], name: str) -> Optional[tuple[Any, Any]]:
    """The DequantizeLinear and QuantizeLinear a graph output comes through; None where it is float."""
    dequantize = produced.get(name)
    if dequantize is None or dequantize.op_type != DEQUANTIZE:
        return None
    quantize = produced.get(dequantize.input[0])
    return (dequantize, quantize) if quantize is not None and quantize.op_type == QUANTIZE else None


def _dequantized(node: Any, initializers: dict[str, Any], numpy_helper: Any) -> np.ndarray:
    """(q - zero point) * scale of an integer initializer, along the node's axis when per channel."""
    value = numpy_helper.to_array(initializers[node.input[0]]).astype(np.float32)
    scale = numpy_helper.to_array(initializers[node.input[1]]).astype(np.float32)
    zero = (numpy_helper.to_array(initializers[node.input[2]]).astype(np.float32)
            if len(node.input) > 2 and node.input[2] in initializers else np.zeros_like(scale))
    if scale.ndim == 1 and scale.size > 1:
        axis = next((attribute.i for attribute in node.attribute if attribute.name == "axis"), 1)
        shape = [1] * value.ndim
        shape[axis] = scale.size
        scale, zero = scale.reshape(shape), zero.reshape(shape)
    return (value - zero) * scale
