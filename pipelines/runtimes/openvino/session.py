"""OpenVINO's CPU plugin, running the cached ONNX export of the fused network in fp32 or bf16, or its int8
quantization (quantizer.py)."""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import numpy as np
import openvino as ov
import openvino.properties as props
import openvino.properties.hint as hints
import torch
from openvino.preprocess import PrePostProcessor

from pipelines.runtimes.base import (LoadedNetwork, PreparedForward, Runtime, RuntimeNotSupported, RuntimeSettings,
                                     a_file_it_may_refuse, at_the_graphs_shape, in_the_networks_layout,
                                     stored_precision)
from pipelines.runtimes.concurrency import (AUTO, TORCH_OWN_THREADS, auto_choice, cores_to_pin, restore_torch_threads,
                                            share_opencv_threads, share_torch_threads, threads_per_stream,
                                            usable_cores)
from pipelines.runtimes.pinning import pin_torch_pool, restore_affinities, thread_affinities
from pipelines.runtimes.onnx_export import OPSET, ExportResult, as_input, export_onnx
from pipelines.runtimes.openvino.layers import NodeCounter
from pipelines.runtimes.openvino.quantizer import quantize_for_openvino
from pipelines.runtimes.openvino.reverting import OpenVinoGraph, ir_files
from pipelines.runtimes.openvino.signal_stack import shared_core
from pipelines.runtimes.openvino.spec import INPUT_PRECISIONS, SPEC, OpenVinoOptions
from pipelines.runtimes.openvino.static_shapes import CompiledByShape
from pipelines.runtimes.quantization import quantize_network
from pipelines.runtimes.spec import quantizes
from pipelines.runtimes.tflite_tail import ended_before

DEVICE = "CPU"
# int8 runs the quantized model; its layers left in float run in f32, or in bf16 with int8+bf16 (what the CPU
# plugin picks by itself on a CPU with native bf16).
PRECISION_TYPES = {"fp32": ov.Type.f32, "bf16": ov.Type.bf16, "int8": ov.Type.f32, "int8+bf16": ov.Type.bf16}
# The element types a file's image input may take, as the pipeline hands them over.
FILE_INPUT_TYPES = {ov.Type.u8: torch.uint8, ov.Type.i8: torch.int8, ov.Type.f16: torch.float16}
READ_BACK = ("INFERENCE_PRECISION_HINT", "PERFORMANCE_HINT", "NUM_STREAMS", "INFERENCE_NUM_THREADS",
             "EXECUTION_DEVICES", "ENABLE_CPU_PINNING")


@dataclass
class OpenVinoProfile:
    """What a profiling() pass leaves: every performance counter of every inference in it, set on exit."""

    counters: list[NodeCounter] = field(default_factory=list)
    input_shapes: list[tuple[int, ...]] = field(default_factory=list)  # of every counted inference, in order
    graph: str = ""  # the ONNX file the compiled model was read from ("" for an IR)


