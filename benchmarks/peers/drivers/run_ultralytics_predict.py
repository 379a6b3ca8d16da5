"""Ultralytics' own predict loop over the scenes, timed as Ultralytics times it (its speed dict) and by the wall clock.

Standalone: run by the Python of Ultralytics' own venv (benchmarks/peers/venvs.py), never by detbench's, and
imports nothing of detbench: `<venv>/bin/python run_ultralytics_predict.py ARGS_JSON`, as
benchmarks/peers/ultralytics_predict.py runs it. ARGS_JSON: {"file", "images", "imgsz", "conf", "iou", "threads",
"warmup"}. Prints one `PEER <json>` line: the images, the median of each speed-dict entry (preprocess, inference,
postprocess, ms), the median of their sum ("whole") and the wall time per image of the whole loop.
"""
import json
import statistics
import sys
import time

import torch


def main(arguments: dict) -> None:
    torch.set_num_threads(arguments["threads"])  # before Ultralytics is imported, as a user's script would
    from ultralytics import YOLO

    model = YOLO(arguments["file"], task="detect")
    options = dict(imgsz=arguments["imgsz"], device="cpu", batch=1, conf=arguments["conf"], iou=arguments["iou"],
                   verbose=False, stream=True)
    for _ in model.predict(arguments["images"][:arguments["warmup"]], **options):
        pass
    speeds = []
    started = time.perf_counter()
    for result in model.predict(arguments["images"], **options):
        speeds.append(result.speed)
    wall_ms = (time.perf_counter() - started) * 1e3 / len(speeds)

    def median(key: str) -> float:
        return statistics.median(speed[key] for speed in speeds)

    print("PEER " + json.dumps({"images": len(speeds), "preprocess": median("preprocess"),
                                "inference": median("inference"), "postprocess": median("postprocess"),
                                "whole": statistics.median(sum(speed.values()) for speed in speeds),
                                "wall_ms_per_image": wall_ms}), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
