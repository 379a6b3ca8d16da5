"""The run's runtime, prepared from the config: each backend gets only its own options, int8 is calibrated on
images the scored passes never use, and `runtime.streams: auto` is resolved by the runtime itself."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional

from datasets.image_folder import find_images
from datasets.labels import GroundTruth
from pipelines.contract import DetectorFamily, LoadedNetwork
from pipelines.runtimes.base import PreparedForward, Runtime, RuntimeSettings
from pipelines.runtimes.cache_integrity import usable_directory
from pipelines.runtimes.concurrency import scenario_streams
from pipelines.runtimes.int8_contract import AccuracyControl
from pipelines.runtimes.quantization import Calibration
from pipelines.runtimes.registry import SPECS, build_runtime
from pipelines.runtimes.spec import quantizes
from utils.config.schema import AUTO
from utils.checks.accuracy.accuracy_pass import map_postprocess
from utils.checks.int8.calibration_inputs import calibration_inputs
from utils.checks.int8.selection import JudgingPipeline, SelectionJudge, accuracy_control
from utils.checks.scored_images import calibration_document, calibration_split
from utils.record.built_run import RunSections


@dataclass
class PreparedRuntime:
    runtime: Runtime
    forward: PreparedForward
    scored_paths: list[Path]  # the images the accuracy and agreement passes may score
    calibration: Optional[dict[str, Any]]  # summary.json `calibration`: which images calibrated int8


def prepare_runtime(sections: RunSections, family: DetectorFamily, network: LoadedNetwork, paths: list[Path],
                    console: Callable[[str], None], truth: Optional[GroundTruth] = None) -> PreparedRuntime:
    """`truth`: the run's labels (one per path), which judge int8's repair where its calibration images are the
    run's own."""
    runtime = sections.runtime
    spec = SPECS[runtime.backend]
    # The config refuses options a backend cannot take; each backend gets only its own.
    options = {key: getattr(runtime, key) for key in spec.options.model_fields}
    settings = RuntimeSettings(runtime.precision, runtime.threads, sections.model.fuse,
                               scenario_streams(runtime.streams, sections.benchmark.scenario), runtime.pinning,
                               usable_directory(runtime.cache_dir) if spec.caches else None)
    scored, calibration = paths, None
    if quantizes(runtime.precision):
        own = find_images(runtime.calibration.path) if runtime.calibration.path else None
        chosen, scored = calibration_split(paths, runtime.calibration.images, own)
        calibration = calibration_document(chosen, scored, Path(sections.dataset.path), runtime.calibration.path)
        inputs = calibration_inputs(family, network, sections.preprocess, sections.postprocess, chosen,
                                    runtime.calibration, sections.dataset.max_pixels)
        if runtime.calibration.accuracy_control:
            labels = None
            if truth is not None and own is None:
                where = {path: index for index, path in enumerate(paths)}
                labels = [truth.images[where[path]] for path in chosen]
                if not any(len(image) for image in labels):  # nothing to find: the stand-in judges instead
                    labels = None
            inputs = replace(inputs, control=selection_control(sections, family, network, chosen, labels, inputs))
        settings = replace(settings, calibration=inputs)
    built = build_runtime(runtime.backend, **vars(settings), **options)
    if spec.preparing is not None:
        # A file is read as it is: nothing is exported, so the spec's word on its export does not apply.
        console(f"Preparing {runtime.backend}" + (f" ({spec.preparing})..." if network.file is None else "..."))
        if quantizes(runtime.precision):
            console(f"int8: calibrating on {settings.calibration.images} images "
                    f"({calibration['source']}; the quantized model is cached too)...")
    forward = built.prepare(network, family.example_input(sections.preprocess))
    if runtime.streams == AUTO:
        console(f"runtime.streams auto: {built.streams} ({built.settings()['streams_auto']['why']})")
    return PreparedRuntime(built, forward, scored, calibration)


def selection_control(sections: RunSections, family: DetectorFamily, network: LoadedNetwork, chosen: list[Path],
                      labels: Optional[list], calibration: Calibration) -> AccuracyControl:
    """The accuracy control of int8 (utils.checks.int8.selection): the calibration images at mAP settings."""
    accuracy = sections.benchmark.accuracy
    postprocess, _ = map_postprocess(sections.postprocess, accuracy,
                                     family.defaults(sections.model.network, sections.model).evaluation.source)
    judging = JudgingPipeline(family, network, sections.preprocess, postprocess, sections.postprocess.conf_thres)
    judge = SelectionJudge(judging, chosen, sections.dataset.max_pixels, labels,
                           accuracy.judge_views if accuracy.label_free_truth == "mirrored" else 0)
    return accuracy_control(judge, accuracy.max_drop, calibration, sections.runtime.calibration.control_evaluations)
