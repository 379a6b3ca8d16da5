"""A TFLite file (.tflite) read without running it: its flatbuffer through the schema classes LiteRT ships
(ai_edge_litert.schema_py_generated, pure Python), so a file with an operator no runtime has, or a truncated one,
is refused here with one message rather than by a runtime's loader.

What is read: the first subgraph's inputs and outputs (names, shapes with their free axes, element types, the
quantization scale and zero point of an integer tensor), the operators it uses, the element types its weights are
stored in, the metadata Ultralytics appends (a zip holding metadata.json), and where the graph ends in
TFLite_Detection_PostProcess, that operator's inputs and options (a runtime without it runs the graph up to them)."""
from __future__ import annotations

import ast
import json
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import numpy as np

from pipelines.cache_keys import file_digest
from pipelines.exported.file_facts import ExportedFile, ExportedFileError, Tail, Tensor

IDENTIFIER = b"TFL3"
# Custom operators LiteRT's builtin resolver registers itself; any other custom operator needs a kernel of its own.
KNOWN_CUSTOM = ("TFLite_Detection_PostProcess",)
POSTPROCESS = "TFLite_Detection_PostProcess"
TYPE_NAMES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string", 6: "bool", 7: "int16",
              8: "complex64", 9: "int8", 10: "float64", 11: "complex128", 12: "uint64", 13: "resource",
              14: "variant", 15: "uint32", 16: "uint16", 17: "int4", 18: "bfloat16"}
WEIGHTED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "CONV_3D", "BATCH_MATMUL")


def read_tflite(path: Path) -> ExportedFile:
    data = path.read_bytes()
    if len(data) < 8 or data[4:8] != IDENTIFIER:
        raise ExportedFileError(f"model.file {path} is not a TFLite model (a .tflite flatbuffer carries the identifier "
                                f"TFL3 in its bytes 4-8; this one has {data[4:8]!r}); export the detector again")
    try:
        graph = _Graph(data)
    except ExportedFileError:
        raise
    except Exception as error:  # the flatbuffer's offsets point past its end, or at nothing
        raise ExportedFileError(f"model.file {path} is not a readable TFLite model ({type(error).__name__}: "
                                f"{error}); the file is truncated or damaged: export it again") from None
    _refuse_unknown_operators(path, graph.custom)
    if not graph.outputs:
        raise ExportedFileError(f"model.file {path} holds no graph outputs; export the detector again")
    return ExportedFile(path, "tflite", graph.inputs, graph.outputs, _appended_metadata(path), file_digest(path),
                        precision=graph.precision, tail=graph.tail)


class _Graph:
    """What the first subgraph holds, read once."""

    def __init__(self, data: bytes):
        from ai_edge_litert import schema_py_generated as schema

        model = schema.Model.GetRootAs(data, 0)
        if model.SubgraphsLength() < 1:
            raise ExportedFileError("it holds no subgraph")
        self.buffer_bytes = [_buffer_size(model.Buffers(index), len(data)) for index in range(model.BuffersLength())]
        names = {value: name for name, value in vars(schema.BuiltinOperator).items() if not name.startswith("_")}
        codes, self.custom = [], set()
        for index in range(model.OperatorCodesLength()):
            code = model.OperatorCodes(index)
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            custom = code.CustomCode()
            codes.append(custom.decode(errors="replace") if custom else names.get(builtin, f"builtin {builtin}"))
            if custom:
                self.custom.add(codes[-1])
        subgraph = model.Subgraphs(0)
        tensors = [subgraph.Tensors(index) for index in range(subgraph.TensorsLength())]
        self.inputs = tuple(self._tensor(tensors[i]) for i in subgraph.InputsAsNumpy().tolist())
        self.outputs = tuple(self._tensor(tensors[i]) for i in subgraph.OutputsAsNumpy().tolist())
        operators = [subgraph.Operators(index) for index in range(subgraph.OperatorsLength())]
        self.operators = [codes[op.OpcodeIndex()] for op in operators]
        self.precision = self._weights_precision(tensors)
        self.tail = self._tail(model, operators, tensors)

    def _tensor(self, tensor) -> Tensor:
        # The signature keeps the free axes (-1) that the shape fills with 1.
        sizes = tensor.ShapeSignatureAsNumpy() if tensor.ShapeSignatureLength() else tensor.ShapeAsNumpy()
        shape = tuple("?" if int(size) < 0 else int(size) for size in np.atleast_1d(sizes)) if tensor.ShapeLength() \
            or tensor.ShapeSignatureLength() else ()
        quantization = None
        parameters = tensor.Quantization()
        if parameters is not None and parameters.ScaleLength() and parameters.ZeroPointLength():
            quantization = (float(parameters.Scale(0)), int(parameters.ZeroPoint(0)))
        return Tensor(tensor.Name().decode(errors="replace"), shape, TYPE_NAMES.get(tensor.Type(), "undefined"),
                      quantization)

    def _weights_precision(self, tensors) -> str:
        """The element type most of the constant bytes are stored in (weights, biases), as the file holds them:
        float16 weights are dequantized to float32 when the file is loaded, int8 ones run int8 kernels."""
        stored: Counter = Counter()
        for tensor in tensors:
            size = self.buffer_bytes[tensor.Buffer()] if tensor.Buffer() < len(self.buffer_bytes) else 0
            if size:
                stored[TYPE_NAMES.get(tensor.Type(), "undefined")] += size
        return stored.most_common(1)[0][0] if stored else "float32"

    def _tail(self, model, operators, tensors) -> Optional[Tail]:
        from flatbuffers import flexbuffers

        for op, name in zip(operators, self.operators):
            if name != POSTPROCESS:
                continue
            inputs = [tensors[i] for i in op.InputsAsNumpy().tolist()]
            options = flexbuffers.Loads(op.CustomOptionsAsNumpy().tobytes()) if op.CustomOptionsLength() else {}
            constants = {}
            for tensor in inputs:
                buffer = self.buffer_bytes[tensor.Buffer()] if tensor.Buffer() < len(self.buffer_bytes) else 0
                if buffer:
                    constants[tensor.Name().decode()] = _constant(model, tensor)
            outputs = tuple(tensors[i].Name().decode() for i in op.OutputsAsNumpy().tolist())
            return Tail(POSTPROCESS, tuple(t.Name().decode() for t in inputs), outputs, dict(options), constants)
        return None


