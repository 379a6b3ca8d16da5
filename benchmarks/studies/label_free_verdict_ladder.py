"""The calibration ladder of the label-free verdict: candidates whose real mAP drop is known from labels, each
judged without them, on a labelled set with its trained model.

    python benchmarks/studies/label_free_verdict_ladder.py --data ../shared/data/shapes
    python benchmarks/studies/label_free_verdict_ladder.py --data ../shared/data/shapes-b

Candidates: the runtimes' reduced-precision paths (torch bf16, OpenVINO bf16 and int8 where the CPU runs them)
and controlled degradations of the fp32 model: Gaussian weight noise of growing scale (relative to each
tensor's standard deviation), per-channel symmetric fake quantization of the weights at 8, 6 and 4 bits, and
OpenVINO int8 calibrated on a single image. int8 is calibrated on the set's last `--calibration` images, which
are never scored. Each candidate's detections (at the accuracy pass's settings and at the deployed threshold)
are cached under --cache, so a second run only recomputes the verdicts.

The label-free verdict is reached as a run without labels reaches it: on the first `--start` images (a run's
default, benchmark.agreement.images), then, while undecided, on as many as it asks for, up to
benchmark.accuracy.max_images and the images there are (utils.checks.scored_images.more_images). The real drop
is measured on all scored images.

For each candidate it prints the real drop against the labels with its 95% interval, the label-free estimate
with its bound and the images it used, the verdict with labels and the one without, then a confusion table and
how often the label-free upper bound (what "mAP drop at most X" states) holds the real drop.
Nothing here is tuned: the budget is detbench's default (benchmark.accuracy.max_drop) and the verdict rule is
utils.record's.
"""
from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path
from typing import Optional

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from datasets.image_folder import DatasetBatches, decode_image, find_images  # noqa: E402
from datasets.labels import load_ground_truth  # noqa: E402
from pipelines.contract import Detections  # noqa: E402
from pipelines.runtimes.base import RuntimeNotSupported  # noqa: E402
from pipelines.runtimes.registry import build_runtime  # noqa: E402
from pipelines.yolo import family  # noqa: E402
from utils.config.schema import AccuracySection, AgreementSection, CalibrationSection, config_for  # noqa: E402
from utils.checks.accuracy.accuracy_pass import map_postprocess  # noqa: E402
from utils.checks.int8.calibration_inputs import calibration_inputs  # noqa: E402
from utils.checks.scored_images import more_images  # noqa: E402
from utils.checks.accuracy.coco_map import map_drop_interval  # noqa: E402
from utils.checks.accuracy.label_free import (JUDGE_VIEWS, MIRRORED, StandInJudge, from_view,  # noqa: E402
                                              label_free_verdict, labelled_verdict, view_image)

NOISE = (0.05, 0.2)
BITS = (8, 6, 4)


