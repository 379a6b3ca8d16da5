"""detbench on the trained YOLOv8n that NudeNet ships (`nudenet/320n.onnx`, exported by Ultralytics 8.2, its
metadata Ultralytics'), against NudeNet's own inference (NudeDetector.detect) in NudeNet's own environment.

    .venv/bin/python benchmarks/peers/packages/nudenet_yolov8.py [--venv DIR] [--skip-install] [--work DIR]
        [--runtimes onnxruntime openvino]

NudeNet feeds its file otherwise than Ultralytics' predict (BGR, padded with 0 to a square before the resize,
NMS over every class at IoU 0.45): detbench runs it on each runtime, each at NudeNet's cut (0.25) and at 0.05:
nothing said but model.file (the exporter's recipe), then with the flags `benchmark.py match` finds from
NudeNet's own detections at 0.05 (at 0.25 they are too few to tell recipes apart), the cut replaced by each.
The venv (benchmarks/peers/venvs.py, no torch: NudeNet runs ONNX Runtime only) defaults to
~/.cache/detbench-peers/nudenet. Images: the six sample photos, each also mirrored and as its centre 70% crop
(18). Prints a table; a comparison, never a test."""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from package_runs import LOW_CUT, ROOT, arguments, compare, run_driver  # noqa: E402

from benchmarks.peers import venvs  # noqa: E402

SPEC = venvs.VenvSpec("nudenet", (("nudenet==3.4.2",),), torch=False)
OWN_CUT = 0.25  # NudeDetector.detect's NMS score cut


def photos(folder: Path) -> list[Path]:
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for photo in sorted((ROOT / "datasets" / "samples").glob("*.jpg")):
        image = cv2.imread(str(photo))
        height, width = image.shape[:2]
        crop = image[int(height * 0.15):int(height * 0.85), int(width * 0.15):int(width * 0.85)]
        for suffix, picture in (("", image), ("-mirrored", image[:, ::-1]), ("-crop", crop)):
            paths.append(folder / f"{photo.stem}{suffix}.png")
            cv2.imwrite(str(paths[-1]), picture)
    return paths


def main() -> int:
    args = arguments(__doc__.splitlines()[0], SPEC).parse_args()
    python = venvs.ensure_venv(args.venv.expanduser(), SPEC, args.skip_install)
    with tempfile.TemporaryDirectory(prefix="detbench-nudenet-") as scratch:
        work = args.work or Path(scratch)
        shutil.rmtree(work / "runs", ignore_errors=True)  # this script's own runs, never overwritten otherwise
        images = photos(work / "images")
        theirs = run_driver(python, "nudenet_driver.py", {"images": [str(p) for p in images], "cuts": [LOW_CUT]})
        print(f"nudenet {theirs['version']}, {Path(theirs['file']).name}; {len(images)} images; the driver's "
              f"steps equal detect() at its cut: {theirs['steps_equal_detect']}")
        compare(Path(theirs["file"]), work, theirs, OWN_CUT, args.runtimes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
