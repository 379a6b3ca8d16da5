"""detbench's detections of a file beside an author's or a package's own: one detections-only run of the file,
its rows read back by image name, and the agreement of the two (recall and precision at IoU 0.5, same class), as
the peer comparisons under benchmarks/peers/ all score them."""
from __future__ import annotations

import csv
import subprocess
from pathlib import Path
from typing import Iterable

from benchmarks.common.detbench_runs import ROOT, benchmark_command

# A run that only detects: one pass, nothing timed per layer, no checks, no files but detections.csv.
DETECTIONS_ONLY = ("benchmark.repeats=1", "benchmark.layer_timing=false", "benchmark.profiler=false",
                   "benchmark.accuracy.enabled=false", "benchmark.agreement.enabled=false",
                   "outputs.save_images=false", "outputs.plots=false", "outputs.report=false")


def detections_by_image(table: Path) -> dict[str, list]:
    """detections.csv as {image: [[class_id, score, x1, y1, x2, y2], ...]}."""
    found: dict[str, list] = {}
    with table.open(newline="") as handle:
        for row in csv.DictReader(handle):
            found.setdefault(row["image"], []).append(
                [int(row["class_id"]), float(row["score"]), *(float(row[k]) for k in ("x1", "y1", "x2", "y2"))])
    return found


def detbench_detections(config: Path, sets: Iterable[str], run_dir: Path,
                        timeout: int) -> tuple[dict[str, list], str]:
    """detbench's command line on `config` with DETECTIONS_ONLY and `sets` (which name run.output_dir and run.id
    so that the run lands in `run_dir`): its detections by image name and its exit, or {} and its last words."""
    command = benchmark_command(config, [*DETECTIONS_ONLY, *sets])
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {}, f"timed out after {timeout} s"
    table = run_dir / "detections.csv"
    if done.returncode != 0 or not table.exists():
        words = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return {}, f"exit {done.returncode}: {' '.join(words[-2:])[:400]}"
    return detections_by_image(table), f"exit {done.returncode}"


def in_detbench_ids(expected: dict[str, list], coco_ids: bool) -> tuple[dict[str, list], int]:
    """The author's rows with detbench's class ids (COCO's 90 ids to the 80 classes where `coco_ids`), and how
    many were left out (an id no class has)."""
    if not coco_ids:
        return expected, 0
    from pipelines.exported.layouts.contract import COCO_IDS

    mapped = {path: [[COCO_IDS.index(r[0]), *r[1:]] for r in rows if r[0] in COCO_IDS]
              for path, rows in expected.items()}
    return mapped, sum(len(r) for r in expected.values()) - sum(len(r) for r in mapped.values())


def agreement(expected: dict[str, list], found: dict[str, list]):
    """MatchCounts of detbench's rows (keyed by file name) against the author's (keyed by a path or a name)."""
    import torch

    from pipelines.contract import Detections
    from utils.checks.agreement.matching import MatchCounts, match_detections

    def detections(rows: list) -> Detections:
        table = torch.tensor(rows, dtype=torch.float32).reshape(-1, 6)
        return Detections(table[:, 2:6], table[:, 1], table[:, 0].long())

    counts = MatchCounts()
    for path, rows in expected.items():
        counts = counts + match_detections(detections(rows), detections(found.get(Path(path).name, [])))
    return counts
