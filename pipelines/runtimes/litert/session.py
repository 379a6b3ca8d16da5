"""LiteRT's interpreter (ai_edge_litert.interpreter) running a .tflite file as it is: its own threads, XNNPACK on
(LiteRT's default delegate) or off, one interpreter per stream.

Batches: an input whose axes are free in the file (its shape signature's -1) is resized to each batch's shape
(resize_tensor_input, then the tensors allocated again); a file with a fixed shape takes that shape, which the
family's start checks hold the run to (a TFLite file mostly takes batches of 1). Integer outputs (a fully
quantized file's) are dequantized with their own scale and zero point, so the decode reads real values."""
from __future__ import annotations

import itertools
import threading
import time
from typing import Any, Mapping, Optional, Union

import numpy as np
import torch
from ai_edge_litert import __version__ as LITERT_VERSION
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from pipelines.runtimes.base import (LoadedNetwork, PreparedForward, Runtime, RuntimeNotSupported, RuntimeSettings,
                                     a_file_it_may_refuse, at_the_graphs_shape, in_the_networks_layout,
                                     stored_precision)
from pipelines.runtimes.concurrency import (TORCH_OWN_THREADS, auto_choice, restore_torch_threads,
                                            share_opencv_threads, share_torch_threads, threads_per_stream)
from pipelines.runtimes.litert.spec import SPEC, LiteRtOptions

TFLITE = ".tflite"
DELEGATE_NODE = "DELEGATE"  # the node XNNPACK's delegate puts in place of the operators it takes


