"""detbench on detectors as their authors export them, against the authors' own inference on the same images.

    .venv/bin/python benchmarks/peers/author_exports.py [--packages ultralytics rfdetr ...] [--skip-install]
        [--skip-export] [--runtimes onnxruntime openvino] [--cache ~/.cache/detbench-peers]

For each author's package (ultralytics RT-DETR-L, rfdetr RF-DETR Nano, D-FINE-N, YOLOX-Nano, YOLO-NAS S,
Hugging Face DETR, ...):
  1. its own virtual environment `<cache>/<package>/` (benchmarks/peers/venvs.py: Python 3.11, torch==2.14.1
     torchvision==0.29.1 first, then the package and what its exporter needs), created once;
  2. in that environment, as a subprocess (`<venv>/bin/python benchmarks/peers/drivers/export_<model>.py
     ARGS_JSON`, one driver per package), the author's model built from its config with seeded random weights
     (nothing can be downloaded), its class head rescaled so that a few queries or anchors per image score above
     the author's default cut and scores do not tie; the author's
     own exporter writes the file into `<cache>/<package>-exports/`, and the author's own predict, through that
     file where the package can (else through its torch model), writes `expected.json` beside it at the
     author's default cut and at 0.05 (rows `[class_id, score, x1, y1, x2, y2]` in original pixels, as in
     shared/data/ultra/expected.json) and `FACTS.md`: the file's inputs, outputs and metadata as read back,
     and how the author's predict preprocesses and decodes (read from the author's source);
  3. detbench on each exported file through its command line, per runtime and cut, and its detections.csv
     against the author's (recall and precision at IoU 0.5, same class).

Images: the six sample photos and the first 20 shapes scenes (shared/data). The authors' packages are never
imported here: each runs in its own environment, offline (HF_HUB_OFFLINE, YOLO_OFFLINE, ...). Prints a table;
a comparison, never a test.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import author_agreement  # noqa: E402
from benchmarks.common.author_agreement import agreement, in_detbench_ids  # noqa: E402
from benchmarks.peers import venvs  # noqa: E402

LOW_CUT = 0.05


@dataclass(frozen=True)
class Peer:
    venv: venvs.VenvSpec
    driver: str  # its program in benchmarks/peers/drivers/
    env: dict = field(default_factory=dict)
    # "coco": the author's predict names classes by COCO category id (1-90, sparse), where detbench counts the 80
    # classes from 0; rows under an id no COCO class has (random weights score them) are left out and counted
    class_ids: str = "index"


PEERS = {
    "ultralytics": Peer(venvs.ULTRALYTICS, "export_rtdetr_ultralytics.py",
                        {"YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "False"}),
    "rfdetr": Peer(venvs.VenvSpec("rfdetr", (("rfdetr==1.11.2", "onnx", "onnxruntime", "onnxsim", "openvino"),)),
                   "export_rfdetr_nano.py", class_ids="coco"),
    "d-fine": Peer(venvs.VenvSpec("d-fine", (("d-fine-project", "onnx", "onnxscript", "onnxruntime", "onnxsim",
                                              "openvino"),)), "export_dfine_n.py"),
    # yolox 0.3.0 is an sdist that builds against the installed torch and pins onnx 1.8.1 / onnxruntime 1.8.0
    # (no wheels for Python 3.11): installed without its pins, then what it imports
    "yolox": Peer(venvs.VenvSpec("yolox", (("--no-build-isolation", "--no-deps", "yolox==0.3.0"),
                                           ("opencv-python-headless", "loguru", "tqdm", "pillow", "thop", "ninja",
                                            "tabulate", "tensorboard", "pycocotools", "onnx", "onnxruntime", "onnxsim",
                                            "openvino"))), "export_yolox_nano.py"),
    # super-gradients 3.7.1 pins numpy<=1.23 beside onnxruntime==1.15.0, which needs numpy>=1.24.2: no install
    # satisfies its own pins. Installed without them, then what it imports (pkg_resources: setuptools < 81)
    "super-gradients": Peer(venvs.VenvSpec("super-gradients", (
        ("--no-deps", "super-gradients==3.7.1"),
        ("tqdm", "boto3", "jsonschema", "Deprecated", "scipy", "matplotlib", "psutil", "tensorboard", "torchmetrics",
         "hydra-core", "omegaconf", "onnx", "onnxruntime", "onnxsim", "pillow", "einops", "treelib", "termcolor==1.1.0",
         "stringcase", "rapidfuzz", "json-tricks==3.16.1", "albumentations", "opencv-python-headless", "pycocotools",
         "openvino", "pip-tools", "pygments", "setuptools<81", "requests", "imagesize", "data-gradients",
         "onnx-graphsurgeon", "onnxscript"))), "export_yolonas_s.py"),
    "transformers": Peer(venvs.VenvSpec("transformers", (("transformers", "timm", "optimum-onnx", "onnx", "onnxruntime",
                                                          "openvino", "pillow"),)), "export_detr_transformers.py"),
}
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "NO_ALBUMENTATIONS_UPDATE": "1", "YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "False", "PYTHONWARNINGS": "ignore"}


def images(data: Path, shapes: int) -> list[str]:
    """The compared images, as paths relative to shared/data/."""
    photos = sorted(f"samples/{p.name}" for p in (data / "samples").glob("*.jpg"))
    scenes = sorted(f"shapes/images/{p.name}" for p in (data / "shapes" / "images").glob("*.jpg"))[:shapes]
    return photos + scenes


def export(python: Path, name: str, out: Path, data: Path, chosen: list[str], timeout: int) -> list[dict]:
    """Runs the package's driver in its environment; returns its exports: one dict per file (layout, file,
    expected, facts)."""
    out.mkdir(parents=True, exist_ok=True)
    args = {"out": str(out), "data": str(data), "images": chosen, "low_cut": LOW_CUT}
    env = venvs.peer_environment(os.environ, {**OFFLINE, **PEERS[name].env, "HF_HOME": str(out / "hf-home"),
                                              "YOLO_CONFIG_DIR": str(out / "yolo-config"),
                                              "TORCH_HOME": str(out / "torch-home")})
    log = out / "driver.log"
    with log.open("w") as sink:
        try:
            done = subprocess.run([str(python), str(venvs.DRIVERS / PEERS[name].driver), json.dumps(args)], cwd=out,
                                  env=env, stdout=subprocess.PIPE, stderr=sink, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"{name}: driver stopped after {timeout} s (log {log})", flush=True)
            return []
        sink.write(done.stdout)
    found = [json.loads(line[len("EXPORTED "):]) for line in done.stdout.splitlines() if line.startswith("EXPORTED ")]
    if done.returncode != 0:
        tail = log.read_text().strip().splitlines()[-3:]
        print(f"{name}: driver exit {done.returncode}; {' | '.join(tail)} (log {log})", flush=True)
    return found


def detbench_detections(file: Path, folder: Path, backend: str, cut: float, out: Path, run_id: str,
                        timeout: int, sets: tuple[str, ...] = ()) -> tuple[dict[str, list], str]:
    """detbench's command line on the file: its detections by image name, or its last words when it failed."""
    files_config = ROOT / "configs" / "files.yaml"
    base = [] if files_config.exists() else ["preprocess.img_size=null"]
    return author_agreement.detbench_detections(
        files_config if files_config.exists() else ROOT / "configs" / "samples_tiny.yaml",
        [*base, f"model.file={file}", f"dataset.path={folder}", "dataset.batch_size=1", f"runtime.backend={backend}",
         f"postprocess.conf_thres={cut}", f"run.output_dir={out}", f"run.id={run_id}", *sets], out / run_id, timeout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="*", default=list(PEERS), choices=list(PEERS))
    parser.add_argument("--cache", type=Path, default=venvs.PEERS_HOME)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--shapes", type=int, default=20, help="how many shapes scenes beside the photos; 20")
    parser.add_argument("--skip-install", action="store_true", help="use a package's venv as it is when it exists")
    parser.add_argument("--skip-export", action="store_true", help="reuse exports already in the cache")
    parser.add_argument("--runtimes", nargs="*", default=["onnxruntime", "openvino"])
    parser.add_argument("--timeout", type=int, default=1800, help="seconds for one driver or one detbench run")
    args = parser.parse_args()
    cache = args.cache.expanduser()
    chosen = images(args.data, args.shapes)
    if not chosen:
        raise SystemExit(f"no images under {args.data} (samples/*.jpg, shapes/images/*.jpg): give the shared "
                         "data folder with --data")
    rows = []
    with tempfile.TemporaryDirectory(prefix="detbench-author-exports-") as work:
        folder = Path(work) / "images"
        folder.mkdir()
        for path in chosen:
            (folder / Path(path).name).symlink_to(args.data / path)
        for name in args.packages:
            out = cache / f"{name}-exports"
            listing = out / "exports.json"
            if args.skip_export and listing.exists():
                exported = json.loads(listing.read_text())
            else:
                try:
                    python = venvs.ensure_venv(cache / name, PEERS[name].venv, args.skip_install)
                except venvs.PeerSetupError as error:
                    print(f"{name}: not installed: {error}", flush=True)
                    rows.append((name, "-", "-", "-", f"not installed: {error}"))
                    continue
                exported = export(python, name, out, args.data, chosen, args.timeout)
                (out / "exports.json").write_text(json.dumps(exported, indent=1))
            if not exported:
                rows.append((name, "-", "-", "-", f"no export (see {out / 'driver.log'})"))
            for item in exported:
                expected = json.loads(Path(item["expected"]).read_text())
                for backend in args.runtimes:
                    for key in ("default_predictions", "low_predictions"):
                        cut = expected[key]["conf"]
                        theirs, left_out = in_detbench_ids(expected[key]["images"], PEERS[name].class_ids == "coco")
                        found, status = detbench_detections(Path(item["file"]), folder, backend, cut,
                                                            Path(work) / "runs",
                                                            f"{name}-{item['layout']}-{backend}-{cut}", args.timeout,
                                                            tuple(item.get("sets", ())))
                        total = sum(len(r) for r in theirs.values())
                        if not found and not status.startswith("exit 0"):
                            rows.append((name, item["layout"], backend, cut, f"{total} theirs; detbench {status}"))
                            continue
                        counts = agreement(theirs, found)
                        unused = f" ({left_out} under unused COCO ids left out)" if left_out else ""
                        rows.append((name, item["layout"], backend, cut,
                                     f"{counts.reference} theirs{unused}, {counts.candidate} detbench's: recall "
                                     f"{counts.loose_recall:.3f}, precision {counts.loose_precision:.3f}"))
                        print(" | ".join(str(v) for v in rows[-1]), flush=True)
    print("\n| package | layout (file) | runtime | cut | against the author's own predict (IoU 0.5, same class) |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(v) for v in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