def _buffer_size(buffer, size: int) -> int:
    """A buffer's bytes, checked to lie inside the file (a truncated file ends before its last buffer)."""
    offset, length = buffer.Offset(), buffer.Size()
    if offset > 1:  # stored after the flatbuffer, at an offset of the file
        if offset + length > size:
            raise ExportedFileError(f"a weights buffer ends at byte {offset + length:,} of a {size:,}-byte file")
        return length
    if buffer.DataLength():
        buffer.DataAsNumpy()  # numpy refuses a vector that runs past the file's end
    return buffer.DataLength()


def _constant(model, tensor) -> np.ndarray:
    """A constant input's values (TFLite_Detection_PostProcess's anchors), as float32 of its shape."""
    raw = model.Buffers(tensor.Buffer()).DataAsNumpy()
    dtype = {0: np.float32, 1: np.float16, 3: np.uint8, 9: np.int8}.get(tensor.Type(), np.float32)
    values = np.frombuffer(raw.tobytes(), dtype=dtype).reshape(tensor.ShapeAsNumpy().tolist())
    parameters = tensor.Quantization()
    if dtype in (np.uint8, np.int8) and parameters is not None and parameters.ScaleLength():
        return ((values.astype(np.float32) - parameters.ZeroPoint(0)) * parameters.Scale(0)).astype(np.float32)
    return values.astype(np.float32)


def _refuse_unknown_operators(path: Path, custom: set[str]) -> None:
    unknown = sorted(custom - set(KNOWN_CUSTOM))
    flex = [name for name in unknown if name.startswith("Flex")]
    if flex:
        raise ExportedFileError(
            f"model.file {path} uses TensorFlow operators ({', '.join(flex)}: converted with SELECT_TF_OPS), which "
            "need TensorFlow's Flex delegate; neither LiteRT's package nor OpenVINO has them. Convert the model with "
            "TFLite's builtin operators only")
    if unknown:
        raise ExportedFileError(
            f"model.file {path} uses the custom operator(s) {', '.join(unknown)}, which neither LiteRT nor OpenVINO "
            "has (a custom operator runs only where the application that made the file registers its kernel); "
            "convert the model with TFLite's builtin operators only")


def _appended_metadata(path: Path) -> dict[str, Any]:
    """What an exporter appended as a zip after the flatbuffer: Ultralytics' metadata.json (JSON; older exports
    wrote the same dict as a Python literal in metadata.txt). Names keyed by number come back with int keys."""
    try:
        with zipfile.ZipFile(path) as archive:
            entry = next((name for name in archive.namelist() if name in ("metadata.json", "metadata.txt")), None)
            text = archive.read(entry).decode("utf-8") if entry else ""
    except (zipfile.BadZipFile, OSError, KeyError, UnicodeDecodeError):
        return {}
    try:
        metadata = json.loads(text)
    except ValueError:
        try:
            metadata = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return {}
    if not isinstance(metadata, dict):
        return {}
    names = metadata.get("names")
    if isinstance(names, dict) and all(str(key).isdigit() for key in names):
        metadata["names"] = {int(key): value for key, value in names.items()}
    return metadata
