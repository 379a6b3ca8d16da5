"""ONNX Runtime on its CPU execution provider, running the cached ONNX export of the fused float32 network, or
its static int8 (QDQ) quantization (quantizer.py)."""
from __future__ import annotations

import itertools
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import numpy as np
import onnxruntime as ort
import torch

from pipelines.runtimes.base import (LoadedNetwork, PreparedForward, Runtime, RuntimeNotSupported, RuntimeSettings,
                                     a_file_it_may_refuse, at_the_graphs_shape)
from pipelines.runtimes.concurrency import (TORCH_OWN_THREADS, auto_choice, cores_to_pin, ort_intra_op_affinities,
                                            restore_torch_threads, share_opencv_threads, share_torch_threads,
                                            stream_cores, threads_per_stream, usable_cores)
from pipelines.runtimes.pinning import (pin_calling_thread, pin_torch_pool, restore_affinities,
                                        thread_affinities)
from pipelines.runtimes.onnx_export import INPUT_NAME, OPSET, ExportResult, as_input, example_extra, export_onnx
from pipelines.runtimes.onnxruntime.quantizer import quantize_for_onnxruntime
from pipelines.runtimes.onnxruntime.reverting import OnnxRuntimeGraph
from pipelines.runtimes.onnxruntime.spec import SPEC, OnnxRuntimeOptions
from pipelines.runtimes.quantization import quantize_network

