"""The run's runtime, prepared from the config: each backend gets only its own options, int8 is calibrated on
images (or video frames) the scored passes never use, and `runtime.streams: auto` is resolved by the runtime
itself."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional

from datasets.item_batches import ItemBatches
from datasets.labels import GroundTruth
from datasets.sources.dataset import find_dataset
from datasets.sources.frame_batches import item_batches
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
from utils.assembly.dataset_setup import decode_settings
from utils.record.built_run import RunSections


@dataclass
class PreparedRuntime:
    runtime: Runtime
    forward: PreparedForward
    scored: ItemBatches  # the images or frames the accuracy and agreement passes may score
    calibration: Optional[dict[str, Any]]  # summary.json `calibration`: which images calibrated int8


def prepare_runtime(sections: RunSections, family: DetectorFamily, network: LoadedNetwork, dataset: ItemBatches,
                    console: Callable[[str], None], truth: Optional[GroundTruth] = None) -> PreparedRuntime:
    """`dataset`: the run's items; `truth`: their labels (one per item), which judge int8's repair where its
    calibration images are the run's own."""
    runtime = sections.runtime
    spec = SPECS[runtime.backend]
    # The config refuses options a backend cannot take; each backend gets only its own.
    options = {key: getattr(runtime, key) for key in spec.options.model_fields}
    settings = RuntimeSettings(runtime.precision, runtime.threads, sections.model.fuse,
                               scenario_streams(runtime.streams, sections.benchmark.scenario), runtime.pinning,
                               usable_directory(runtime.cache_dir) if spec.caches else None)
    scored, calibration = dataset, None
    if quantizes(runtime.precision):
        own = (item_batches(find_dataset(runtime.calibration.path, None, decode_settings(sections.dataset)), 1)
               if runtime.calibration.path else None)
        chosen, scored_items = calibration_split(dataset.items, runtime.calibration.images,
                                                 own.items if own is not None else None)
        scored = dataset.of(scored_items)
        calibrating = (own if own is not None else dataset).of(chosen, 1)
        calibration = calibration_document(chosen, scored_items, Path(sections.dataset.path), runtime.calibration.path)
        inputs = calibration_inputs(family, network, sections.preprocess, sections.postprocess, calibrating,
                                    runtime.calibration)
        if runtime.calibration.accuracy_control:
            labels = None
            if truth is not None and own is None:
                where = {item: index for index, item in enumerate(dataset.items)}
                labels = [truth.images[where[item]] for item in chosen]
                if not any(len(image) for image in labels):  # nothing to find: the stand-in judges instead
                    labels = None
            inputs = replace(inputs, control=selection_control(sections, family, network, calibrating, labels,
                                                               inputs))
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


def selection_control(sections: RunSections, family: DetectorFamily, network: LoadedNetwork, chosen: ItemBatches,
                      labels: Optional[list], calibration: Calibration) -> AccuracyControl:
    """The accuracy control of int8 (utils.checks.int8.selection): the calibration images at mAP settings."""
    accuracy = sections.benchmark.accuracy
    postprocess, _ = map_postprocess(sections.postprocess, accuracy,
                                     family.defaults(sections.model.network, sections.model).evaluation.source)
    judging = JudgingPipeline(family, network, sections.preprocess, postprocess, sections.postprocess.conf_thres)
    judge = SelectionJudge(judging, chosen, labels, accuracy.judge_views if accuracy.label_free_truth == "mirrored" else 0)
    return accuracy_control(judge, accuracy.max_drop, calibration, sections.runtime.calibration.control_evaluations)
