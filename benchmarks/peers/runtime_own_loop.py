"""detbench's forward against the runtime's own loop on the same file, input and threads: a plain
`InferenceSession.run` loop (ONNX Runtime, its session defaults but the thread count) and a plain compiled model's
`infer` loop (OpenVINO, latency hint, the same precision hint), beside the prepared forward a detbench run times
as its forward step, interleaved.

    .venv/bin/python benchmarks/peers/runtime_own_loop.py [--file ../shared/data/ultra/yolo11n-shapes.onnx] [--rounds 5]
        [--forwards 100] [--threads 2] [--sides ort ort-raw ort-nospin ov ov-raw ov-bf16 ov-bf16-raw]

One process, one preprocessed image of the shapes scenes (detbench's own letterbox at the file's 320), every
side built and warmed up once. Each round runs every side for a block of --forwards forwards, in an order rotated
from round to round; a side's figure in a round is the median forward of its block, and a ratio is taken within a
round (detbench's side over the raw loop of the same runtime), so the machine's drift between rounds cancels.
Prints each side's median over rounds and each ratio's median with its range over the rounds (the machine may be
shared: a round where other processes ran reads slower on every side). Figures: benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.common.machine import flags_starting  # noqa: E402
from benchmarks.common.rounds import rotated  # noqa: E402
from datasets.image_folder import decode_image, find_images  # noqa: E402
from pipelines.registry import family_for  # noqa: E402
from pipelines.runtimes.base import PreparedForward  # noqa: E402
from pipelines.runtimes.registry import build_runtime  # noqa: E402
from utils.config.schema import config_for  # noqa: E402

WARMUP = 10


def detbench_side(file: Path, backend: str, precision: str, threads: int, image: Path,
                  **options) -> tuple[Callable[[], object], np.ndarray]:
    """detbench's prepared forward on the batch its pipeline makes of the image; and that batch as floats."""
    config = config_for("yolov7", model={"file": str(file)}, preprocess={"img_size": None},
                        runtime={"backend": backend, "precision": precision, "threads": threads, **options})
    family = family_for(config.model.network)
    network = family.load_network(config.model.network, None, 0)
    runtime = build_runtime(backend, precision=precision, threads=threads, **options)
    forward: PreparedForward = runtime.prepare(network, family.example_input(config.preprocess))
    pipeline = family.build_pipeline(network, forward, config.preprocess, config.postprocess)
    batch = pipeline.preprocess([decode_image(image).image]).tensor
    floats = (batch.float() / 255.0 if batch.dtype == torch.uint8 else batch).numpy()
    return (lambda: forward(batch)), np.ascontiguousarray(floats)


def onnxruntime_raw(file: Path, threads: int, array: np.ndarray) -> Callable[[], object]:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(file), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return lambda: session.run(None, {name: array})


def openvino_raw(file: Path, threads: int, array: np.ndarray, precision: str) -> Callable[[], object]:
    import openvino as ov
    compiled = ov.Core().compile_model(str(file), "CPU", {
        "PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads,
        "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32"})
    request = compiled.create_infer_request()
    return lambda: request.infer({0: array})


def block_ms(call: Callable[[], object], forwards: int) -> float:
    times = []
    for _ in range(forwards):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=ROOT.parent / "shared" / "data" / "ultra" / "yolo11n-shapes.onnx")
    parser.add_argument("--images", type=Path, default=ROOT.parent / "shared" / "data" / "shapes" / "images")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--forwards", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sides", nargs="*", default=["ort", "ort-raw", "ort-nospin", "ov", "ov-raw", "ov-bf16",
                                                       "ov-bf16-raw"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    image = find_images(args.images)[0]
    builders = {
        "ort": lambda: detbench_side(args.file, "onnxruntime", "fp32", args.threads, image)[0],
        "ort-nospin": lambda: detbench_side(args.file, "onnxruntime", "fp32", args.threads, image, spinning=False)[0],
        "ov": lambda: detbench_side(args.file, "openvino", "fp32", args.threads, image)[0],
        "ov-bf16": lambda: detbench_side(args.file, "openvino", "bf16", args.threads, image)[0],
    }
    _, array = detbench_side(args.file, "onnxruntime", "fp32", args.threads, image)
    builders.update({
        "ort-raw": lambda: onnxruntime_raw(args.file, args.threads, array),
        "ov-raw": lambda: openvino_raw(args.file, args.threads, array, "fp32"),
        "ov-bf16-raw": lambda: openvino_raw(args.file, args.threads, array, "bf16"),
    })
    calls = {side: builders[side]() for side in args.sides}
    for call in calls.values():
        for _ in range(WARMUP):
            call()
    flags = flags_starting(("avx512_bf16", "amx", "avx512_vnni", "avx_vnni"))
    print(f"{args.file.name}, {array.shape}, {args.threads} threads, CPU flags {' '.join(flags)}; {args.rounds} "
          f"rounds of {args.forwards} forwards per side")
    figures: dict[str, list[float]] = {side: [] for side in calls}
    sides = list(calls)
    for number in range(args.rounds):
        for side in rotated(sides, number):
            figures[side].append(block_ms(calls[side], args.forwards))
        print(f"round {number + 1}: " + ", ".join(f"{side} {figures[side][-1]:.2f}" for side in sides), flush=True)
    print("median forward over rounds (ms): " + ", ".join(
        f"{side} {statistics.median(values):.2f}" for side, values in figures.items()))
    for ours, raw in (("ort", "ort-raw"), ("ort-nospin", "ort-raw"), ("ov", "ov-raw"), ("ov-bf16", "ov-bf16-raw")):
        if ours in figures and raw in figures:
            ratios = [a / b for a, b in zip(figures[ours], figures[raw])]
            print(f"{ours} / {raw}: x{statistics.median(ratios):.3f} (rounds {min(ratios):.3f}-{max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
