"""What an exported detector file says about itself, read without running it: its inputs and outputs (the graph's
own shapes, which win over the metadata), and the exporter's metadata where there is some (Ultralytics writes
`metadata_props` into an ONNX file, a `metadata.yaml` beside an OpenVINO IR and a zip after a TFLite file's
flatbuffer; tflite_reading.py reads those). A file that cannot be a detector detbench runs is refused here, naming
the file and the fix; the user's file is only ever read."""
from __future__ import annotations

import ast
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any, Optional, Union

import yaml

from pipelines.cache_keys import file_digest
from pipelines.exported.file_facts import AfterConvolutions, Dim, ExportedFile, ExportedFileError, Tensor

ONNX_SUFFIX, IR_SUFFIX, TFLITE_SUFFIX = ".onnx", ".xml", ".tflite"
FILE_SUFFIXES = (ONNX_SUFFIX, IR_SUFFIX, TFLITE_SUFFIX)
FORMATS = {ONNX_SUFFIX: "an ONNX file", IR_SUFFIX: "an OpenVINO IR", TFLITE_SUFFIX: "a TFLite file"}
PICKLE_SUFFIXES = (".pt", ".pth")
CONVOLUTIONS = ("Conv", "ConvTranspose")
ARITHMETIC = ("Add", "Sub", "Mul", "Div", "Pow")


def _literal(text: str) -> Any:
    """Ultralytics writes names, args and imgsz as Python literals in text, not JSON."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def read_exported(path: Union[str, Path]) -> ExportedFile:
    path = Path(path)
    if path.suffix in PICKLE_SUFFIXES:
        raise ExportedFileError(
            f"model.file {path} is a PyTorch checkpoint (a pickle, which detbench does not unpickle: it can run code); "
            f"export it to a file detbench runs, e.g. with Ultralytics: yolo export model={path.name} format=onnx "
            f"(or format=openvino), then set model.file to the .onnx file or the .xml of the IR")
    if path.suffix not in FILE_SUFFIXES:
        raise ExportedFileError(f"model.file {path}: not an ONNX (.onnx), OpenVINO IR (.xml) or TFLite (.tflite) "
                                "file; export the detector to one of them")
    if not path.is_file():
        raise ExportedFileError(f"model.file {path}: no such file; set model.file to an exported .onnx, .xml or "
                                ".tflite")
    if path.suffix == TFLITE_SUFFIX:
        from pipelines.exported.tflite_reading import read_tflite

        return read_tflite(path)
    return _read_onnx(path) if path.suffix == ONNX_SUFFIX else _read_ir(path)


def _read_onnx(path: Path) -> ExportedFile:
    import onnx
    from onnx.external_data_helper import uses_external_data

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # protobuf's DecodeError and friends: the bytes are not a model
        raise ExportedFileError(f"model.file {path} is not a readable ONNX model ({type(error).__name__}: {error}); "
                                "the file is truncated or not ONNX: export it again") from None
    graph = model.graph
    for tensor in graph.initializer:
        if uses_external_data(tensor):
            location = next((entry.value for entry in tensor.external_data if entry.key == "location"), "")
            folder = path.resolve().parent
            if folder not in (folder / location).resolve().parents:
                raise ExportedFileError(f"model.file {path} points its weights at {location!r}, outside its own "
                                        "folder, which no runtime reads (a file could reach any file that way); "
                                        "export it again with its external data beside it")
            if not (path.parent / location).is_file():
                raise ExportedFileError(f"model.file {path} keeps its weights in an external data file, "
                                        f"{path.parent / location}, which is missing; put it beside the .onnx file")
    constants = {tensor.name for tensor in graph.initializer}

    def shape(value) -> tuple[Dim, ...]:
        return tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                     for d in value.type.tensor_type.shape.dim)

    def dtype(value) -> str:
        try:
            return str(onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type))
        except (KeyError, ValueError, TypeError):  # no element type, or one numpy has no name for
            return "undefined"

    inputs = tuple(Tensor(v.name, shape(v), dtype(v)) for v in graph.input if v.name not in constants)
    outputs = tuple(Tensor(v.name, shape(v), dtype(v)) for v in graph.output)
    metadata = {prop.key: _literal(prop.value) if prop.key in ("names", "args", "imgsz", "stride", "batch")
                else prop.value for prop in model.metadata_props}
    if len(graph.node) == 0 or not outputs:
        raise ExportedFileError(f"model.file {path} holds no graph; export the detector again")
    return ExportedFile(path, "onnx", inputs, outputs, metadata, file_digest(path),
                        after_convolutions=_after_convolutions(graph))


def _after_convolutions(graph) -> Optional[AfterConvolutions]:
    """The graph's nodes after its last convolutions (ONNX lists nodes in topological order)."""
    import onnx

    consumers: dict[str, list[int]] = {}
    for index, node in enumerate(graph.node):
        for name in node.input:
            consumers.setdefault(name, []).append(index)
    reaches = [False] * len(graph.node)
    for index in reversed(range(len(graph.node))):
        node = graph.node[index]
        reaches[index] = node.op_type in CONVOLUTIONS or any(
            reaches[later] for output in node.output for later in consumers.get(output, ()))
    if not any(reaches):
        return None
    floating = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16)
    constants = {tensor.name for tensor in graph.initializer if tensor.data_type in floating}
    constants |= {node.output[0] for node in graph.node if node.op_type == "Constant" and node.output and any(
        attribute.name == "value" and attribute.t.data_type in floating for attribute in node.attribute)}
    after = [node for node, reached in zip(graph.node, reaches) if not reached]
    return AfterConvolutions(frozenset(node.op_type for node in after),
                             frozenset(node.op_type for node in after
                                       if node.op_type in ARITHMETIC and any(name in constants for name in node.input)))


