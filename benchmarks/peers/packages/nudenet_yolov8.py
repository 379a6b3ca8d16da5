"""detbench on the trained YOLOv8n that NudeNet ships (`nudenet/320n.onnx`, exported by Ultralytics 8.2, its
metadata Ultralytics'), against NudeNet's own inference (NudeDetector.detect) in NudeNet's own environment.

    .venv/bin/python benchmarks/peers/packages/nudenet_yolov8.py [--venv DIR] [--work DIR]

NudeNet feeds its file otherwise than Ultralytics' predict (BGR, padded with 0 to a square before the resize,
NMS over every class at IoU 0.45): detbench runs it three ways, each at NudeNet's cut (0.25) and at 0.05:
nothing said but model.file (the exporter's recipe), then with the flags `benchmark.py match` finds from
NudeNet's own detections at 0.05 (at 0.25 they are too few to tell recipes apart), the cut replaced by each. Images: the six sample photos, each also mirrored and as its centre 70%
crop (18). Prints a table; a comparison, never a test."""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from package_runs import (HEADER, LOW_CUT, ROOT, agreement, as_csv, detbench, ensure_venv, match, row,  # noqa: E402
                          run_driver)

PACKAGES = ["nudenet==3.4.2"]


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=Path.home() / ".cache" / "detbench-peers" / "nudenet")
    parser.add_argument("--work", type=Path, help="where images and runs go (default: a temporary folder)")
    args = parser.parse_args()
    python = ensure_venv(args.venv, PACKAGES)
    with tempfile.TemporaryDirectory(prefix="detbench-nudenet-") as scratch:
        work = args.work or Path(scratch)
        shutil.rmtree(work / "runs", ignore_errors=True)  # this script's own runs, never overwritten otherwise
        images = photos(work / "images")
        theirs = run_driver(python, "nudenet_driver.py", {"images": [str(p) for p in images], "cuts": [LOW_CUT]})
        file = Path(theirs["file"])
        print(f"nudenet {theirs['version']}, {file.name}; {len(images)} images; the driver's steps equal "
              f"detect() at its cut: {theirs['steps_equal_detect']}")
        # match is given the detections at the low cut: three boxes at 0.25 leave the recipe open.
        low = as_csv(theirs["cuts"][f"{LOW_CUT:g}"], work / f"nudenet-{LOW_CUT:g}.csv")
        flags, said = match(file, work / "images", low)
        print(said)
        print(HEADER)
        for label, sets in (("nothing but model.file", []), ("match's flags", flags)):
            for cut in (0.25, LOW_CUT):
                chosen = [flag for flag in sets if not flag.startswith("postprocess.conf_thres=")]
                ours = detbench(file, work / "images", work / "runs", f"{len(sets)}-{cut:g}", *chosen,
                                f"postprocess.conf_thres={cut}")
                print(row(label, cut, agreement(theirs["cuts"][f"{cut:g}"], ours["detections"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
