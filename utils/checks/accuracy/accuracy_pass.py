"""The accuracy pass: the run's pipeline at mAP settings over the images (or video frames, each read again from
its video), after the timed passes and never inside them, then the COCO evaluation (utils.checks.accuracy.coco_map) against the labels or, without labels, against
what stands in for them (utils.checks.accuracy.label_free): the torch fp32 reference's detections on mirror views of the
images, or on the images themselves.

Its steps are recorded with `pass_kind` `accuracy` (steps_timer.csv), which no statistic reads, and no
measurement listens to it (each one's `listens_in`, utils/measure/registry.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from datasets.item_batches import Item, ItemBatches
from datasets.labels import GroundTruth
from pipelines.contract import FORWARD_STAGE, DetectionPipeline, Detections
from pipelines.settings import SHARED_POSTPROCESS
from utils.measure.listening import PassRecorders
from utils.core.progress import terminal_bar
from utils.checks.reference import REFERENCE_NAME, Reference
from utils.measure.steps.timed_batch import PassPlace, batch_loop, run_stages
from utils.checks.scored_images import more_images
from utils.checks.accuracy.coco_map import (CLASS_COLUMNS, coco_evaluation, crowd_flags, map_drop_interval,
                                   precision_recall_at)
from utils.checks.accuracy.label_free import (CONFIDENCE, JUDGE_VIEWS, MIRRORED, JudgeView, Resampling, StandInJudge,
                                              drop_over_views, from_view, label_free_verdict, pseudo_labels, stand_in,
                                              view_image)
from utils.record.built_run import BuiltRun
from utils.record.run_record import Table
from utils.record.sections import AccuracySection
from utils.record.steps import FETCH_STEPS, PassKind
from utils.measure.steps.step_timer import StepTimer
from utils.storage import layout



def map_postprocess(postprocess: Any, accuracy: Any, protocol: str) -> tuple[Any, dict[str, Any]]:
    """The postprocess section at mAP settings (the architecture's protocol, or the config's accuracy keys), and
    the settings as summary.json states them. multi_label is None where the family has no such choice."""
    settings = {key: getattr(accuracy, key) for key in SHARED_POSTPROCESS}
    if accuracy.multi_label is not None:
        settings["multi_label"] = accuracy.multi_label
    return postprocess.model_copy(update=settings), dict(settings, protocol=protocol, preprocess=accuracy.preprocess)


def deployed_settings(postprocess: Any) -> dict[str, Any]:
    """The run's own postprocess, as summary.json states what precision and recall at conf_thres used."""
    return {key: getattr(postprocess, key) for key in SHARED_POSTPROCESS}


def detect(pipeline: DetectionPipeline, images: ItemBatches, description: str, timer: Optional[StepTimer] = None,
           view: Optional[JudgeView] = None) -> list[Optional[Detections]]:
    """One Detections per item of `images` (None where the image cannot be decoded), decoded and batched as it
    says. With a timer, the batches are recorded as the accuracy pass. `view`: of each image as that judge view
    shows it, in the image's own pixels."""
    return detect_as_deployed(pipeline, None, images, description, timer, view)[0]


def detect_as_deployed(pipeline: DetectionPipeline, deployed: Optional[DetectionPipeline], images: ItemBatches,
                       description: str, timer: Optional[StepTimer] = None, view: Optional[JudgeView] = None,
                       ) -> tuple[list[Optional[Detections]], Optional[list[Optional[Detections]]]]:
    """As detect(), and with `deployed` (the run's own pipeline: same preprocess and forward) the same forward
    outputs postprocessed as deployed too: at its conf_thres and its NMS IoU, not the mAP settings'."""
    found: list[Optional[Detections]] = []
    shown: Optional[list[Optional[Detections]]] = [] if deployed is not None else None
    stages = pipeline.stages()
    after_forward = [stage.name for stage in stages].index(FORWARD_STAGE) + 1

    def run(batch: list) -> tuple[list[Detections], Optional[list[Detections]]]:
        steps = timer or StepTimer()
        forwarded = run_stages(stages[:after_forward], steps,
                               [view_image(i, view) for i in batch] if view is not None else batch)
        detections = run_stages(stages[after_forward:], steps, forwarded)
        if view is not None:
            detections = [from_view(found, view, *image.shape[:2]) for found, image in zip(detections, batch)]
        return detections, (deployed.postprocess_at(forwarded, deployed.score_threshold)
                             if deployed is not None else None)

    place = PassPlace(PassKind.ACCURACY, fetch_step=FETCH_STEPS[images.kind])
    with terminal_bar(len(images.items), description) as progress:
        for result in batch_loop(iter(images), range(len(images)), run, timer, place):
            detections, as_deployed = result.output or ([], [])
            results, deployed_results = iter(detections), iter(as_deployed or [])
            found.extend(None if sample.image is None else next(results) for sample in result.samples)
            if shown is not None:
                shown.extend(None if sample.image is None else next(deployed_results) for sample in result.samples)
            progress.update(len(result.samples))
    return found, shown