PROVIDER = "CPUExecutionProvider"
ALLOW_SPINNING = "session.intra_op.allow_spinning"
AFFINITIES = "session.intra_op_thread_affinities"
GRAPH_OPTIMIZATION = {
    "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "layout": ort.GraphOptimizationLevel.ORT_ENABLE_LAYOUT,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


@dataclass
class OrtProfile:
    """What a profiling() pass leaves: ONNX Runtime's profile JSON (Chrome trace format), set on exit. Its
    first `warmup_runs` runs are the profiling session's warm-up, not the pass. Its event times count from
    `start_ns`, the profiling session's start as ONNX Runtime reports it (std::chrono's clock)."""

    path: Optional[Path] = None
    warmup_runs: int = 1
    start_ns: Optional[int] = None
    input_shapes: list[tuple[int, ...]] = field(default_factory=list)  # of every inference inside, warm-up first
    graph: str = ""  # the ONNX file the session ran


class OnnxRuntime(Runtime):
    name = SPEC.name

    def __init__(self, settings: RuntimeSettings = RuntimeSettings(),
                 options: OnnxRuntimeOptions = OnnxRuntimeOptions()):
        precision = settings.precision
        if precision not in SPEC.precisions:
            raise RuntimeNotSupported("onnxruntime runs fp32 and int8 only on the CPU execution provider; use "
                                      "runtime.backend=openvino or torch for bf16")
        if precision == "int8" and settings.calibration is None:
            raise RuntimeNotSupported("runtime.precision int8 needs calibration images (runtime.calibration)")
        self.precision = precision
        self.calibration = settings.calibration if precision == "int8" else None
        self._model_path: Optional[Path] = None
        if options.graph_optimization not in GRAPH_OPTIMIZATION:
            raise RuntimeNotSupported(f"runtime.graph_optimization {options.graph_optimization!r} is not one of "
                                      f"{', '.join(GRAPH_OPTIMIZATION)}")
        self.threads = settings.threads
        self.fuse = settings.fuse
        self.cache_dir = settings.cache_dir
        self.graph_optimization = options.graph_optimization
        self.spinning = options.spinning
        self.opset = OPSET
        self.streams, self.streams_auto = auto_choice(
            settings.streams, 1, "ONNX Runtime's own split: one session with every thread in its intra-op pool and "
                                 "an inter-op pool of 1 (sequential execution), as its defaults do")
        self.pinning = settings.pinning
        self._stream_cores: list[Optional[list[int]]] = [None] * self.streams
        self._sessions: list[ort.InferenceSession] = []  # one per stream, each with its own intra-op pool
        self._stream_of_thread = threading.local()
        self._next_stream = itertools.count()
        self._pinned_callers: list[dict] = []
        self._process_cores = os.sched_getaffinity(0)  # what close() gives pinned threads back
        self._intra_threads = settings.threads
        self._input_name = INPUT_NAME
        self._profiled_shapes: Optional[list[tuple[int, ...]]] = None  # inputs' shapes while profiling
        self._export: Optional[ExportResult] = None
        self._session: Optional[ort.InferenceSession] = None
        self._example: Optional[np.ndarray] = None
        self._example_extra: dict[str, np.ndarray] = {}
        self._fused = False
        self._preparation: dict[str, Any] = {}
        self._torch_threads: Optional[int] = None  # of each stream's torch ops around the forward
        self._torch_threads_before: Optional[int] = None  # what close() gives back
        self._opencv_threads: Optional[int] = None  # of OpenCV's pool, which the letterbox's resize runs on

    def _options(self, profile_prefix: Optional[Path] = None, stream: int = 0) -> ort.SessionOptions:
        options = ort.SessionOptions()
        options.intra_op_num_threads = self._intra_threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = GRAPH_OPTIMIZATION[self.graph_optimization]
        # Spinning is ONNX Runtime's default, left unset unless turned off: spinning workers can slow the torch
        # ops that run after each forward (NMS, the next letterbox; onnxruntime issue 13808), blocking ones wake
        # late. Sequential execution has no inter-op pool to spin.
        if not self.spinning:
            options.add_session_config_entry(ALLOW_SPINNING, "0")
        cores = self._stream_cores[stream]
        if cores is not None and len(cores) > 1:
            options.add_session_config_entry(AFFINITIES, ort_intra_op_affinities(cores))
        if profile_prefix is not None:
            options.enable_profiling = True
            options.profile_file_prefix = str(profile_prefix)
        return options

    def _new_session(self, options: ort.SessionOptions) -> ort.InferenceSession:
        return ort.InferenceSession(str(self._model_path), options, providers=[PROVIDER])

    def _stream_of_calling_thread(self) -> int:
        """Each calling thread (a stream's worker) keeps to one session, so streams never share a pool. With
        pinning, the caller runs the first share of its session's intra-op work: it goes on the stream's first
        core, the pool's threads on the others (session.intra_op_thread_affinities)."""
        stream = getattr(self._stream_of_thread, "index", None)
        if stream is None:
            stream = self._stream_of_thread.index = next(self._next_stream) % len(self._sessions)
            cores = self._stream_cores[stream]
            if cores:
                self._pinned_callers.append(dict(stream=stream, **pin_calling_thread(cores[0])))
        return stream

    def _infer(self, array: np.ndarray, extra: Optional[Mapping[str, np.ndarray]] = None,
               ) -> Union[np.ndarray, list[np.ndarray]]:
        """The output; every output, in the graph's order, for a file with several (a DETR's boxes and logits).
        `extra`: the graph's further inputs by name (a file's original sizes or scale factors)."""
        stream = self._stream_of_calling_thread()
        session = self._sessions[stream] if len(self._sessions) > 1 else self._session
        outputs = session.run(None, {self._input_name: array, **(extra or {})})
        if self._profiled_shapes is not None:
            self._profiled_shapes.append(tuple(array.shape))
        return outputs[0] if len(outputs) == 1 else outputs

    def prepare(self, network: LoadedNetwork, example: torch.Tensor) -> PreparedForward:
        total = self.threads or TORCH_OWN_THREADS
        self._intra_threads = threads_per_stream(total, self.streams)
        if self._torch_threads_before is None:
            self._torch_threads_before = torch.get_num_threads()
        self._torch_threads = share_torch_threads()
        self._opencv_threads = share_opencv_threads(total, self.streams)
        if self.pinning:
            self._stream_cores = stream_cores(cores_to_pin(usable_cores(), total), self.streams)
        self._export = export_onnx(network, example, self.cache_dir, self.opset, self.fuse)
        self._fused = self.fuse and network.fuse is not None
        self._model_path, quantization = self._export.path, {}
        if self.calibration is not None:
            self._model_path, quantization = quantize_network(
                network, self._export.path, self.calibration,
                lambda float_nodes: quantize_for_onnxruntime(self._export.path, self._export.key, self.calibration,
                                                             float_nodes, _input_name(self._export.path),
                                                             self._export.cache_dir),
                lambda quantized: OnnxRuntimeGraph(quantized, self._export.path, self._intra_threads))
        started = time.perf_counter()
        with a_file_it_may_refuse(network, f"onnxruntime (ONNX Runtime {ort.__version__})") as feeding:
            self._sessions = [self._new_session(self._options(stream=stream)) for stream in range(self.streams)]
            self._session = self._sessions[0]
            self._input_name = self._session.get_inputs()[0].name
            session_s = time.perf_counter() - started
            declared = self._session.get_inputs()[0].shape
            example = at_the_graphs_shape(example, declared)
            self._example = as_input(example, self._input_type())
            self._example_extra = example_extra(self._session.get_inputs()[1:], example.shape[0])
            feeding.fed(example.shape, declared)
            started = time.perf_counter()
            self._infer(self._example, self._example_extra)
        self._preparation = {"export_s": self._export.seconds, "cache_hit": self._export.cache_hit,
                             **quantization, "session_s": session_s,
                             "first_inference_ms": (time.perf_counter() - started) * 1e3}
        if self.pinning:
            # The torch ops around the forward (letterbox, NMS) run on this thread and torch's pool.
            self._pinned_callers += [dict(stream=0, **entry) for entry in pin_torch_pool(self._stream_cores[0])]

        def run(batch: torch.Tensor, extra: Optional[Mapping[str, np.ndarray]] = None,
                ) -> Union[torch.Tensor, tuple[torch.Tensor, ...]]:
            # _infer reads self._session at each call, so profiling() can swap it.
            outputs = self._infer(as_input(batch, batch.dtype), extra)
            if isinstance(outputs, list):
                return tuple(torch.from_numpy(output) for output in outputs)
            return torch.from_numpy(outputs)

        return PreparedForward(run, None)

    @contextmanager
    def profiling(self, output_dir: Union[Path, str, None] = None) -> Iterator[OrtProfile]:
        """Forwards inside run on a session with ONNX Runtime's profiler on (same options otherwise); on exit
        the profile is written to `output_dir` (a new temporary folder by default) and the normal session is
        back. The profiling session runs the example once first, so the pass does not pay its first run."""
        if self._session is None:
            raise RuntimeError("OnnxRuntime.profiling() needs prepare() first")
        directory = Path(output_dir) if output_dir is not None else Path(tempfile.mkdtemp(prefix="detbench-ort-"))
        directory.mkdir(parents=True, exist_ok=True)
        profile = OrtProfile(graph=str(self._model_path))
        normal = self._session
        self._session = self._new_session(self._options(directory / "onnxruntime_profile"))
        profile.start_ns = self._session.get_profiling_start_time_ns()
        self._profiled_shapes = profile.input_shapes
        try:
            self._infer(self._example, self._example_extra)
            yield profile
        finally:
            self._profiled_shapes = None
            profile.path = Path(self._session.end_profiling())
            self._session = normal

    def _input_type(self) -> torch.dtype:
        """The image input's element type as the graph declares it (a file may take uint8 pixels)."""
        return torch.uint8 if self._session.get_inputs()[0].type == "tensor(uint8)" else torch.float32

    def close(self) -> None:
        restore_torch_threads(self._torch_threads_before)
        restore_affinities([entry["tid"] for entry in self._pinned_callers], self._process_cores)

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"backend": self.name, "precision": self.precision, "fused": self._fused,
                                    "onnxruntime_version": ort.__version__}
        if self._session is None:
            return settings
        options = self._session.get_session_options()
        settings.update({
            "threads": options.intra_op_num_threads * len(self._sessions),
            "inter_op_threads": options.inter_op_num_threads,
            "execution_mode": options.execution_mode.name,
            "graph_optimization_level": options.graph_optimization_level.name,
            "allow_spinning": self.spinning,
            "streams": len(self._sessions),
            "streams_auto": self.streams_auto,
            "threads_per_stream": options.intra_op_num_threads,
            "torch_threads_per_stream": self._torch_threads,
            "opencv_threads_per_stream": self._opencv_threads,
            "pinning": self.pinning,
            "intra_op_thread_affinities": [_config_entry(session, AFFINITIES) for session in self._sessions],
            "pinned_callers": list(self._pinned_callers),
            "thread_affinity": thread_affinities(),
            "providers": self._session.get_providers(),
            "onnx_file": str(self._model_path),
            "opset": self.opset,
            "preparation": dict(self._preparation),
        })
        return settings


def _config_entry(session: ort.InferenceSession, key: str) -> Optional[str]:
    """A session's config entry as it holds it; None where the session has none of that key."""
    try:
        return session.get_session_options().get_session_config_entry(key) or None
    except Exception:  # ONNX Runtime raises when the key was never set
        return None


def _input_name(model_path: Path) -> str:
    """The graph's image input: "images" in detbench's own exports, whatever the exporter named it in a file."""
    import onnx

    graph = onnx.load(str(model_path), load_external_data=False).graph
    constants = {tensor.name for tensor in graph.initializer}
    return next(value.name for value in graph.input if value.name not in constants)