class OpenVinoRuntime(Runtime):
    name = SPEC.name

    def __init__(self, settings: RuntimeSettings = RuntimeSettings(), options: OpenVinoOptions = OpenVinoOptions()):
        precision, input_precision = settings.precision, options.input_precision
        if quantizes(precision) and settings.calibration is None:
            raise RuntimeNotSupported(f"runtime.precision {precision} needs calibration images (runtime.calibration)")
        if precision not in PRECISION_TYPES:
            raise RuntimeNotSupported(f"runtime.backend openvino runs {' or '.join(PRECISION_TYPES)}, "
                                      f"not {precision}")
        if input_precision not in INPUT_PRECISIONS:
            raise RuntimeNotSupported(f"runtime.input_precision is one of {', '.join(INPUT_PRECISIONS)}, not "
                                      f"{input_precision!r}")
        self.core = shared_core()
        self.capabilities = list(self.core.get_property(DEVICE, "OPTIMIZATION_CAPABILITIES"))
        if PRECISION_TYPES[precision] == ov.Type.bf16 and "BF16" not in self.capabilities:
            raise RuntimeNotSupported(f"runtime.precision bf16: OpenVINO's CPU plugin offers "
                                      f"{', '.join(self.capabilities)} on this CPU, not BF16; use "
                                      "runtime.precision fp32")
        self.precision = precision
        self.threads = settings.threads
        self.fuse = settings.fuse
        self.cache_dir = settings.cache_dir
        self.opset = OPSET
        self.calibration = settings.calibration if quantizes(precision) else None
        self._auto_streams = settings.streams == AUTO  # resolved by the throughput hint at compile time
        self.streams, self.streams_auto = (1, None) if self._auto_streams else auto_choice(settings.streams, 1, "")
        self.pinning = settings.pinning
        self.input_precision = input_precision
        self._input: dict[str, Any] = {}  # what the compiled model takes, resolved in prepare()
        self._input_dtype = torch.float32  # the batch it takes: uint8 where it converts the pixels itself
        self._peer_defaults: Optional[dict[str, Any]] = None
        # Per thread (with streams, each worker thread has its own), the requests of each shape's compiled model.
        self._thread_requests = threading.local()
        self._inference_threads = settings.threads
        self._pinned: list[dict] = []
        self._process_cores = os.sched_getaffinity(0)  # what close() gives pinned threads back
        self._export: Optional[ExportResult] = None
        self._model: Optional[ov.Model] = None
        self._compiled: Optional[CompiledByShape] = None
        self._profiled: Optional[list[list[Any]]] = None  # raw counters per inference while profiling
        self._profiled_shapes: list[tuple[int, ...]] = []  # their inputs' shapes
        self._model_source: str = ""  # the file the compiled model was read from
        self._example = None
        self._example_extra: dict[str, np.ndarray] = {}
        self._file_input_dtype = torch.float32
        self._network: Optional[LoadedNetwork] = None
        self._ends_before: Optional[dict[str, Any]] = None  # where a file's graph was ended before an operator
        self._fused = False
        self._preparation: dict[str, Any] = {}
        self._torch_threads: Optional[int] = None  # of each stream's torch ops around the forward
        self._torch_threads_before: Optional[int] = None  # what close() gives back
        self._opencv_threads: Optional[int] = None  # of OpenCV's pool, which the letterbox's resize runs on

    def _compile(self, perf_count: bool) -> CompiledByShape:
        # streams auto: the throughput hint picks them for these threads, as benchmark_app -hint throughput.
        streams = ({hints.performance_mode: hints.PerformanceMode.THROUGHPUT} if self._auto_streams else
                   {hints.performance_mode: hints.PerformanceMode.LATENCY, props.num_streams: self.streams})
        properties = {
            # Explicit: on CPUs with native bf16 the plugin may otherwise pick bf16 by itself.
            hints.inference_precision: PRECISION_TYPES[self.precision],
            **streams,
            props.inference_num_threads: self._inference_threads,
            props.enable_profiling: perf_count,
            hints.enable_cpu_pinning: self.pinning,
        }
        return CompiledByShape(self._model, lambda model: self.core.compile_model(model, DEVICE, properties))

    def _resolve_auto_streams(self) -> None:
        chosen = int(self._compiled.dynamic.get_property("NUM_STREAMS"))
        requests = int(self._compiled.dynamic.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        self.streams, self.streams_auto = auto_choice(
            AUTO, chosen, f"OpenVINO's throughput hint with {self._inference_threads} thread(s) on this CPU: "
                          f"NUM_STREAMS {chosen}, OPTIMAL_NUMBER_OF_INFER_REQUESTS {requests}")
        self.streams_auto["optimal_number_of_infer_requests"] = requests

    def peer_defaults(self) -> Optional[dict[str, Any]]:
        """What OpenVINO picks by itself on this CPU for this model: a compiled model's properties under the
        throughput hint alone (what `benchmark_app -hint throughput` runs), with no precision, streams or threads
        given."""
        if self._peer_defaults is None:
            compiled = self.core.compile_model(self._model, DEVICE, {
                hints.performance_mode: hints.PerformanceMode.THROUGHPUT})
            precision = compiled.get_property("INFERENCE_PRECISION_HINT")
            self._peer_defaults = {
                "source": "OpenVINO CPU plugin, PERFORMANCE_HINT THROUGHPUT alone (benchmark_app -hint throughput)",
                "inference_precision": precision.get_type_name() if isinstance(precision, ov.Type) else str(precision),
                "streams": int(compiled.get_property("NUM_STREAMS")),
                "threads": int(compiled.get_property("INFERENCE_NUM_THREADS")),
                "optimal_number_of_infer_requests": int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")),
            }
        return self._peer_defaults

    def _resolve_input(self, network: LoadedNetwork) -> None:
        """u8 puts the conversion to the network's float input inside the compiled model, so the stream's own
        inference thread does it and the pipeline hands over a quarter of the bytes: what benchmark_app runs, as
        it feeds an image input u8 by default."""
        scale = network.pixel_scale
        if self.input_precision == "u8" and scale is None:
            raise RuntimeNotSupported("runtime.input_precision u8: this network's input is not scaled pixels, so "
                                      "there is nothing for OpenVINO to convert; use runtime.input_precision f32")
        if self.input_precision == AUTO:
            chosen = "f32" if scale is None else "u8"
            why = ("the network's input is not scaled pixels" if scale is None else
                   f"the network's input is the pixels over {scale:g}, which OpenVINO converts inside the compiled "
                   "model, as benchmark_app feeds an image input")
        else:
            chosen, why = self.input_precision, "runtime.input_precision"
        self._input = {"precision": chosen, "why": why}
        self._input_dtype = torch.uint8 if chosen == "u8" else torch.float32
        if chosen == "u8":
            self._input["conversion"] = f"f32, divided by {scale:g}, inside the compiled model"
            self._input["scale"] = scale

    def _with_input_conversion(self, model: ov.Model) -> ov.Model:
        if self._input_dtype != torch.uint8:
            return model
        steps = PrePostProcessor(model)
        steps.input(0).tensor().set_element_type(ov.Type.u8)  # the image; a file's further inputs stay as they are
        steps.input(0).preprocess().convert_element_type(ov.Type.f32).scale(self._input["scale"])
        return steps.build()

    def _as_model_input(self, batch: torch.Tensor):
        if self._input_dtype != torch.uint8:
            return as_input(batch, self._file_input_dtype)
        if batch.dtype != torch.uint8:
            raise TypeError(f"OpenVINO's compiled model takes uint8 pixels (runtime.input_precision u8), "
                            f"got a {batch.dtype} batch: build the pipeline with this PreparedForward's input_dtype")
        return batch.contiguous().numpy()

    def _infer(self, array, extra: Optional[Mapping[str, np.ndarray]] = None) -> torch.Tensor:
        # Synchronous, so sharing the caller's array is safe. The output is the request's own buffer, not a copy
        # (25,200 x 85 floats at 640): valid until this thread's next inference of this shape, by which time the
        # pipeline has long taken what it keeps (NMS copies its candidate rows).
        compiled = self._compiled.for_shape(tuple(array.shape))
        # With streams, requests in flight at once, one per stream's worker thread, on the streams the plugin made.
        local = self._thread_requests
        if getattr(local, "owner", None) is not self._compiled:
            local.owner, local.requests = self._compiled, {}
        request = local.requests.get(id(compiled))
        if request is None:
            request = local.requests[id(compiled)] = compiled.create_infer_request()
        outputs = request.infer({0: array, **(extra or {})}, share_inputs=True, share_outputs=True)
        if self._profiled is not None:
            self._profiled.append(request.get_profiling_info())
            self._profiled_shapes.append(tuple(array.shape))
        if len(outputs) > 1:  # a file with several outputs (a DETR's boxes and logits), in the graph's order
            return tuple(torch.from_numpy(outputs[index]) for index in range(len(outputs)))
        return torch.from_numpy(outputs[0])

    def prepare(self, network: LoadedNetwork, example: torch.Tensor) -> PreparedForward:
        self._inference_threads = self.threads or TORCH_OWN_THREADS
        if not self._auto_streams:
            threads_per_stream(self._inference_threads, self.streams)
        pinned_cores = cores_to_pin(usable_cores(), self._inference_threads) if self.pinning else None
        self._export = export_onnx(network, example, self.cache_dir, self.opset, self.fuse)
        self._fused = self.fuse and network.fuse is not None
        self._network = network
        model_path, quantization = self._tail_cut(network), {}
        if self.calibration is not None:
            model_path, quantization = quantize_network(
                network, self._export.path, self.calibration,
                lambda float_nodes: quantize_for_openvino(self.core, self._export.path, self._export.key,
                                                          self.calibration, float_nodes, self._export.cache_dir),
                lambda quantized: OpenVinoGraph(self.core, quantized, self._export.path, self._inference_threads),
                ir_files)
        if pinned_cores is not None:
            # The plugin resets each thread it runs a request on (the caller too) to this thread's mask as it
            # finds it when compiling: confined to the pinned cores first, so no thread of it leaves them.
            os.sched_setaffinity(0, set(pinned_cores))
        self._resolve_input(network)
        with a_file_it_may_refuse(network, f"openvino (OpenVINO {ov.get_version().split('-')[0]})") as feeding:
            started = time.perf_counter()
            self._model_source = str(model_path)
            read = self.core.read_model(str(model_path))
            # A file's graph may take the uint8 pixels itself (its normalisation inside), or int8 or float16.
            self._file_input_dtype = FILE_INPUT_TYPES.get(read.inputs[0].get_element_type(), torch.float32)
            self._model = self._with_input_conversion(read)
            self._compiled = self._compile(perf_count=False)
            compile_s = time.perf_counter() - started
            if self._auto_streams:
                self._resolve_auto_streams()
            if self._torch_threads_before is None:
                self._torch_threads_before = torch.get_num_threads()
            self._torch_threads = share_torch_threads()
            self._opencv_threads = share_opencv_threads(self._inference_threads, self.streams)
            # The example's values never matter (zeros, traced shapes); only its element type must be the model's.
            declared = [dim.get_length() if dim.is_static else None
                        for dim in self._model.inputs[0].get_partial_shape()]
            example = at_the_graphs_shape(in_the_networks_layout(example, network), declared, network.channels_last)
            self._example = self._as_model_input(example.to(self._input_dtype))
            self._example_extra = _example_extra(self._model.inputs[1:], example.shape[0])
            feeding.fed(example.shape, declared)
            started = time.perf_counter()
            self._infer(self._example, self._example_extra)
        self._preparation = {"export_s": self._export.seconds, "cache_hit": self._export.cache_hit,
                             **quantization, "compile_s": compile_s,
                             "first_inference_ms": (time.perf_counter() - started) * 1e3}
        if self.pinning:
            # The plugin pins its own threads while they run (ENABLE_CPU_PINNING); the torch ops around the
            # forward run on this thread and torch's pool, pinned here.
            self._pinned = pin_torch_pool(pinned_cores)

        def run(batch: torch.Tensor, extra: Optional[Mapping[str, np.ndarray]] = None) -> torch.Tensor:
            # _infer reads self._compiled at each call, so profiling() can swap it. `extra`: a file's further
            # inputs by name (original sizes, scale factors).
            return self._infer(self._as_model_input(batch), extra)

        return PreparedForward(run, None, self._input_dtype)

    def _tail_cut(self, network: LoadedNetwork) -> Any:
        """The file to read: the file itself, or where its graph ends in an operator OpenVINO lacks, a cached copy
        ending at that operator's inputs, whose work the family then does (network.tail)."""
        tail = network.tail
        if tail is None or tail.operator not in SPEC.lacks_operators:
            return self._export.path
        self._ends_before = {"operator": tail.operator, "outputs": list(tail.inputs),
                             "why": f"OpenVINO's TFLite frontend has no translator for {tail.operator}: the graph "
                                    "runs up to its inputs, and detbench does the operator's decode and NMS"}
        return ended_before(self._export.path, tail, self._export.cache_dir)

    @contextmanager
    def profiling(self, output_dir: Union[Path, str, None] = None) -> Iterator[OpenVinoProfile]:
        """Forwards inside run on a model compiled with performance counters on (same properties otherwise);
        on exit the profile holds every counter of every inference and the normal model is back. The
        profiling model runs the example once first, uncounted, so the pass does not pay its first run.
        `output_dir` is unused: the counters are read in memory, no file is written."""
        if self._compiled is None:
            raise RuntimeError("OpenVinoRuntime.profiling() needs prepare() first")
        source = str(self._model_source)
        profile = OpenVinoProfile(graph=source if source.endswith(".onnx") else "")
        normal = self._compiled
        self._compiled = self._compile(perf_count=True)
        raw: list[list[Any]] = []
        try:
            self._infer(self._example, self._example_extra)
            self._profiled, self._profiled_shapes = raw, profile.input_shapes
            yield profile
        finally:
            self._profiled = None
            self._compiled = normal
            # Converted after the pass, so the pass itself only pays for get_profiling_info().
            profile.counters = [
                NodeCounter(inference, info.node_name, info.node_type, info.exec_type,
                            info.real_time.total_seconds() * 1e6, info.cpu_time.total_seconds() * 1e6,
                            info.status.name)
                for inference, infos in enumerate(raw) for info in infos]

    def close(self) -> None:
        restore_torch_threads(self._torch_threads_before)
        restore_affinities([entry["tid"] for entry in self._pinned], self._process_cores)

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"backend": self.name, "precision": self.precision, "fused": self._fused,
                                    "openvino_version": ov.get_version(),
                                    "optimization_capabilities": self.capabilities}
        if self._compiled is None:
            return settings
        read_back = {key: self._compiled.dynamic.get_property(key) for key in READ_BACK}
        precision = read_back["INFERENCE_PRECISION_HINT"]
        settings.update({
            "inference_precision_hint": precision.get_type_name() if isinstance(precision, ov.Type) else str(precision),
            "performance_hint": str(read_back["PERFORMANCE_HINT"]),
            "num_streams": int(read_back["NUM_STREAMS"]),
            "streams": int(read_back["NUM_STREAMS"]),
            "streams_auto": self.streams_auto,
            "openvino_defaults": self.peer_defaults(),
            "pinning": bool(read_back["ENABLE_CPU_PINNING"]),
            "pinned_threads": list(self._pinned),
            "thread_affinity": thread_affinities(),
            "threads": int(read_back["INFERENCE_NUM_THREADS"]),
            "torch_threads_per_stream": self._torch_threads,
            "opencv_threads_per_stream": self._opencv_threads,
            "execution_devices": list(read_back["EXECUTION_DEVICES"]),
            "input_precision": self._input["precision"],
            "input_conversion": {key: value for key, value in self._input.items() if key != "precision"},
            "onnx_file": str(self._export.path),
            "file_precision": stored_precision(self._network) if self._network is not None else None,
            "ends_before": self._ends_before,
            "opset": self.opset,
            "preparation": dict(self._preparation),
            # Input shapes compiled with fixed axes (faster), and inferences of further shapes, run dynamic.
            "static_shapes": self._compiled.shapes(),
            "dynamic_shape_inferences": self._compiled.dynamic_calls,
        })
        return settings


def _example_extra(ports: Any, batch: int) -> dict[str, np.ndarray]:
    """Values of a graph's further inputs for an example run: ones of the declared shape and type, the batch axis
    the example's, any other free axis 1. Their values never matter here."""
    examples = {}
    for port in ports:
        shape = [batch if position == 0 else (dim.get_length() if dim.is_static else 1)
                 for position, dim in enumerate(port.get_partial_shape())]
        examples[port.get_any_name()] = np.ones(shape, dtype=port.get_element_type().to_dtype())
    return examples