@dataclass
class AccuracyResult:
    summary: AccuracySection  # summary.json `accuracy`
    classes: Table  # accuracy.csv


@dataclass(frozen=True)
class PassDetections:
    """What the accuracy pass detected, one entry per image it scores (None where the image did not decode): the
    candidate's at mAP settings; the reference's at mAP settings; the candidate's as deployed (`shown`: its
    conf_thres and NMS IoU); per judge view, the reference's on it (`views`, mapped back)."""

    candidate: Sequence[Optional[Detections]]
    reference: Optional[Sequence[Optional[Detections]]] = None
    shown: Optional[Sequence[Optional[Detections]]] = None
    views: Optional[Sequence[Sequence[Optional[Detections]]]] = None


@dataclass(frozen=True)
class Scoring:
    """How evaluate() scores and what it states: the mAP settings as summary.json states them, the deployed
    conf_thres (and postprocess, `deployed`), the bootstrap's resamples and seed, the budget (`max_drop`), the
    reference's name in summary.json and the judge's name in the label-free verdict."""

    settings: dict[str, Any]
    conf_thres: float
    bootstrap: int
    seed: int
    reference_name: str = REFERENCE_NAME
    deployed: Optional[dict[str, Any]] = None
    max_drop: Optional[float] = None
    judge: str = "torch fp32"


