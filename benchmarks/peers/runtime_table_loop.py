"""One runtime's own minimal loop on one prepared input, in a process of its own: the plain side of
runtime_table.py (which starts it; not run by hand).

    python benchmarks/peers/runtime_table_loop.py RUNTIME FILE INPUT.npy THREADS FORWARDS WARMUP OUTPUT.npy

RUNTIME is onnxruntime (`InferenceSession.run`, its session defaults but the intra-op thread count), openvino
(a compiled model's `infer` on its infer request: LATENCY hint, f32 precision hint, the thread count) or litert
(LiteRT's `Interpreter`, its default op resolver with XNNPACK, `set_tensor`, `invoke`, `get_tensor`). INPUT is an
NCHW float32 batch; a channels-last file gets it transposed once, before the loop. Each forward is timed alone
after WARMUP untimed ones; prints one line `LOOP {json}` (the median and every forward's ms) and saves the first
output, as the runtime gives it, to OUTPUT.npy for the fidelity check. Imports numpy and the runtime only.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Callable

import numpy as np


def onnxruntime_loop(file: str, threads: int, batch: np.ndarray) -> Callable[[], np.ndarray]:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(file, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return lambda: session.run(None, {name: batch})[0]


def openvino_loop(file: str, threads: int, batch: np.ndarray) -> Callable[[], np.ndarray]:
    import openvino as ov
    compiled = ov.Core().compile_model(file, "CPU", {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads,
                                                     "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    return lambda: request.infer({0: batch})[0]


def litert_loop(file: str, threads: int, batch: np.ndarray) -> Callable[[], np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_path=file, num_threads=threads)
    interpreter.allocate_tensors()
    image, output = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    if tuple(image["shape"]) != batch.shape:  # a channels-last file (onnx2tf's): NHWC, prepared once
        batch = np.ascontiguousarray(batch.transpose(0, 2, 3, 1))

    def forward() -> np.ndarray:
        interpreter.set_tensor(image["index"], batch)
        interpreter.invoke()
        return interpreter.get_tensor(output["index"])
    return forward


LOOPS = {"onnxruntime": onnxruntime_loop, "openvino": openvino_loop, "litert": litert_loop}


def main() -> int:
    runtime, file, given, threads, forwards, warmup, output = sys.argv[1:8]
    forward = LOOPS[runtime](file, int(threads), np.load(given))
    np.save(output, np.asarray(forward()))
    for _ in range(int(warmup)):
        forward()
    times = []
    for _ in range(int(forwards)):
        started = time.perf_counter()
        forward()
        times.append((time.perf_counter() - started) * 1e3)
    print("LOOP " + json.dumps({"median_ms": statistics.median(times), "ms": [round(t, 4) for t in times]}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
