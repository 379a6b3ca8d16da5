"""Where NMS class by class overtakes one call over every class (pipelines/boxes/nms.py PER_CLASS_ABOVE).

    .venv/bin/python benchmarks/overhead/nms_split.py [--rounds 7] [--threads 1]

Candidates are random boxes on a 600-pixel canvas with random scores, as mAP settings' conf_thres 0.001 leaves
them on an untrained network. For each count of candidates and classes the two ways run in alternating order,
round after round, in one process; each figure is the median over rounds. Both ways keep the same boxes in the
same order (checked here on every case, and in tests/pipelines/boxes/test_nms.py).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common.rounds import alternated  # noqa: E402
from pipelines.boxes import nms  # noqa: E402

COUNTS = (500, 1000, 2000, 3000, 4000, 8000, 30000)
CLASSES = (1, 4, 80)


def candidates(count: int, classes: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    corner = torch.rand(count, 2, generator=generator) * 540
    boxes = torch.cat((corner, corner + 4 + torch.rand(count, 2, generator=generator) * 60), dim=1)
    return boxes, torch.rand(count, generator=generator), torch.randint(0, classes, (count,), generator=generator)


def timed_ms(threshold: int, boxes, scores, classes, repeats: int) -> tuple[float, torch.Tensor]:
    nms.PER_CLASS_ABOVE = threshold
    started = time.perf_counter()
    for _ in range(repeats):
        kept = nms._kept(boxes, scores, classes, 0.65, agnostic=False)
    return (time.perf_counter() - started) / repeats * 1e3, kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {args.rounds} rounds; the pipeline's threshold: "
          f"class by class above {nms.PER_CLASS_ABOVE} candidates")
    print(f"{'candidates':>10} {'classes':>7} {'one call ms':>12} {'by class ms':>12} {'ratio':>7}")
    ways = {"one call": 10**9, "by class": 0}
    for count in COUNTS:
        for classes in CLASSES:
            boxes, scores, labels = candidates(count, classes, seed=count + classes)
            repeats = max(1, int(2000 / count))
            times: dict[str, list[float]] = {way: [] for way in ways}
            for number in range(args.rounds):
                kept = {}
                for way in alternated(list(ways), number):
                    milliseconds, kept[way] = timed_ms(ways[way], boxes, scores, labels, repeats)
                    times[way].append(milliseconds)
                if not torch.equal(kept["one call"], kept["by class"]):
                    print(f"the two ways kept different boxes at {count} candidates, {classes} classes")
                    return 1
            one, by_class = (statistics.median(times[way]) for way in ways)
            print(f"{count:>10} {classes:>7} {one:>12.3f} {by_class:>12.3f} {by_class / one:>7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