def evaluate(found: PassDetections, truth: Optional[GroundTruth], class_names: Sequence[str],
             scoring: Scoring) -> AccuracyResult:
    """mAP of the candidate (and of the reference, with the drop) over the images both could decode. Precision
    and recall at conf_thres are of `shown` (the detections as deployed: conf_thres and the deployed NMS IoU)
    when given, else of the candidate's mAP-settings detections above conf_thres. Without labels, `views` (per
    judge view, the reference's detections on it) stand in for them: the figures are against the first view, the
    drop and the label-free verdict averaged over all; without views, the reference's own detections stand in."""
    started = time.perf_counter()
    candidate, reference, shown, views = found.candidate, found.reference, found.shown, found.views
    conf_thres, bootstrap, seed = scoring.conf_thres, scoring.bootstrap, scoring.seed
    usable = [i for i, image in enumerate(candidate)
              if image is not None and (reference is None or reference[i] is not None)
              and all(view[i] is not None for view in views or ())]
    dets = [candidate[i] for i in usable]
    if truth is not None:
        truths = [truth.images[i] for i in usable]
        source = {"source": truth.source, "format": truth.format, "mapping": truth.mapping,
                  "objects": sum(int((~crowd_flags(t)).sum()) for t in truths),
                  "crowd_regions": sum(int(crowd_flags(t).sum()) for t in truths),
                  "images_without_labels": sum(1 for i in usable if i < len(truth.images) and not len(truth.images[i]))}
        against = "labels"
    else:
        judges = [[view[i] for i in usable] for view in views] if views else None
        truths = pseudo_labels(judges[0] if judges else [reference[i] for i in usable], conf_thres)
        stood_in = stand_in(MIRRORED if judges else "reference", conf_thres, len(judges) if judges else 1,
                            scoring.judge)
        source = {"source": f"{stood_in}, as a deployment shows them (no dataset.labels)"
                            + ("; mAP figures against the plain mirror view" if judges and len(judges) > 1 else ""),
                  "objects": sum(len(t.labels) for t in truths)}
        against = "mirror images" if judges else "reference"
    result = coco_evaluation(truths, dets, class_names)
    # Labels with no object to find leave mAP undefined: the reason stands in place of figures that read as 0.0.
    scored = truth is None or result.objects > 0
    figures = ("map_50_95", "map_50", "map_75", "ar_100")
    summary: AccuracySection = {
        "ground_truth": source, "images": len(usable), "images_not_decoded": len(candidate) - len(usable),
        "settings": scoring.settings, **{key: getattr(result, key) if scored else None for key in figures},
        "detections": result.detections,
    }
    if not scored:
        summary["not_scored"] = no_objects_reason(len(usable), source["crowd_regions"])
    if truth is not None and scored:
        at_deployed = [shown[i] for i in usable] if shown is not None else dets
        summary["at_conf_thres"] = dict(precision_recall_at(truths, at_deployed, conf_thres),
                                        **({"postprocess": scoring.deployed} if scoring.deployed else {}))
    rows = [dict(row) for row in result.classes]
    if reference is not None and scored:
        refs = [reference[i] for i in usable]
        mine = coco_evaluation(truths, refs, class_names)
        summary["reference"] = {"name": scoring.reference_name, "map_50_95": mine.map_50_95, "map_50": mine.map_50,
                                "map_75": mine.map_75}
        resamples = bootstrap if len(usable) > 1 else 0
        measured, drawn = None, Resampling(bootstrap or 200, seed)  # the label-free verdict's, even at 0
        if truth is None and judges:
            # The mean over the views, at the figure the budget is set in (mAP@0.5:0.95); drawn as the label-free
            # verdict draws it, which takes it as it is instead of measuring it again.
            measured = drop_over_views([pseudo_labels(view, conf_thres) for view in judges], refs, dets,
                                       resampling=drawn)
            drop, low, high = measured.estimate, measured.low, measured.high
            spread = {"low": low, "high": high, "confidence": CONFIDENCE} if resamples else None
        else:
            drop = mine.map_50_95 - result.map_50_95
            interval = map_drop_interval(truths, refs, dets, resamples=resamples, seed=seed) if resamples else None
            spread = None if interval is None else {"low": interval.low, "high": interval.high,
                                                    "confidence": interval.confidence}
        summary["drop"] = {
            "map_50_95": drop, "against": against, **({"judge_views": len(judges)} if truth is None and judges else {}),
            "interval": None if spread is None else dict(spread, resamples=resamples, seed=seed, over="images")}
        if truth is None and scoring.max_drop is not None:
            summary["label_free"] = label_free_verdict(refs, dets, StandInJudge(conf_thres, judges, scoring.judge),
                                                       scoring.max_drop, drawn, measured)
        reference_ap = {row["class_id"]: row["ap_50_95"] for row in mine.classes}
        for row in rows:
            row["reference_ap_50_95"] = reference_ap.get(row["class_id"])
    summary["evaluation_s"] = time.perf_counter() - started
    summary["file"] = layout.ACCURACY
    columns = CLASS_COLUMNS + (("reference_ap_50_95",) if reference is not None and scored else ())
    return AccuracyResult(summary, Table(rows, columns))


def no_objects_reason(images: int, crowd_regions: int) -> str:
    """Why labels that hold no object to find cannot score a run."""
    held = (f"only {crowd_regions} iscrowd region(s), which COCOeval ignores" if crowd_regions
            else "no labelled box (empty label files)")
    return (f"the {images} scored image(s) hold {held}: with no object to find, mAP is undefined, so there is no "
            "mAP, no drop and no budget verdict. Score images whose labels hold objects (dataset.labels, "
            "benchmark.accuracy.images)")


def accuracy_images(items: Sequence[Item], images: Optional[int], labelled: bool, agreement_images: int) -> list[Item]:
    """`benchmark.accuracy.images`, or all images (or frames) with labels and agreement.images without."""
    count = images if images is not None else (len(items) if labelled else agreement_images)
    return list(items[:count])