class LiteRtRuntime(Runtime):
    name = SPEC.name

    def __init__(self, settings: RuntimeSettings = RuntimeSettings(), options: LiteRtOptions = LiteRtOptions()):
        if settings.precision not in SPEC.precisions:
            reason = SPEC.refusals.get(settings.precision, "")
            raise RuntimeNotSupported(f"runtime.backend litert runs precision fp32 (the file as it is), not "
                                      f"{settings.precision}{': ' + reason if reason else ''}")
        if settings.pinning:
            raise RuntimeNotSupported("runtime.pinning: LiteRT's Python API cannot place its thread pool's threads "
                                      "on cores; remove runtime.pinning for runtime.backend litert")
        self.precision = settings.precision
        self.threads = settings.threads
        self.xnnpack = options.xnnpack
        self.streams, self.streams_auto = auto_choice(
            settings.streams, 1, "LiteRT's own: one interpreter with every thread, as its defaults run")
        self._interpreters: list[Interpreter] = []  # one per stream, each with its own thread pool
        self._shapes: list[tuple[int, ...]] = []  # each interpreter's input shape as allocated
        self._stream_of_thread = threading.local()
        self._next_stream = itertools.count()
        self._path: Optional[str] = None
        self._threads_per_stream: Optional[int] = None
        self._input: dict[str, Any] = {}
        self._outputs: list[dict[str, Any]] = []
        self._free_axes = False  # whether the file's input signature leaves an axis free
        self._resized = 0  # forwards that resized an interpreter's input
        self._preparation: dict[str, Any] = {}
        self._network: Optional[LoadedNetwork] = None
        self._torch_threads: Optional[int] = None
        self._torch_threads_before: Optional[int] = None
        self._opencv_threads: Optional[int] = None

    def _new_interpreter(self) -> Interpreter:
        resolver = OpResolverType.AUTO if self.xnnpack else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        interpreter = Interpreter(model_path=self._path, num_threads=self._threads_per_stream,
                                  experimental_op_resolver_type=resolver)
        interpreter.allocate_tensors()
        return interpreter

    def _stream(self) -> int:
        """Each calling thread (a stream's worker) keeps to one interpreter: an interpreter runs one invoke at a
        time."""
        stream = getattr(self._stream_of_thread, "index", None)
        if stream is None:
            stream = self._stream_of_thread.index = next(self._next_stream) % len(self._interpreters)
        return stream

    def _fit(self, stream: int, shape: tuple[int, ...]) -> Interpreter:
        """The stream's interpreter with its input at `shape`, resized where the file allows it."""
        interpreter = self._interpreters[stream]
        if self._shapes[stream] == shape:
            return interpreter
        try:
            interpreter.resize_tensor_input(self._input["index"], list(shape), strict=self._free_axes)
            interpreter.allocate_tensors()
        except (RuntimeError, ValueError) as error:
            raise RuntimeNotSupported(
                f"model.file {self._path}: LiteRT cannot resize its input {self._input['name']} from "
                f"{list(self._input['shape'])} to {list(shape)} ({' '.join(str(error).split())[:200]}); give "
                "dataset.batch_size and the input size the file takes") from None
        self._shapes[stream] = shape
        self._resized += 1
        return interpreter

    def _infer(self, array: np.ndarray) -> Union[torch.Tensor, tuple[torch.Tensor, ...]]:
        stream = self._stream()
        interpreter = self._fit(stream, tuple(array.shape))
        interpreter.set_tensor(self._input["index"], array)
        interpreter.invoke()
        outputs = tuple(torch.from_numpy(_dequantized(interpreter.get_tensor(output["index"]), output))
                        for output in self._outputs)
        return outputs if len(outputs) > 1 else outputs[0]

    def _as_input(self, batch: torch.Tensor) -> np.ndarray:
        """The batch as the file's input type (the pipeline prepares it so; a float batch for a float file)."""
        array = batch.detach().contiguous().numpy()
        return array if array.dtype == self._input["dtype"] else array.astype(self._input["dtype"])

    def prepare(self, network: LoadedNetwork, example: torch.Tensor) -> PreparedForward:
        if network.file is None or network.file.suffix != TFLITE:
            raise RuntimeNotSupported("runtime.backend litert runs a .tflite file given as model.file; it has no "
                                      "exporter for a network built in torch")
        self._network, self._path = network, str(network.file)
        total = self.threads or TORCH_OWN_THREADS
        self._threads_per_stream = threads_per_stream(total, self.streams)
        if self._torch_threads_before is None:
            self._torch_threads_before = torch.get_num_threads()
        self._torch_threads = share_torch_threads()
        self._opencv_threads = share_opencv_threads(total, self.streams)
        with a_file_it_may_refuse(network, f"litert (LiteRT {LITERT_VERSION})"):
            started = time.perf_counter()
            self._interpreters = [self._new_interpreter() for _ in range(self.streams)]
            interpreter_s = time.perf_counter() - started
            first = self._interpreters[0]
            self._input = first.get_input_details()[0]
            self._outputs = first.get_output_details()
            self._free_axes = bool((self._input["shape_signature"] < 0).any())
            self._shapes = [tuple(int(size) for size in self._input["shape"])] * self.streams
            fixed_batch = None if self._input["shape_signature"][0] < 0 else int(self._input["shape"][0])
            example = at_the_graphs_shape(in_the_networks_layout(example, network), [fixed_batch])
            if not self._free_axes:  # a fixed input: the example is the file's own shape
                example = torch.zeros(tuple(int(size) for size in self._input["shape"]))
            started = time.perf_counter()
            self._infer(self._as_input(example))
            first_ms = (time.perf_counter() - started) * 1e3
        self._preparation = {"interpreter_s": interpreter_s, "first_inference_ms": first_ms}

        def run(batch: torch.Tensor, extra: Optional[Mapping[str, np.ndarray]] = None):
            if extra:
                raise RuntimeNotSupported("runtime.backend litert feeds a file's image input only")
            return self._infer(self._as_input(batch))

        return PreparedForward(run, None)

    def close(self) -> None:
        restore_torch_threads(self._torch_threads_before)

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"backend": self.name, "precision": self.precision,
                                    "litert_version": LITERT_VERSION, "xnnpack": self.xnnpack}
        if not self._interpreters:
            return settings
        nodes = [node["op_name"] for node in self._interpreters[0]._get_ops_details()]
        settings.update({
            "threads": self._threads_per_stream * len(self._interpreters),
            "threads_per_stream": self._threads_per_stream,
            "streams": len(self._interpreters),
            "streams_auto": self.streams_auto,
            "op_resolver": "builtin with its default delegates (XNNPACK)" if self.xnnpack else
                           "builtin without default delegates (no XNNPACK)",
            # Read back: whether XNNPACK took part of the graph (it puts a DELEGATE node in place of what it runs).
            "delegate_nodes": nodes.count(DELEGATE_NODE),
            "operators": len([node for node in nodes if node != DELEGATE_NODE]),
            "file_precision": stored_precision(self._network),
            "input": {"name": self._input["name"], "shape": self._input["shape_signature"].tolist(),
                      "dtype": np.dtype(self._input["dtype"]).name},
            "batches": ("resized to each batch's shape (resize_tensor_input): the file leaves an input axis free"
                        if self._free_axes else "the file's own fixed input shape"),
            "resized_inputs": self._resized,
            "torch_threads_per_stream": self._torch_threads,
            "opencv_threads_per_stream": self._opencv_threads,
            "tflite_file": self._path,
            "preparation": dict(self._preparation),
        })
        return settings


def _dequantized(values: np.ndarray, output: Mapping[str, Any]) -> np.ndarray:
    """An integer output as its real values, (q - zero point) x scale; float outputs as they are."""
    scale, zero_point = output["quantization"]
    if np.issubdtype(values.dtype, np.integer) and scale:
        return (values.astype(np.float32) - zero_point) * np.float32(scale)
    return values
