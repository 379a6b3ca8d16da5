"""An NNCF-quantized OpenVINO model with single operations fed float again, for the accuracy-aware search
(pipelines/runtimes/int8_repair.py).

NNCF puts a FakeQuantize in front of each quantized activation input and stores quantized weights as int8
constants with their scale (Constant, Convert, Multiply). Reverting an operation connects its activation inputs
to what the FakeQuantize was given, and its weights to the float model's constant of the same operation, so
the operation computes as in fp32; the quantizers of other consumers stay. A weighted operation left with int8
weights but float activations (its quantizer bypassed upstream, before a Split) gets its float weights too: that
mix is a different kernel path, and OpenVINO 2026.4's CPU plugin fails to compile it after a multi-output
operation.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from pipelines.runtimes.int8_contract import FLOAT, RawForward, named_inputs
from pipelines.runtimes.quantization import staging

QUANTIZER = "FakeQuantize"
WEIGHTED = ("Convolution", "GroupConvolution", "MatMul")
# Operations a quantizer's values pass through unchanged in scale (NNCF puts the quantizer before them).
PASS_THROUGH = ("VariadicSplit", "Split", "Reshape", "Transpose", "Concat", "MaxPool", "Interpolate", "Squeeze",
                "Unsqueeze", "StridedSlice", "Slice", "Gather")


class OpenVinoGraph:
    def __init__(self, core: Any, quantized: Path, float_file: Path, threads: Optional[int]):
        self.core, self.threads = core, threads
        self.quantized = core.read_model(str(quantized))
        # Folded, so a grouped convolution's weights are one constant; folding constants changes no output.
        self.float_model = _folded(core.read_model(str(float_file)))
        self._float_ops = {op.get_friendly_name(): op for op in self.float_model.get_ordered_ops()}

    def operations(self) -> list[str]:
        return [op.get_friendly_name() for op in self.quantized.get_ordered_ops()
                if op.get_type_name() != QUANTIZER and (_int8_weights(op) or any(
                    op.input_value(i).get_node().get_type_name() == QUANTIZER for i in range(op.get_input_size())))]

    def reverted(self, names: Sequence[str]) -> Any:
        from openvino import op as ops

        model = self.quantized.clone()
        wanted = set(names)
        for node in model.get_ordered_ops():
            name = node.get_friendly_name()
            if name not in wanted:
                continue
            for index in range(node.get_input_size()):
                source = node.input_value(index).get_node()
                if source.get_type_name() == QUANTIZER:
                    node.input(index).replace_source_output(source.input_value(0))
            self._restore_weights(node, ops)
        for node in model.get_ordered_ops():
            if _int8_weights(node) and not _quantized_input(node):
                self._restore_weights(node, ops)
        model.validate_nodes_and_infer_types()
        return model

    def _restore_weights(self, node: Any, ops: Any) -> None:
        weights = self._float_weights(node.get_friendly_name()) if _int8_weights(node) else None
        if weights is not None and tuple(weights.shape) == tuple(node.input_value(1).get_shape()):
            node.input(1).replace_source_output(ops.Constant(weights).output(0))

    def _float_weights(self, name: str) -> Optional[np.ndarray]:
        """The float model's weights of this operation, where it has them as one constant of the same shape."""
        original = self._float_ops.get(name)
        if original is None or original.get_input_size() < 2:
            return None
        source = original.input_value(1).get_node()
        if source.get_type_name() != "Constant":
            return None
        return source.get_data().copy()

    def forward(self, model: Any) -> RawForward:
        chosen = self.quantized if model is None else self.float_model if model is FLOAT else model
        config = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"}
        if self.threads:
            config["INFERENCE_NUM_THREADS"] = self.threads
        compiled = self.core.compile_model(chosen, "CPU", config)
        request = compiled.create_infer_request()

        name = compiled.inputs[0].get_any_name()

        def run(value: Any) -> Any:
            outputs = request.infer(named_inputs(value, name))
            values = [outputs[index].copy() for index in range(len(outputs))]
            return values[0] if len(values) == 1 else tuple(values)

        return run

    def save(self, model: Any, target: Path) -> None:
        import openvino as ov

        with staging(target) as directory:
            partial = directory / target.name
            ov.save_model(model, str(partial), compress_to_fp16=False)
            os.replace(partial.with_suffix(".bin"), target.with_suffix(".bin"))
            os.replace(partial, target)


def _folded(model: Any) -> Any:
    """The model with constant subgraphs folded: a grouped convolution's weights become one constant."""
    from openvino import passes

    manager = passes.Manager()
    manager.register_pass(passes.ConstantFolding())
    manager.run_passes(model)
    return model


def _int8_weights(node: Any) -> bool:
    """A weighted operation whose weights are NNCF's int8 constant with its scale (not one float constant)."""
    return (node.get_type_name() in WEIGHTED and node.get_input_size() > 1
            and node.input_value(1).get_node().get_type_name() != "Constant")


def _quantized_input(node: Any) -> bool:
    """Whether a quantizer feeds the operation's activation input, directly or through pass-through operations."""
    source = node.input_value(0).get_node()
    while source.get_type_name() in PASS_THROUGH:
        source = source.input_value(0).get_node()
    return source.get_type_name() == QUANTIZER


def ir_files(xml: Path) -> list[Path]:
    return [xml, xml.with_suffix(".bin")]
