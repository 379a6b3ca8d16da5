"""The benchmark run: config -> dataset -> pipeline -> recorders -> writers -> outputs/<run_id>/."""
from __future__ import annotations

import statistics
import time
import warnings
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch
from tqdm import tqdm

from datasets.image_folder import find_images, image_loader
from models import build_model, fuse_model, load_weights
from pipelines.yolo_object_detector import NonMaxSuppression, Preprocess, ScaleBoxes, YoloObjectDetector
from utils.config import Config, config_to_yaml
from utils.detection_writer import DetectionWriter
from utils.energy import EnergyRecorder, RaplStatus
from utils.environment import describe_environment
from utils.layer_reports import layer_tree_text, top_self_table, write_layer_reports
from utils.layer_timing import ModelTiming, TimingSnapshot
from utils.memory import MemorySampler
from utils.plots import write_all_plots
from utils.profiler_trace import StepRanges, profile_pipeline
from utils.run_directory import RunDirectory
from utils.step_statistics import PIPELINE_STEP, STEP_SUMMARY_COLUMNS, summarize_steps
from utils.step_timer import StepTimer

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STEP_COLUMNS = ("step", "parent", "pass", "batch", "images", "ms", "warmup", "start_s", "end_s")
WARMUP_PASS, LAYERS_PASS, PROFILER_PASS = "warmup", "layers", "profiler"
CV_WARNING = 0.10
MATERIAL_SHARE = 0.05
RUN_STEP = "run"  # brackets the whole run for the energy and memory recorders
MEMORY_COLUMNS = ("t_s", "rss_mb", "self_rss_mb", "children_rss_mb", "step")
MEMORY_STEP_COLUMNS = ("step", "start_s", "end_s")


@dataclass
class LoadedModel:
    model: torch.nn.Module
    names: list[str]
    weights: str
    random_weights: bool


@dataclass
class RunState:
    """What the passes have produced so far; everything here is written even after Ctrl-C."""
    timed_passes: list[str] = field(default_factory=list)
    status: str = "complete"
    warnings: list[str] = field(default_factory=list)
    layer_timing: Optional[TimingSnapshot] = None
    profiler: Optional[dict] = None


def load_model(config: Config) -> LoadedModel:
    model = build_model(config.model.arch, seed=config.run.seed)
    if config.model.weights:
        info = load_weights(model, config.model.weights)
        names = list(info.class_names or model.names)
        weights, random_weights = info.source, False
    else:
        names = list(model.names)
        weights, random_weights = f"random (seed {config.run.seed})", True
    if config.model.fuse:
        fuse_model(model)
    model.eval()
    return LoadedModel(model, names, weights, random_weights)


def build_detector(config: Config, model: torch.nn.Module) -> YoloObjectDetector:
    stride = int(max(model.stride))
    pre, post = config.preprocess, config.postprocess
    return YoloObjectDetector(
        model,
        Preprocess(pre.img_size, pre.rect, pre.pad_value, stride),
        NonMaxSuppression(post.conf_thres, post.iou_thres, post.max_det, post.classes, post.agnostic),
        ScaleBoxes(),
    )


