"""Does peak memory grow with the number of images? Peak RSS for N and 4N copies of one image, each run in its
own process through the real pipeline (benchmark.py).

    .venv/bin/python benchmarks/overhead/memory_scaling.py --images 24 [--config configs/samples_tiny.yaml]
        [--set key=value ...]

Every copy has the same size (640x480), so batches are identical and a ratio near 1 means memory does not
accumulate per image; a ratio well above 1 points at something kept per image (detections, annotated images,
per-call timings). Reads memory.peak_rss_mib (process + children) and memory.peak_self_rss_mib (the process
alone: a forked DataLoader worker's RSS counts pages it shares with it) from each run's summary.json and prints
both runs and their ratio.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

PROJECT_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.common.detbench_runs import as_sets  # noqa: E402
from utils.core.errors import command_status  # noqa: E402
from utils.storage import layout  # noqa: E402


def synthetic_image(width: int = 640, height: int = 480, seed: int = 0) -> np.ndarray:
    """A textured BGR image (gradients, shapes, noise): a flat image would compress and decode unlike a photo."""
    rng = np.random.default_rng(seed)
    x, y = np.meshgrid(np.linspace(0, 255, width), np.linspace(0, 255, height))
    image = np.stack([x, y, 255 - x], axis=-1).astype(np.uint8)
    for _ in range(12):
        centre = (int(rng.integers(0, width)), int(rng.integers(0, height)))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        cv2.circle(image, centre, int(rng.integers(15, 90)), colour, thickness=-1)
    noise = rng.normal(0, 8, image.shape)
    return np.clip(image + noise, 0, 255).astype(np.uint8)


def write_copies(folder: Path, image: np.ndarray, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        cv2.imwrite(str(folder / f"image_{index:04d}.jpg"), image)


def memory_summary(config: str, dataset: Path, run_id: str, output_dir: str, overrides: list[str]) -> dict:
    command = [sys.executable, "benchmark.py", "--config", config,
               *as_sets([f"dataset.path={dataset}", f"run.id={run_id}", f"run.output_dir={output_dir}", *overrides])]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, cwd=PROJECT_ROOT, check=True)
    return json.loads((PROJECT_ROOT / output_dir / run_id / layout.SUMMARY).read_text())["memory"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=24, help="N: the small run has N images, the large one 4N")
    parser.add_argument("--config", default="configs/samples_tiny.yaml")
    parser.add_argument("--output-dir", default="outputs", help="where the two runs' directories go")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="extra config overrides passed to both runs")
    args = parser.parse_args()

    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    image = synthetic_image()
    memory = {}
    with tempfile.TemporaryDirectory(prefix="memory_scaling_") as scratch:
        for count in (args.images, 4 * args.images):
            dataset = Path(scratch) / f"images_{count}"
            write_copies(dataset, image, count)
            run_id = f"memory_scaling_{stamp}_{count}"
            memory[count] = memory_summary(args.config, dataset, run_id, args.output_dir, args.overrides)

    for key, what in (("peak_rss_mib", "process + children"), ("peak_self_rss_mib", "process alone")):
        small, large = memory[args.images].get(key), memory[4 * args.images].get(key)
        if small is None or large is None:
            continue
        print(f"peak RSS, {what}: {small:8.1f} MiB with {args.images} images, {large:8.1f} MiB with "
              f"{4 * args.images}; ratio 4N/N {large / small:.3f} (1.0 = no growth with the image count)")


if __name__ == "__main__":
    sys.exit(command_status(main))
