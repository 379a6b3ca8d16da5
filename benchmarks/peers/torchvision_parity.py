"""detbench's torchvision detectors against torchvision's own `model([image])`, and on every runtime.

    .venv/bin/python benchmarks/peers/torchvision_parity.py [--arch ARCH ...] [--images datasets/samples]
        [--runtimes onnxruntime openvino] [--size N]

For each architecture, on the same seeded random weights (spread so that they detect something) and the same
settings (the architecture's defaults, at its own input size unless --size): the pipeline's detections on every
photo against torchvision's model built by its own builder, matched one to one at IoU 0.9 with the score within
1e-5 (recall and precision 1.000 means every box is torchvision's), then a whole detbench run on each exported
runtime at fp32 with its equal-detections check against the torch fp32 reference, or the reason it is refused.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torchvision.models import detection  # noqa: E402

from benchmarks.common.detbench_runs import benchmark_command  # noqa: E402
from datasets.image_folder import decode_image, find_images  # noqa: E402
from pipelines.dense.facts import ARCHS as DENSE_ARCHS  # noqa: E402
from pipelines.registry import family_for  # noqa: E402
from pipelines.runtimes.torch.session import TorchEager  # noqa: E402
from utils.config.schema import config_for  # noqa: E402
from pipelines.contract import Detections  # noqa: E402
from utils.checks.agreement.matching import MatchCounts, MatchCriteria, match_detections  # noqa: E402

SAME = MatchCriteria(iou_threshold=0.5, strict_iou=0.9, score_tolerance=1e-5)


def torchvision_model(arch: str, state: dict, config) -> torch.nn.Module:
    model = getattr(detection, arch)(weights=None, weights_backbone=None).eval()
    model.load_state_dict(state, strict=False)
    post, pre = config.postprocess, config.preprocess
    heads = getattr(model, "roi_heads", model)
    heads.score_thresh, heads.nms_thresh, heads.detections_per_img = post.conf_thres, post.iou_thres, post.max_det
    if hasattr(model, "topk_candidates"):
        model.topk_candidates = post.topk_candidates
    model.transform.min_size, model.transform.max_size = (pre.img_size,), pre.max_size
    if model.transform.fixed_size is not None:
        model.transform.fixed_size = (pre.img_size, pre.img_size)
    return model


def against_torchvision(arch: str, images: list[np.ndarray], size: int | None) -> tuple[MatchCounts, float, float]:
    config = config_for(arch, preprocess={"img_size": size} if size else {})
    family = family_for(arch)
    network = family.load_network(arch, None, 0)
    forward = TorchEager(fuse=False, precision="fp32").prepare(network, family.example_input(config.preprocess))
    pipeline = family.build_pipeline(network, forward, config.preprocess, config.postprocess)
    model = torchvision_model(arch, network.module.state_dict(), config)
    counts, ours_s, theirs_s = MatchCounts(criteria=SAME), 0.0, 0.0
    for image in images:
        with torch.inference_mode():
            started = time.perf_counter()
            ours = pipeline([image])[0]
            ours_s += time.perf_counter() - started
            rgb = torch.from_numpy(np.ascontiguousarray(image[..., ::-1].transpose(2, 0, 1))).float() / 255.0
            started = time.perf_counter()
            theirs = model([rgb])[0]
            theirs_s += time.perf_counter() - started
        own = Detections(theirs["boxes"], theirs["scores"], theirs["labels"])
        counts = counts + match_detections(own, ours, SAME.iou_threshold, SAME.strict_iou, SAME.score_tolerance)
    return counts, ours_s, theirs_s


def on_runtime(arch: str, backend: str, images: Path, size: int | None, out: Path) -> str:
    """A whole detbench run on `backend` at fp32: its equal-detections verdict, or the refusal it ends with."""
    command = benchmark_command(ROOT / "configs" / "samples_tiny.yaml", [
        f"model.arch={arch}", f"dataset.path={images}", f"run.output_dir={out}", f"run.id={arch}-{backend}",
        f"runtime.backend={backend}", f"preprocess.img_size={size if size else 'null'}", "dataset.batch_size=1",
        "benchmark.repeats=1", "benchmark.layer_timing=false", "outputs.save_images=false", "outputs.plots=false",
        "benchmark.accuracy.enabled=false"])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode == 2:
        return "refused: " + done.stderr.strip().splitlines()[-1].removeprefix("error: ")
    if done.returncode != 0:
        return f"failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}"
    summary = json.loads((out / f"{arch}-{backend}" / "summary.json").read_text())
    agreement = summary.get("agreement") or {}
    strict, forward = agreement.get("strict") or {}, summary.get("forward") or {}
    return (f"{agreement.get('verdict')} against torch fp32 (strict recall {strict.get('recall', float('nan')):.3f}, "
            f"precision {strict.get('precision', float('nan')):.3f}); forward p50 "
            f"{forward.get('p50_ms_per_image', float('nan')):.1f} ms per image")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="+", default=list(DENSE_ARCHS))
    parser.add_argument("--images", type=Path, default=ROOT / "datasets" / "samples")
    parser.add_argument("--runtimes", nargs="*", default=["onnxruntime", "openvino"])
    parser.add_argument("--size", type=int, default=None, help="preprocess.img_size; default: each architecture's own")
    args = parser.parse_args()
    images = [decode_image(path).image for path in find_images(args.images)]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {len(images)} photos from {args.images}")
    with tempfile.TemporaryDirectory() as out:
        for arch in args.arch:
            counts, ours_s, theirs_s = against_torchvision(arch, images, args.size)
            print(f"{arch}: {counts.reference} detections by torchvision, {counts.candidate} by detbench; recall "
                  f"{counts.strict_recall:.3f}, precision {counts.strict_precision:.3f} (IoU >= 0.9, score within "
                  f"1e-5); {ours_s / len(images):.2f} s against {theirs_s / len(images):.2f} s per photo")
            for backend in args.runtimes:
                print(f"  {backend} fp32: {on_runtime(arch, backend, args.images, args.size, Path(out))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