def progress_line(console: Callable[[str], None], count: int, labelled: bool, with_reference: bool,
                  views: int = 0) -> None:
    against = ("the labels" if labelled else "the reference's detections"
               + ("" if not views else " on the mirror images" if views == 1 else f" on {views} mirror views"))
    extra = " (and the reference, for the drop)" if with_reference and labelled else ""
    console(f"Accuracy pass: {count} images at mAP settings, scored against {against}{extra}...")



def run_accuracy_pass(run: BuiltRun, reference: Optional[Reference], recorders: PassRecorders,
                      console: Callable[[str], None]) -> Optional[AccuracyResult]:
    """mAP at the accuracy settings, outside the timed passes: against the labels, and with a reference the
    drop; without labels, against the reference's detections, with the label-free verdict, which scores more
    of the run's scored images while it is undecided and more images would decide it (up to
    benchmark.accuracy.max_images). None when there is nothing to score against."""
    sections, family, pipeline, truth, scored = run.sections, run.family, run.pipeline, run.truth, run.scored
    settings = sections.benchmark.accuracy
    if not settings.enabled or (truth is None and reference is None):
        return None
    chosen = accuracy_images(scored.items, settings.images, truth is not None, sections.benchmark.agreement.images)
    first_used = len(chosen)
    postprocess, stated = map_postprocess(sections.postprocess, settings,
                                          family.defaults(sections.model.network, sections.model).evaluation.source)
    mirror = truth is None and reference is not None and settings.label_free_truth == MIRRORED
    judge_views = JUDGE_VIEWS[:settings.judge_views] if mirror else ()
    progress_line(console, len(chosen), truth is not None, reference is not None, len(judge_views))
    official = settings.preprocess == "official"
    # Where the official evaluation letterboxes differently, what a deployment shows needs the run's own forwards.
    shown_apart = official and family.EVALUATION_PREPROCESS is not None
    if official:
        stated["preprocess_is"] = family.EVALUATION_PREPROCESS or "the run's own (the family evaluates as it deploys)"
    candidate_pipeline = family.build_pipeline(run.network, run.forward, sections.preprocess, postprocess, official)
    scoring = Scoring(stated, pipeline.score_threshold, settings.bootstrap, sections.seed,
                      reference.name if reference is not None else REFERENCE_NAME,
                      deployed_settings(sections.postprocess), settings.max_drop,
                      f"{reference.backend} fp32" if reference is not None else "torch fp32")
    candidate: list = []
    shown: list = []
    found_by_reference = [] if reference is not None else None
    on_views: list[list] = [[] for _ in judge_views]
    while True:
        new = scored.of(chosen[len(candidate):])
        with recorders.listening(PassKind.ACCURACY):
            # The run's own pipeline postprocesses the same forwards as deployed, for precision/recall at conf_thres.
            found, as_deployed = detect_as_deployed(candidate_pipeline, None if shown_apart else pipeline, new,
                                                    "accuracy pass", recorders.timer)
        if shown_apart:
            as_deployed = detect(pipeline, new, "as deployed, for precision and recall")
        candidate += found
        shown += as_deployed
        if reference is not None:
            found_by_reference += detect(reference.pipeline(postprocess, official), new, "reference at mAP settings")
        for number, (view, found_on_view) in enumerate(zip(judge_views, on_views), 1):
            found_on_view += detect(reference.pipeline(postprocess, official), new,
                                    f"reference on mirror view {number} of {len(judge_views)}", view=view)
        result = evaluate(PassDetections(candidate, found_by_reference, shown, on_views or None), truth,
                          run.network.class_names, scoring)
        wanted = more_images(result.summary.get("label_free"), len(chosen), len(scored.items), settings.max_images)
        if wanted is None:
            break
        console(f"Label-free verdict undecided on {len(chosen)} images: scoring {wanted} (cap "
                f"benchmark.accuracy.max_images {settings.max_images})...")
        chosen = list(scored.items[:wanted])
    result.summary["images_first_used"] = first_used
    return result