class PassRunner:
    """Runs the pipeline over the dataset once per call, timing every step from outside."""

    def __init__(self, detector: YoloObjectDetector, paths: list[Path], config: Config, timer: StepTimer,
                 progress: tqdm):
        self.detector = detector
        self.paths = paths
        self.config = config
        self.timer = timer
        self.progress = progress
        self.batches = -(-len(paths) // config.dataset.batch_size)
        self.loader = image_loader(paths, config.dataset.batch_size, config.dataset.workers)

    def run(self, pass_label: str, warmup: bool = False, max_batches: int | None = None,
            writer: DetectionWriter | None = None) -> None:
        timer, detector = self.timer, self.detector
        batches = iter(self.loader)
        for index in range(self.batches if max_batches is None else min(max_batches, self.batches)):
            timer.set_batch(pass_label, index, 0, warmup)
            with timer.step(PIPELINE_STEP):
                with timer.step("load"):
                    samples = next(batches)
                    valid = [s for s in samples if s.image is not None]
                    timer.set_images(len(valid))
                if valid:
                    with timer.step("preprocess"):
                        batch = detector.preprocess([s.image for s in valid])
                    with timer.step("forward"):
                        prediction = detector.forward(batch)
                    with timer.step("postprocess"):
                        with timer.step("nms"):
                            detections = detector.nms(prediction)
                        with timer.step("scale_boxes"):
                            detections = detector.scale_boxes(detections, batch)
            if writer is not None:
                for sample in samples:
                    if sample.image is None:
                        writer.write_skipped(sample)
                if valid:
                    with timer.step("annotate_save"):
                        writer.write_batch(valid, detections)
            self.progress.update(1)


def _forward_ms_per_image(rows: list[dict], passes: set[str]) -> dict[int, list[float]]:
    by_batch: dict[int, list[float]] = {}
    for row in rows:
        if row["step"] == "forward" and row["pass"] in passes and not row["warmup"] and row["images"]:
            by_batch.setdefault(row["batch"], []).append(row["ms"] / row["images"])
    return by_batch


def overhead_ratio(rows: list[dict], clean_passes: set[str], instrumented_pass: str) -> Optional[float]:
    """Median instrumented forward time over median clean time, matched batch by batch."""
    clean = _forward_ms_per_image(rows, clean_passes)
    instrumented = _forward_ms_per_image(rows, {instrumented_pass})
    ratios = [statistics.median(instrumented[b]) / statistics.median(clean[b])
              for b in instrumented if b in clean and statistics.median(clean[b]) > 0]
    return statistics.median(ratios) if ratios else None


class Benchmark:
    def __init__(self, config: Config, console: Callable[[str], None] = print):
        self.config = config
        self.console = console

    def prepare(self) -> None:
        """Everything that can fail because of the user's input happens here, before any output is written."""
        config = self.config
        if config.model.threads:
            torch.set_num_threads(config.model.threads)
        self.paths = find_images(config.dataset.path, config.dataset.limit)
        self.loaded = load_model(config)
        self.run_dir = RunDirectory(config.run.output_dir, config.run.id)
        self.run_dir.create()

    def execute(self) -> dict:
        config, loaded, run_dir = self.config, self.loaded, self.run_dir
        if loaded.random_weights:
            self.console(f"WARNING: no model.weights given: {config.model.arch} runs on {loaded.weights} weights; "
                         "its boxes are not real detections.")
        run_dir.write_text("config.yaml", config_to_yaml(config))
        run_dir.write_json("env.json", describe_environment(PROJECT_ROOT))
        detector = build_detector(config, loaded.model)
        energy = EnergyRecorder() if config.benchmark.energy.enabled else EnergyRecorder(
            status=RaplStatus(available=False, reason="disabled by the config (benchmark.energy.enabled: false)"))
        memory = MemorySampler(interval_s=config.benchmark.memory.interval_s) if config.benchmark.memory.enabled else None
        timer = StepTimer([l for l in (energy, memory) if l is not None])
        note = f"RANDOM WEIGHTS (seed {config.run.seed}): boxes are not real detections" if loaded.random_weights else None
        writer = DetectionWriter(run_dir.path, Path(config.dataset.path), loaded.names, config.outputs.save_images, note)
        state = RunState()
        bench = config.benchmark
        progress = tqdm(unit="batch", desc=config.run.id, disable=None, leave=False)
        runner = PassRunner(detector, self.paths, config, timer, progress)
        batches = runner.batches
        progress.total = (min(bench.warmup, batches) + bench.repeats * batches + (1 if bench.profiler else 0)
                          + (min(bench.layer_timing_batches or batches, batches) if bench.layer_timing else 0))
        started = time.perf_counter()
        with ExitStack() as stack:
            if memory is not None:
                stack.enter_context(memory)
                memory.mark_baseline()
            if bench.energy.enabled and bench.energy.idle_s > 0:
                energy.measure_idle(bench.energy.idle_s)
            try:
                with timer.step(RUN_STEP):
                    self._run_passes(runner, state, writer, progress)
            except KeyboardInterrupt:
                state.status = "interrupted"
                self.console("Interrupted: writing what was measured so far.")
            finally:
                progress.close()
                writer.close()
        wall_s = time.perf_counter() - started
        return self._write_outputs(timer, energy, memory, writer, state, wall_s, note)

    def _run_passes(self, runner: PassRunner, state: RunState, writer: DetectionWriter, progress: tqdm) -> None:
        bench = self.config.benchmark
        if bench.warmup:
            runner.run(WARMUP_PASS, warmup=True, max_batches=bench.warmup)
        measured_s, pass_index = 0.0, 0
        while pass_index < bench.repeats or measured_s < bench.min_time_s:
            if pass_index >= bench.repeats:
                progress.total += runner.batches
            label = str(pass_index)
            state.timed_passes.append(label)
            started = time.perf_counter()
            runner.run(label, writer=writer if pass_index == 0 else None)
            measured_s += time.perf_counter() - started
            if pass_index == 0:
                writer.flush()
                # Instrumented passes go between timed passes, so that with two or more repeats their
                # overhead is judged against clean passes on both sides rather than against a drifting past.
                if bench.layer_timing:
                    self._layer_pass(runner, state)
                if bench.profiler:
                    self._profiler_pass(runner, state)
            pass_index += 1

    def _layer_pass(self, runner: PassRunner, state: RunState) -> None:
        detector = runner.detector
        with warnings.catch_warnings(record=True):  # the snapshot carries them; reported once below
            warnings.simplefilter("always")
            with ModelTiming(detector.model, pre_transforms=[detector.preprocessor],
                             post_transforms=[detector.nms, detector.scale_boxes]) as timing:
                runner.run(LAYERS_PASS, max_batches=self.config.benchmark.layer_timing_batches)
        state.layer_timing = timing.snapshot()
        for message in state.layer_timing.warnings:
            state.warnings.append(message)
            self.console(f"WARNING: {message}")

    def _profiler_pass(self, runner: PassRunner, state: RunState) -> None:
        detector, ranges = runner.detector, StepRanges()
        runner.timer.listeners.append(ranges)
        try:
            result = profile_pipeline(lambda: runner.run(PROFILER_PASS, max_batches=1), detector.model,
                                      self.run_dir.path, [detector.preprocessor], [detector.nms, detector.scale_boxes])
        finally:
            runner.timer.listeners.remove(ranges)
        state.profiler = {"trace": result.trace_path.name, "ops_csv": result.ops_csv_path.name,
                          "wall_ms": result.wall_ms}

    def _write_outputs(self, timer: StepTimer, energy: EnergyRecorder, memory: Optional[MemorySampler],
                       writer: DetectionWriter, state: RunState, wall_s: float, note: Optional[str]) -> dict:
        config, run_dir = self.config, self.run_dir
        rows = [r for r in timer.rows() if r["step"] != RUN_STEP]
        run_dir.write_csv("steps_timer.csv", rows, STEP_COLUMNS)
        step_summary = summarize_steps(rows, set(state.timed_passes))
        run_dir.write_csv("steps_summary.csv", step_summary, STEP_SUMMARY_COLUMNS)
        summary = self._summary(rows, step_summary, energy, memory, writer, state, wall_s)
        if state.layer_timing is not None:
            timing = state.layer_timing
            write_layer_reports(timing, run_dir.path)
            summary["layer_timing"] = {
                "pass": LAYERS_PASS,
                "hook_overhead_ratio": overhead_ratio(rows, set(state.timed_passes), LAYERS_PASS),
                "model_forward_ms": timing.model_total_ms,
                "unattributed_ms": timing.unattributed_ms,
                "forwards": timing.forwards,
                "gflops_per_forward": timing.flops_per_forward / 1e9,
                "files": ["layer_timer.csv", "layer_types.csv", "layer_tree.txt"],
            }
            self.console("Pipeline tree, instrumented pass (every module: layer_tree.txt):\n"
                         + layer_tree_text(timing, max_depth=1))
            self.console("Top 20 layers by self time (instrumented pass):\n" + top_self_table(timing, top=20))
        if state.profiler is not None:
            profiled = overhead_ratio(rows, set(state.timed_passes), PROFILER_PASS)
            summary["profiler"] = dict(state.profiler, forward_overhead_ratio=profiled)
        if energy.available:
            run_dir.write_csv("energy.csv", energy.rows(), energy.columns())
        if memory is not None:
            run_dir.write_csv("memory.csv", memory.rows(), MEMORY_COLUMNS)
            run_dir.write_csv("memory_steps.csv", memory.step_rows(), MEMORY_STEP_COLUMNS)
        if config.outputs.plots:
            written = write_all_plots(run_dir.path, note=note)
            summary["plots"] = [p.name for p in written]
        run_dir.write_json("summary.json", summary)
        return summary

    def _summary(self, rows: list[dict], step_summary: list[dict], energy: EnergyRecorder,
                 memory: Optional[MemorySampler], writer: DetectionWriter, state: RunState, wall_s: float) -> dict:
        config, loaded = self.config, self.loaded
        by_step = {s["step"]: s for s in step_summary}
        pipeline = by_step.get(PIPELINE_STEP, {})
        forward = by_step.get("forward", {})
        # Sub-millisecond steps always scatter; warn where the spread moves the pipeline's numbers.
        noisy = [f"{s['step']} {s['cv_per_image']:.0%}" for s in step_summary
                 if s["cv_per_image"] is not None and s["cv_per_image"] > CV_WARNING and s["count"] > 1
                 and (s["share_of_pipeline"] or 0) >= MATERIAL_SHARE]
        if noisy:
            state.warnings.append(f"noisy timings, coefficient of variation per image above {CV_WARNING:.0%}: "
                                  f"{', '.join(noisy)}; "
                                  "quote medians (p50), and repeat on a quieter machine or with more repeats")
        images_timed = pipeline.get("images", 0)
        return {
            "run_id": config.run.id,
            "status": state.status,
            "model": config.model.arch,
            "weights": loaded.weights,
            "fused": config.model.fuse,
            "img_size": config.preprocess.img_size,
            "batch_size": config.dataset.batch_size,
            "threads": torch.get_num_threads(),
            "images_found": len(self.paths),
            "images_processed": writer.images_written,
            "images_skipped": writer.skipped,
            "detections": writer.detections_written,
            "timed_passes": len(state.timed_passes),
            "images_timed": images_timed,
            "pipeline_latency": {
                "definition": "per batch: load (wait for the data loader) + preprocess + forward + postprocess "
                              "(nms + scale_boxes); annotate_save is excluded and reported separately. "
                              "Timed passes only, warm-up excluded.",
                "p50_ms_per_batch": pipeline.get("p50_ms"),
                "mean_ms_per_batch": pipeline.get("mean_ms"),
                "ms_per_image": pipeline.get("ms_per_image"),
                "images_per_s": pipeline.get("images_per_s"),
            },
            "forward": {"p50_ms_per_batch": forward.get("p50_ms"), "p50_ms_per_image": forward.get("p50_ms_per_image"),
                        "cv_per_image": forward.get("cv_per_image"), "ms_per_image": forward.get("ms_per_image")},
            "steps": {s["step"]: {"total_ms": s["total_ms"], "p50_ms": s["p50_ms"], "share_of_pipeline":
                                  s["share_of_pipeline"], "images_per_s": s["images_per_s"]} for s in step_summary},
            "wall_s": wall_s,
            "energy": energy.summary(images=sum(r["images"] for r in rows if r["step"] == PIPELINE_STEP)),
            "memory": memory.summary() if memory is not None else {"status": "disabled"},
            "warnings": state.warnings,
        }
