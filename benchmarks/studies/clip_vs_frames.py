"""Is a video's decoded frame detected as the same frame given as a PNG file: the goal of a video as dataset.path
(issue 60, item 1), measured.

    .venv/bin/python benchmarks/studies/clip_vs_frames.py [--seconds 2] [--codec libx264 mpeg4] [--img-size 320]
        [--threads 2] [--out DIR]

For each codec, a clip of moving shapes at 1280x720 and 15 fps with per-frame YOLO labels is made
(tests/support/clips.py, encoded by PyAV), and every frame it decodes to is written losslessly as a PNG with the same
boxes as its label (tests/support/frame_runs.py). detbench then runs the trained YOLOv7-tiny of datasets/shapes
(torch fp32) on the clip and on the PNG files, once at the deployed cut (the config's postprocess.conf_thres) and
once at the evaluation cut (benchmark.accuracy.conf_thres), each with its labels. The clip's detections are matched
to the PNG files' frame by frame with the agreement check's own matching (utils/checks/agreement/matching.py), and
the mAP of the accuracy pass (utils/checks/accuracy) is set beside the PNG files'.

Goals: strict recall and precision 1.000 at both cuts; |mAP@0.5:0.95 difference| <= 0.005. Prints its figures
and whether each goal is met; a measurement, never a test (the exit status does not depend on the goals). The
per-frame times of decode_frames and load are printed for information only (a shared machine's figures).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.common.detbench_runs import benchmark_command  # noqa: E402
from tests.support.clips import moving_shapes  # noqa: E402
from tests.support.frame_runs import ClipAndFrames, clip_and_frames, frame_agreement  # noqa: E402
from utils.config.schema import config_for  # noqa: E402

SHAPES = PROJECT_ROOT / "datasets" / "shapes"
WIDTH, HEIGHT, FPS = 1280, 720, 15
MAP_TOLERANCE = 0.005
DEFAULTS = config_for("yolov7-tiny")
CUTS = (("deployed", DEFAULTS.postprocess.conf_thres), ("evaluation", DEFAULTS.benchmark.accuracy.conf_thres))


def detbench(out: Path, run_id: str, path: Path, labels: Path, cut: float, img_size: int, threads: int) -> Path:
    command = benchmark_command(PROJECT_ROOT / "configs" / "samples_tiny.yaml", [
        f"model.weights={SHAPES / 'yolov7-tiny-shapes.pt'}", f"dataset.path={path}", f"dataset.labels={labels}",
        f"postprocess.conf_thres={cut}", f"preprocess.img_size={img_size}", "runtime.backend=torch",
        "runtime.precision=fp32", f"runtime.threads={threads}", f"run.output_dir={out}", f"run.id={run_id}",
        "dataset.batch_size=1", "outputs.save_images=false", "outputs.plots=false", "outputs.report=false",
        "benchmark.layer_timing=false", "benchmark.memory.enabled=false", "benchmark.repeats=1"])
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"detbench on {path} failed ({result.returncode}): {result.stderr[-600:]}")
    return out / run_id


def ms_per_frame(summary: dict, step: str) -> float:
    return summary["steps"][step]["total_ms"] / summary["images_timed"]


def compare(made: ClipAndFrames, out: Path, codec: str, img_size: int, threads: int) -> list[bool]:
    met = []
    for name, cut in CUTS:
        video = detbench(out, f"{codec}-{name}-clip", made.clip, made.labels, cut, img_size, threads)
        png = detbench(out, f"{codec}-{name}-png", made.frames, made.frame_labels, cut, img_size, threads)
        matched = frame_agreement(png, video, made.count)
        from_video, from_png = (json.loads((run / "summary.json").read_text()) for run in (video, png))
        maps = from_video["accuracy"]["map_50_95"], from_png["accuracy"]["map_50_95"]
        exact = (matched.strict_recall, matched.strict_precision) == (1.0, 1.0)
        close = abs(maps[0] - maps[1]) <= MAP_TOLERANCE
        met += [exact, close]
        print(f"  {name} cut {cut}: {matched.reference} PNG detections, {matched.candidate} clip detections, strict "
              f"recall {matched.strict_recall:.3f} precision {matched.strict_precision:.3f} "
              f"[{'met' if exact else 'NOT met'}]; mAP@0.5:0.95 clip {maps[0]:.4f}, PNG {maps[1]:.4f}, "
              f"|difference| {abs(maps[0] - maps[1]):.4f} [{'met' if close else 'NOT met'}]; "
              f"frames {from_video['images_processed']} and {from_png['images_processed']}; "
              f"decode_frames {ms_per_frame(from_video, 'decode_frames'):.1f} ms/frame, "
              f"load {ms_per_frame(from_png, 'load'):.1f} ms/image")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each clip")
    parser.add_argument("--codec", nargs="+", default=["libx264", "mpeg4"], choices=["libx264", "mpeg4"])
    parser.add_argument("--img-size", type=int, default=320, help="the shapes model was trained at 320")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=60)
    parser.add_argument("--out", type=Path, help="where the clips, frames and runs go (default: a temporary folder)")
    options = parser.parse_args()
    frames = round(options.seconds * FPS)
    with tempfile.TemporaryDirectory(prefix="clip_vs_frames_") as scratch:
        out = options.out or Path(scratch)
        met = []
        for codec in options.codec:
            made = clip_and_frames(out / codec, moving_shapes(WIDTH, HEIGHT, frames, seed=options.seed, objects=4),
                                   fps=FPS, codec=codec)
            print(f"{codec}: {made.clip.name}, {WIDTH}x{HEIGHT} at {FPS} fps, {made.count} frames, "
                  f"{made.clip.stat().st_size / 1e6:.2f} MB; yolov7-tiny-shapes at {options.img_size}, torch fp32")
            met += compare(made, out / codec / "runs", codec, options.img_size, options.threads)
        print(f"goals: {sum(met)} of {len(met)} met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
