"""Ultralytics' own `benchmark()`, one call per row, what each row's exported file really ran, and raw OpenVINO on
the files as Ultralytics compiles them.

Standalone: run by the Python of Ultralytics' own venv (benchmarks/peers/venvs.py), never by detbench's, and
imports nothing of detbench: `<venv>/bin/python run_ultralytics_benchmark.py ARGS_JSON`, as
benchmarks/peers/ultralytics_benchmark.py runs it. ARGS_JSON: {"model", "data", "imgsz", "folder", "rows",
"what_ran", "raw"}. Prints, first, one `PEER_ENV <json>` line (versions, the CPU plugin's default precision), then
one `PEER_ROW <json>` line per row and one `PEER_RAW <json>` line.
"""
import collections
import json
import logging
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import openvino as ov
import torch
import ultralytics
from ultralytics.utils.benchmarks import benchmark

core = ov.Core()


def named(value) -> str:
    """An ov.Type prints as <Type: 'bfloat16'>; its name is bf16."""
    return value.get_type_name() if hasattr(value, "get_type_name") else str(value)


class SpeedLine(logging.Handler):
    """Keeps the preprocess, inference and postprocess times of each `val` Ultralytics' benchmark runs."""

    def __init__(self):
        super().__init__()
        self.speeds: list[dict] = []

    def emit(self, record):
        text = record.getMessage()
        if text.startswith("Speed:") and "loss" in text:  # val's line, not predict's
            self.speeds.append({key: float(value) for value, key in re.findall(r"([\d.]+)ms (\w+)", text)})


def compiled_as_the_peer(model):
    return core.compile_model(model, "CPU", {"PERFORMANCE_HINT": "LATENCY"})


def what_ran(path: Path) -> dict:
    if path.is_dir():  # an IR
        compiled = compiled_as_the_peer(str(next(path.glob("*.xml"))))
        convolutions, others = collections.Counter(), collections.Counter()
        for op in compiled.get_runtime_model().get_ops():
            info = op.get_rt_info()
            kind = info["layerType"].astype(str) if "layerType" in info else ""
            precision = info["runtimePrecision"].astype(str) if "runtimePrecision" in info else ""
            if kind == "Convolution":
                convolutions[precision] += 1
            elif kind not in ("Input", "Output", "Parameter", "Result", "Const", "Reorder", ""):
                others[precision] += 1
        return {"runtime": "openvino", "inference_precision": named(compiled.get_property("INFERENCE_PRECISION_HINT")),
                "threads": int(compiled.get_property("INFERENCE_NUM_THREADS")),
                "streams": int(compiled.get_property("NUM_STREAMS")),
                "convolutions": dict(convolutions), "other_layers": dict(others)}
    with tempfile.TemporaryDirectory() as folder:
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.optimized_model_filepath = str(Path(folder) / "optimized.onnx")
        onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        ops = collections.Counter(node.op_type for node in onnx.load(options.optimized_model_filepath).graph.node)
    return {"runtime": "onnxruntime", "provider": "CPUExecutionProvider",
            "int8_convolutions": ops.get("QLinearConv", 0) + ops.get("ConvInteger", 0),
            "float_convolutions": sum(n for op, n in ops.items()
                                      if op in ("Conv", "FusedConv") or op.endswith("NchwcConv")),
            "quantize_nodes": ops.get("QuantizeLinear", 0), "dequantize_nodes": ops.get("DequantizeLinear", 0)}


def number(text):
    return None if text in (None, "-", "") else float(text)


def benchmark_rows(args: dict, speed_line: SpeedLine) -> None:
    for row in args["rows"]:
        speed_line.speeds.clear()
        started = time.monotonic()
        table = benchmark(model=args["model"], data=args["data"], imgsz=args["imgsz"], device="cpu",
                          format=row["format"], quantize=row["quantize"], split="train")
        cells = list(table.rows()[0])
        speeds = speed_line.speeds
        out = {"name": row["name"], "status": cells[2], "size_mb": number(cells[3]), "map_50_95": number(cells[4]),
               "inference_ms": number(cells[5]), "speed": speeds[-1] if speeds else None,
               "seconds": time.monotonic() - started, "load": os.getloadavg()[0]}
        file = Path(args["folder"]) / row["file"]
        if args["what_ran"] and file.exists():
            try:
                out["ran"] = what_ran(file)
            except Exception as error:  # the row stands without it
                out["ran"] = {"error": f"{type(error).__name__}: {error}"}
        print("PEER_ROW " + json.dumps(out), flush=True)


def raw_openvino(args: dict) -> dict:
    """300 synchronous inferences on random input of each file, compiled as the peer compiles it."""
    raw = {}
    for name, model in args["raw"].items():
        if not Path(model).exists():
            continue
        compiled = compiled_as_the_peer(str(next(Path(model).glob("*.xml"))) if Path(model).is_dir() else model)
        request = compiled.create_infer_request()
        shape = [1, 3, args["imgsz"], args["imgsz"]]
        data = np.random.default_rng(0).random(shape, dtype=np.float32)
        for _ in range(30):
            request.infer({0: data})
        times = []
        for _ in range(300):
            start = time.perf_counter()
            request.infer({0: data})
            times.append((time.perf_counter() - start) * 1000)
        raw[name] = {"p50_ms": float(np.median(times)),
                     "inference_precision": named(compiled.get_property("INFERENCE_PRECISION_HINT"))}
    return raw


def main(args: dict) -> None:
    print("PEER_ENV " + json.dumps({
        "ultralytics": ultralytics.__version__, "openvino": ov.__version__, "onnxruntime": onnxruntime.__version__,
        "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
        "cpu_inference_precision": named(core.get_property("CPU", "INFERENCE_PRECISION_HINT")),
        "cpu_capabilities": list(core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"))}), flush=True)
    speed_line = SpeedLine()
    logging.getLogger("ultralytics").addHandler(speed_line)
    benchmark_rows(args, speed_line)
    print("PEER_RAW " + json.dumps(raw_openvino(args)), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