def _noisy(module: torch.nn.Module, scale: float, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            if parameter.dim() > 1:
                parameter.add_(torch.randn(parameter.shape, generator=generator) * parameter.std() * scale)


def _fake_quantized(module: torch.nn.Module, bits: int) -> None:
    levels = 2 ** (bits - 1) - 1
    with torch.no_grad():
        for parameter in module.parameters():
            if parameter.dim() > 1:
                scale = parameter.abs().flatten(1).amax(dim=1).clamp(min=1e-12) / levels
                shape = (-1,) + (1,) * (parameter.dim() - 1)
                parameter.copy_((parameter / scale.view(shape)).round().clamp(-levels, levels) * scale.view(shape))


def _candidates(weights: str, pre, post, calibration_paths, cache: Path):
    """(name, pipeline builder) pairs; a builder returns (network, forward) or raises RuntimeNotSupported."""
    def torch_runtime(change=None, precision="fp32"):
        def build():
            network = family.load_network("yolov7-tiny", weights, 0)
            if change is not None:
                network.module.float()
                change(network.module)
            runtime = build_runtime("torch", fuse=True, threads=2, precision=precision)
            return network, runtime.prepare(network, family.example_input(pre))
        return build

    def openvino(precision, images=None):
        def build():
            network = family.load_network("yolov7-tiny", weights, 0)
            options = {}
            if precision == "int8":
                calibrating = CalibrationSection(images=images or len(calibration_paths), keep_float=["Detect"])
                options["calibration"] = calibration_inputs(family, network, pre, post,
                                                            DatasetBatches(calibration_paths, 1), calibrating)
            runtime = build_runtime("openvino", fuse=True, threads=2, precision=precision, streams=1,
                                    pinning=False, cache_dir=str(cache / "export"), **options)
            return network, runtime.prepare(network, family.example_input(pre))
        return build

    yield "torch fp32 (itself)", torch_runtime()
    yield "openvino int8", openvino("int8")
    yield "torch bf16", torch_runtime(precision="bf16")
    for bits in reversed(BITS):
        yield f"weights fake-quantized to {bits} bits", torch_runtime(lambda m, b=bits: _fake_quantized(m, b))
    for scale in reversed(NOISE):
        yield f"weight noise {scale:g} std", torch_runtime(lambda m, s=scale: _noisy(m, s, 0))
    yield "openvino int8, 1 calibration image", openvino("int8", 1)
    yield "openvino bf16", openvino("bf16")


def _plain(found: list[Detections]) -> list[dict]:
    return [{"boxes": d.boxes.double().numpy(), "scores": d.scores.double().numpy(),
             "labels": d.labels.numpy()} for d in found]


def _cached(cache: Path, tag: str, name: str) -> Path:
    return cache / f"{tag}-{name.replace(' ', '_').replace(',', '').replace('(', '').replace(')', '')}.pkl"


def _view_name(number: int) -> str:
    return " on mirror images" if number == 0 else f" on mirror view {number + 1}"


def _detections(name, build, pre, at_map, paths, cache: Path, tag: str, official: bool, view: Optional[int] = None):
    """Detections at mAP settings per image; `view`: on that judge view (JUDGE_VIEWS), mapped back (the
    label-free verdict's stand-in for labels, from the reference)."""
    path = _cached(cache, tag, name + ("" if view is None else _view_name(view)))
    if path.is_file():
        return pickle.loads(path.read_bytes())
    network, forward = build()
    mapping = family.build_pipeline(network, forward, pre, at_map, evaluation=official)
    result = {"map": []}
    for image_path in paths:
        image = decode_image(image_path).image
        if view is not None:
            shown = mapping([view_image(image, JUDGE_VIEWS[view])])[0]
            result["map"] += _plain([from_view(shown, JUDGE_VIEWS[view], *image.shape[:2])])
        else:
            result["map"] += _plain(mapping([image]))
    path.write_bytes(pickle.dumps(result))
    return result


class _Found:
    def __init__(self, item: dict):
        self.boxes, self.scores, self.labels = item["boxes"], item["scores"], item["labels"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="a labelled set: images/, labels/ and one .pt checkpoint")
    parser.add_argument("--images", type=int, default=None,
                        help="scored images (the first ones; default: all but the calibration images)")
    parser.add_argument("--calibration", type=int, default=30, help="int8 calibration images (the last ones)")
    parser.add_argument("--start", type=int, default=AgreementSection().images,
                        help="images the label-free verdict starts on, as a run without labels")
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "detbench" / "verdict_ladder"))
    parser.add_argument("--only-cached", action="store_true", help="skip candidates not computed yet")
    parser.add_argument("--single-label", action="store_true", help="single-label NMS at mAP settings (faster)")
    parser.add_argument("--budget", type=float, default=AccuracySection().max_drop,
                        help="the mAP drop budget (benchmark.accuracy.max_drop); other values test the rule beyond the default")
    parser.add_argument("--preprocess", choices=("official", "deployed"), default=AccuracySection().preprocess,
                        help="the accuracy pass's letterbox (benchmark.accuracy.preprocess)")
    parser.add_argument("--judge-views", type=int, choices=range(1, len(JUDGE_VIEWS) + 1),
                        default=AccuracySection().judge_views,
                        help="mirror views standing in for the labels (benchmark.accuracy.judge_views)")
    parser.add_argument("--label-free-truth", choices=("mirrored", "reference"), default=AccuracySection().label_free_truth,
                        help="what stands in for the labels (benchmark.accuracy.label_free_truth)")
    args = parser.parse_args()
    torch.set_num_threads(2)
    data = Path(args.data).resolve()
    weights = str(next(data.glob("*.pt")))
    paths = find_images(data / "images")
    if args.images is None:
        args.images = len(paths) - args.calibration
    if args.images + args.calibration > len(paths):
        parser.error(f"{data} has {len(paths)} images: --images + --calibration must not exceed it")
    scored, calibration = paths[:args.images], paths[len(paths) - args.calibration:]
    assert not set(scored) & set(calibration)
    truth = load_ground_truth(data / "labels", data / "images", scored, [str(i) for i in range(80)]).images
    config = config_for("yolov7-tiny", preprocess={"img_size": 320}, benchmark={"accuracy": {
        "multi_label": not args.single_label, "label_free_truth": args.label_free_truth,
        "judge_views": args.judge_views, "preprocess": args.preprocess, "max_drop": args.budget}})
    pre, deployed, accuracy = config.preprocess, config.postprocess, config.benchmark.accuracy
    at_map, _ = map_postprocess(deployed, accuracy, "YOLOv7's test.py")
    cache = Path(args.cache) / data.name
    cache.mkdir(parents=True, exist_ok=True)
    official = accuracy.preprocess == "official"
    tag = f"{args.images}-{args.calibration}{'-single' if args.single_label else ''}{'' if official else '-deployed'}"
    rows = []
    reference = None
    for name, build in _candidates(weights, pre, deployed, calibration, cache):
        started = time.perf_counter()
        try:
            found = _detections(name, build, pre, at_map, scored, cache, tag, official) if not args.only_cached \
                or _cached(cache, tag, name).is_file() else None
        except RuntimeNotSupported as refusal:
            print(f"{name}: not run here ({refusal})", flush=True)
            continue
        if found is None:
            continue
        if reference is None:
            reference = found
            judges = [[_Found(d) for d in _detections(name, build, pre, at_map, scored, cache, tag, official,
                                                      view=number)["map"]]
                      for number in range(accuracy.judge_views)]
        ref_map = [_Found(d) for d in reference["map"]]
        cand_map = [_Found(d) for d in found["map"]]
        real = map_drop_interval(truth, ref_map, cand_map, resamples=200, seed=0)
        used = min(args.start, len(scored))
        while True:
            views = [judge[:used] for judge in judges] if accuracy.label_free_truth == MIRRORED else None
            free = label_free_verdict(ref_map[:used], cand_map[:used], StandInJudge(deployed.conf_thres, views),
                                      accuracy.max_drop)
            wanted = more_images(free, used, len(scored), accuracy.max_images)
            if wanted is None:
                break
            used = wanted
        rows.append((name, real, free, labelled_verdict(real.drop, real.low, real.high, accuracy.max_drop)))
        print(f"{name}: done in {time.perf_counter() - started:.0f} s", flush=True)
    print(f"\n{data.name}: {len(scored)} scored images, {len(calibration)} calibration images, budget "
          f"{accuracy.max_drop} (mAP@0.5:0.95), 95% intervals over images; without labels from {args.start} "
          f"images, growing while undecided up to {accuracy.max_images}")
    print("| candidate | real drop [95%] | label-free estimate | images without labels | verdict with labels | "
          "verdict without |")
    print("|---|---|---|---|---|---|")
    for name, real, free, labelled in rows:
        print(f"| {name} | {real.drop:+.4f} [{real.low:+.4f}, {real.high:+.4f}] | {free['statement']} | "
              f"{free['images']} | {labelled} | {free['verdict']} |")
    kinds = ("within_budget", "different", "undecided")
    print("\nconfusion (rows: with labels, columns: without)")
    print("| | " + " | ".join(kinds) + " |\n|---|---|---|---|")
    for kind in kinds:
        counts = [sum(1 for _, _, free, labelled in rows if labelled == kind and free["verdict"] == other)
                  for other in kinds]
        print(f"| {kind} | " + " | ".join(str(c) for c in counts) + " |")
    # The bound a `within_budget` verdict rests on: the interval's upper end, against the drop the labels measure.
    bounded = [(name, real, free) for name, real, free, _ in rows if free["high"] is not None]
    missed = [f"{name} (real {real.drop:+.4f}, bound {free['high']:+.4f})" for name, real, free in bounded
              if real.drop > free["high"]]
    print(f"\nthe label-free upper bound holds the real drop for {len(bounded) - len(missed)} of {len(bounded)} "
          f"candidates" + (f"; not for: {', '.join(missed)}" if missed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
