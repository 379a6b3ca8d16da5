"""Small TFLite files written here for the tests: a flatbuffer of a few builtin operators (and, where a test needs
one, the TFLite_Detection_PostProcess custom operator), built with the TFLite schema's own Python classes that the
LiteRT wheel ships (ai_edge_litert.schema_py_generated). No converter and no peer's code: each graph is a few
operators whose outputs a test computes by hand.

A graph reads its image input through MEAN (its mean over every pixel and channel, as float), so what detbench
feeds changes the output by a known amount: an image of constant value v (after the recipe) shifts each output by
`gain * v`.
"""
from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema
from flatbuffers import flexbuffers

TYPES = {np.dtype("float32"): schema.TensorType.FLOAT32, np.dtype("float16"): schema.TensorType.FLOAT16,
         np.dtype("int32"): schema.TensorType.INT32, np.dtype("uint8"): schema.TensorType.UINT8,
         np.dtype("int8"): schema.TensorType.INT8, np.dtype("int16"): schema.TensorType.INT16,
         np.dtype("int64"): schema.TensorType.INT64, np.dtype("bool"): schema.TensorType.BOOL}
POSTPROCESS = "TFLite_Detection_PostProcess"


@dataclass
class Graph:
    """One subgraph being written: tensors, buffers and operators, in order."""

    tensors: list = field(default_factory=list)
    buffers: list = field(default_factory=lambda: [schema.BufferT()])  # buffer 0: the empty one, by convention
    operators: list = field(default_factory=list)
    codes: list = field(default_factory=list)  # (builtin code, custom code)

    def tensor(self, name: str, shape: Sequence[int], dtype="float32", data: Optional[np.ndarray] = None,
               quantization: Optional[tuple[float, int]] = None, signature: Optional[Sequence[int]] = None) -> int:
        tensor = schema.TensorT()
        tensor.name, tensor.shape, tensor.type = name, list(shape), TYPES[np.dtype(dtype)]
        if signature is not None:
            tensor.shapeSignature = list(signature)
        if data is not None:
            buffer = schema.BufferT()
            buffer.data = np.frombuffer(np.ascontiguousarray(data, dtype=dtype).tobytes(), dtype=np.uint8)
            self.buffers.append(buffer)
            tensor.buffer = len(self.buffers) - 1
        if quantization is not None:
            parameters = schema.QuantizationParametersT()
            parameters.scale, parameters.zeroPoint = [float(quantization[0])], [int(quantization[1])]
            tensor.quantization = parameters
        self.tensors.append(tensor)
        return len(self.tensors) - 1

    def constant(self, name: str, values, dtype="float32") -> int:
        values = np.asarray(values, dtype=dtype)
        return self.tensor(name, values.shape, dtype, values)

    def op(self, code, inputs: Sequence[int], outputs: Sequence[int], options=None, options_type: int = 0,
           custom: Optional[bytes] = None) -> None:
        key = (code, None) if isinstance(code, int) else (schema.BuiltinOperator.CUSTOM, code)
        if key not in self.codes:
            self.codes.append(key)
        operator = schema.OperatorT()
        operator.opcodeIndex, operator.inputs, operator.outputs = self.codes.index(key), list(inputs), list(outputs)
        operator.builtinOptionsType, operator.builtinOptions = options_type, options
        if custom is not None:
            operator.customOptions = list(custom)
        self.operators.append(operator)

    def serialised(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        subgraph = schema.SubGraphT()
        subgraph.tensors, subgraph.operators = self.tensors, self.operators
        subgraph.inputs, subgraph.outputs = list(inputs), list(outputs)
        model = schema.ModelT()
        model.version, model.subgraphs, model.buffers = 3, [subgraph], self.buffers
        model.operatorCodes = []
        for builtin, custom in self.codes:
            code = schema.OperatorCodeT()
            code.builtinCode, code.deprecatedBuiltinCode = builtin, min(builtin, 127)
            code.customCode, code.version = custom, 1
            model.operatorCodes.append(code)
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())

    # The operators the test graphs use.
    def mean_of(self, image: int, dtype: str, quantization: Optional[tuple[float, int]] = None) -> int:
        """The image's mean as a float32 (1, 1, 1, 1): dequantized first where it is integer or float16."""
        if dtype != "float32":
            shape = list(self.tensors[image].shape)
            floats = self.tensor("dequantized", shape)
            self.op(schema.BuiltinOperator.DEQUANTIZE, [image], [floats])
            image = floats
        axes = self.constant("axes", [1, 2, 3], "int32")
        mean = self.tensor("mean", [1, 1, 1, 1])
        options = schema.ReducerOptionsT()
        options.keepDims = True
        self.op(schema.BuiltinOperator.MEAN, [image, axes], [mean], options, schema.BuiltinOptions.ReducerOptions)
        return mean

    def shifted(self, name: str, base: np.ndarray, mean: int, gain: float) -> int:
        """base + gain * mean, of base's shape (float32); a batch of means gives a batch of outputs."""
        scaled = self.tensor(f"{name}_gain", [1, 1, 1, 1])
        self.op(schema.BuiltinOperator.MUL, [mean, self.constant(f"{name}_k", np.full((1, 1, 1, 1), gain))],
                [scaled], schema.MulOptionsT(), schema.BuiltinOptions.MulOptions)
        flat = self.tensor(f"{name}_flat", [1] * base.ndim)
        shape = self.constant(f"{name}_shape", [-1] + [1] * (base.ndim - 1), "int32")
        self.op(schema.BuiltinOperator.RESHAPE, [scaled, shape], [flat], schema.ReshapeOptionsT(),
                schema.BuiltinOptions.ReshapeOptions)
        out = self.tensor(name, base.shape)
        self.op(schema.BuiltinOperator.ADD, [self.constant(f"{name}_base", base), flat], [out], schema.AddOptionsT(),
                schema.BuiltinOptions.AddOptions)
        return out


