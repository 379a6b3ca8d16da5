"""torch on the CPU: fused float32 modules under inference_mode, optionally channels_last, bf16 autocast or
torch.compile."""
from __future__ import annotations

import itertools
import os
import threading
import time
from contextlib import nullcontext
from typing import Any, Optional

import torch

from pipelines.runtimes.base import LoadedNetwork, PreparedForward, Runtime, RuntimeNotSupported, RuntimeSettings
from pipelines.runtimes.concurrency import (auto_choice, cores_to_pin, share_opencv_threads, stream_cores,
                                            threads_per_stream, usable_cores)
from pipelines.runtimes.pinning import pin_openmp_team, restore_affinities, thread_affinities
from pipelines.runtimes.torch.spec import SPEC, TorchOptions


def cpu_runs_bf16() -> bool:
    """oneDNN's own check: without native bf16 (AVX512-BF16 or AMX) autocast would emulate it slowly."""
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def floating_to_float32(value: Any) -> Any:
    """Every floating-point tensor in a tensor, list, tuple or dict as float32; integer tensors (class ids)
    and anything else unchanged."""
    if isinstance(value, torch.Tensor):
        return value.float() if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(floating_to_float32(item) for item in value)
    if isinstance(value, dict):
        return {key: floating_to_float32(item) for key, item in value.items()}
    return value


class TorchEager(Runtime):
    name = SPEC.name

    def __init__(self, settings: RuntimeSettings = RuntimeSettings(), options: TorchOptions = TorchOptions()):
        precision = settings.precision
        if precision not in SPEC.precisions:
            raise RuntimeNotSupported(f"runtime.backend torch runs {' or '.join(SPEC.precisions)}, not {precision}")
        if precision == "bf16" and not cpu_runs_bf16():
            raise RuntimeNotSupported("runtime.precision bf16: this CPU has no native bf16 (AVX512-BF16 or AMX), "
                                      "so torch would emulate it; use runtime.precision fp32")
        self.fuse = settings.fuse
        self.threads = settings.threads
        self.precision = precision
        self.channels_last = options.channels_last
        self.compile = options.compile
        self.compile_mode, self.compile_backend = options.compile_mode, options.compile_backend
        if not self.compile and (self.compile_mode != "default" or self.compile_backend != "inductor"):
            raise RuntimeNotSupported("runtime.compile_mode and runtime.compile_backend apply with runtime.compile "
                                      "true only; set runtime.compile: true, or remove them")
        if self.compile:
            known = torch._dynamo.list_backends(exclude_tags=None)
            if self.compile_backend not in known:
                raise RuntimeNotSupported(f"runtime.compile_backend {self.compile_backend!r} is not a "
                                          f"torch.compile backend here; use one of {', '.join(sorted(known))}")
        self.streams, self.streams_auto = auto_choice(
            settings.streams, 1,
            "torch has no streams of its own: one request at a time, every thread in its intra-op pool")
        self.pinning = settings.pinning
        self._fused = False
        self._preparation: dict[str, Any] = {}
        self._stream_groups: list[list[int]] = []
        self._pinned: list[dict] = []  # every thread pinned, with its stream and core
        self._process_cores = os.sched_getaffinity(0)  # what close() gives pinned threads back
        self._opencv_threads: Optional[int] = None  # of OpenCV's pool, which the letterbox's resize runs on
        self._next_group = itertools.count()
        self._pin_lock = threading.Lock()
        self._thread = threading.local()

    def _pin_this_thread(self) -> None:
        """The calling thread and its OpenMP team onto the next stream's cores (streams in turn)."""
        with self._pin_lock:
            stream = next(self._next_group) % len(self._stream_groups)
            self._pinned += [dict(stream=stream, **entry) for entry in pin_openmp_team(self._stream_groups[stream])]
        self._thread.pinned = True

    def prepare(self, network: LoadedNetwork, example: torch.Tensor) -> PreparedForward:
        # Threads are process-wide in torch: set once here, read back in settings(). Each stream is a worker
        # thread whose ops get an OpenMP team of their own of this many threads.
        total = self.threads or torch.get_num_threads()
        per_stream = threads_per_stream(total, self.streams)
        if self.threads or self.streams > 1:
            torch.set_num_threads(per_stream)
        self._opencv_threads = share_opencv_threads(total, self.streams)
        if self.pinning:
            self._stream_groups = stream_cores(cores_to_pin(usable_cores(), per_stream * self.streams), self.streams)
            self._pin_this_thread()  # the caller runs the single-stream passes and the warm-up
        module = network.module
        if self.fuse and network.fuse is not None:
            network.fuse(module)
            self._fused = True
        module.float().eval()
        memory_format = torch.channels_last if self.channels_last else torch.contiguous_format
        if self.channels_last:
            module.to(memory_format=memory_format)
        autocast = self.precision == "bf16"
        # Symbolic batch and spatial sizes: rect letterbox and a short last batch would otherwise recompile
        # inside the timed passes, once per new shape.
        callable_module = (torch.compile(module, dynamic=True, mode=self.compile_mode, backend=self.compile_backend)
                           if self.compile else module)

        def run(batch: torch.Tensor, *extra: Any) -> Any:
            if self._stream_groups and not getattr(self._thread, "pinned", False):
                self._pin_this_thread()  # a stream's worker thread, at its first forward
            with torch.inference_mode(), (torch.autocast("cpu", dtype=torch.bfloat16) if autocast
                                          else nullcontext()):
                output = callable_module(batch.contiguous(memory_format=memory_format), *extra)
            # NMS and box scaling stay in float32 whatever the network ran in.
            return floating_to_float32(output) if autocast else output

        started = time.perf_counter()
        run(example)
        first_ms = (time.perf_counter() - started) * 1e3
        if self.compile:
            # torch.compile compiles inside the first call: that call is compile time, the next one the first
            # inference of the compiled program.
            started = time.perf_counter()
            run(example)
            self._preparation = {"compile_and_first_inference_ms": first_ms,
                                 "first_inference_ms": (time.perf_counter() - started) * 1e3}
        else:
            self._preparation = {"first_inference_ms": first_ms}
        # Hooks on a compiled module force graph breaks and time another program: no layer timing there.
        return PreparedForward(run, None if self.compile else module)

    def close(self) -> None:
        restore_affinities([entry["tid"] for entry in self._pinned], self._process_cores)

    def settings(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "precision": self.precision,
            "autocast": "bfloat16" if self.precision == "bf16" else None,
            "channels_last": self.channels_last,
            "compile": self.compile,
            **({"compile_mode": self.compile_mode, "compile_backend": self.compile_backend} if self.compile else {}),
            "fused": self._fused,
            "threads": torch.get_num_threads() * self.streams,
            "threads_per_stream": torch.get_num_threads(),
            "opencv_threads_per_stream": self._opencv_threads,
            "interop_threads": torch.get_num_interop_threads(),
            "inference_mode": True,
            "streams": self.streams,
            "streams_auto": self.streams_auto,
            "pinning": self.pinning,
            "process_affinity": usable_cores(),
            "pinned_threads": list(self._pinned),
            "thread_affinity": thread_affinities(),
            "preparation": self._preparation,
        }