def _read_ir(path: Path) -> ExportedFile:
    weights = path.with_suffix(".bin")
    if not weights.is_file():
        raise ExportedFileError(f"model.file {path}: its weights file {weights} is missing; an OpenVINO IR is the "
                                ".xml and the .bin beside it, under the same name")
    try:
        root = ElementTree.parse(path).getroot()
    except (ElementTree.ParseError, OSError) as error:
        raise ExportedFileError(f"model.file {path} is not a readable OpenVINO IR ({error}); export it again") from None
    needed = 0
    for data in root.iter("data"):
        if "offset" in data.attrib and "size" in data.attrib:
            needed = max(needed, int(data.attrib["offset"]) + int(data.attrib["size"]))
    if weights.stat().st_size < needed:
        raise ExportedFileError(f"model.file {path}: its weights file {weights} holds {weights.stat().st_size:,} "
                                f"bytes, and the model reads up to byte {needed:,}; the .bin is truncated or from "
                                "another export: export the model again")
    import openvino as ov

    try:
        model = ov.Core().read_model(str(path))
    except Exception as error:
        raise ExportedFileError(f"model.file {path}: OpenVINO cannot read it ({type(error).__name__}: {error}); "
                                "export it again") from None

    def tensor(port, index: int) -> Tensor:
        names = port.get_names()
        dims = tuple(d.get_length() if d.is_static else "?" for d in port.get_partial_shape())
        element = port.get_element_type()
        dtype = element.to_dtype().name if element.is_static() else "undefined"
        return Tensor(sorted(names)[0] if names else f"output{index}", dims, dtype)

    inputs = tuple(tensor(port, i) for i, port in enumerate(model.inputs))
    outputs = tuple(tensor(port, i) for i, port in enumerate(model.outputs))
    metadata: dict[str, Any] = {}
    beside = path.parent / "metadata.yaml"
    if beside.is_file():
        try:
            loaded = yaml.safe_load(beside.read_text(encoding="utf-8"))
            metadata = loaded if isinstance(loaded, dict) else {}
        except (yaml.YAMLError, OSError, UnicodeDecodeError):
            metadata = {}
    if "names" not in metadata and model.has_rt_info(["model_info", "labels"]):
        # rt_info writes each label with underscores for its spaces ("traffic_light").
        labels = str(model.get_rt_info(["model_info", "labels"]).astype(str)).split()
        metadata["names"] = [label.replace("_", " ") for label in labels]
    digest = f"{file_digest(path)}-{file_digest(weights)}"
    return ExportedFile(path, "openvino", inputs, outputs, metadata, digest)