def image_input(graph: Graph, shape: Sequence[int], dtype: str = "float32",
                quantization: Optional[tuple[float, int]] = None, signature: Optional[Sequence[int]] = None) -> int:
    return graph.tensor("images", shape, dtype, quantization=quantization, signature=signature)


def shifted_outputs(path: Path, bases: Sequence[np.ndarray], names: Sequence[str], input_shape=(1, 320, 320, 3),
                    dtype: str = "float32", quantization: Optional[tuple[float, int]] = None, gain: float = 0.0,
                    signature: Optional[Sequence[int]] = None, metadata: Optional[str] = None,
                    output_quantization: Optional[tuple[float, int]] = None) -> Path:
    """A file whose outputs are `bases` shifted by gain x the input's mean; `metadata`: Ultralytics' metadata text,
    appended as the zip its TFLite export appends; `output_quantization`: the outputs quantized to int8 so."""
    graph = Graph()
    image = image_input(graph, input_shape, dtype, quantization, signature)
    mean = graph.mean_of(image, dtype, quantization)
    outputs = [graph.shifted(name, np.asarray(base, dtype=np.float32), mean, gain) for base, name in zip(bases, names)]
    if output_quantization is not None:
        floats, outputs = outputs, []
        for tensor in floats:
            outputs.append(graph.tensor(f"{graph.tensors[tensor].name}_int8", graph.tensors[tensor].shape, "int8",
                                        quantization=output_quantization))
            graph.op(schema.BuiltinOperator.QUANTIZE, [tensor], [outputs[-1]])
    data = graph.serialised([image], outputs)
    if metadata is not None:
        data += ultralytics_zip(metadata)
    path.write_bytes(data)
    return path


def ultralytics_zip(text: str) -> bytes:
    """Ultralytics' TFLite export appends its metadata as a zip holding metadata.txt."""
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w") as archive:
        archive.writestr("metadata.txt", text)
    return sink.getvalue()


def postprocess_options(**values) -> bytes:
    """TFLite_Detection_PostProcess's options, a flexbuffer map as TF's converter writes it."""
    builder = flexbuffers.Builder()
    with builder.Map():
        for key, value in values.items():
            if isinstance(value, bool):
                builder.Bool(key, value)
            elif isinstance(value, int):
                builder.Int(key, value)
            else:
                builder.Float(key, float(value))
    return bytes(builder.Finish())


def ssd_file(path: Path, box_encodings: np.ndarray, class_logits: np.ndarray, anchors: np.ndarray,
             input_shape=(1, 300, 300, 3), dtype: str = "uint8", quantization=(1 / 128, 128), gain: float = 0.0,
             max_detections: int = 10, score_threshold: float = 1e-8, iou_threshold: float = 0.6,
             output_order: Sequence[int] = (0, 1, 2, 3), custom_code: str = POSTPROCESS, regular: bool = False,
             detections_per_class: int = 100) -> Path:
    """A TF Object Detection API-style SSD tail: box encodings (1, A, 4) and class logits (1, A, 1 + C) (background
    first) shifted by gain x the input's mean, the logits through LOGISTIC, then TFLite_Detection_PostProcess with
    anchors (A, 4: ycenter, xcenter, h, w) and the SSD scales 10, 10, 5, 5; the graph's outputs are its four
    (boxes, classes, scores, count) in `output_order`."""
    graph = Graph()
    image = image_input(graph, input_shape, dtype, quantization)
    mean = graph.mean_of(image, dtype, quantization)
    boxes = graph.shifted("raw_outputs/box_encodings", box_encodings[None].astype(np.float32), mean, gain)
    logits = graph.shifted("raw_outputs/class_logits", class_logits[None].astype(np.float32), mean, gain)
    scores = graph.tensor("raw_outputs/class_predictions", [1, *class_logits.shape])
    graph.op(schema.BuiltinOperator.LOGISTIC, [logits], [scores])
    count = max_detections
    outs = [graph.tensor("TFLite_Detection_PostProcess", [1, count, 4]),
            graph.tensor("TFLite_Detection_PostProcess:1", [1, count]),
            graph.tensor("TFLite_Detection_PostProcess:2", [1, count]),
            graph.tensor("TFLite_Detection_PostProcess:3", [1])]
    options = postprocess_options(max_detections=max_detections, max_classes_per_detection=1,
                                  detections_per_class=detections_per_class, use_regular_nms=regular,
                                  nms_score_threshold=score_threshold, nms_iou_threshold=iou_threshold,
                                  num_classes=class_logits.shape[1] - 1, y_scale=10.0, x_scale=10.0, h_scale=5.0,
                                  w_scale=5.0)
    graph.op(custom_code, [boxes, scores, graph.constant("anchors", anchors)], outs, custom=options)
    path.write_bytes(graph.serialised([image], [outs[index] for index in output_order]))
    return path
