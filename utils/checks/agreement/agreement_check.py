"""Equal detections, checked: the run's first images (or video frames) through the torch fp32 reference and through
the runtime under test, from the same images, compared raw and as detections (utils.checks.agreement.matching)."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

import numpy as np

from pipelines.contract import FORWARD_STAGE, DetectionPipeline
from utils.checks.reference import Reference
from utils.checks.agreement.matching import (MatchCounts, RawError, VerdictThresholds, agreement_summary, match_detections,
                                    raw_output_error, topk_threshold, verdict)
from utils.checks.scored_images import agreement_count
from utils.record.built_run import BuiltRun
from utils.record.sections import AgreementSection
from utils.checks.verdict import apply_budget, judged_counts, verdict_warnings


def compare_with_reference(candidate: DetectionPipeline, reference: DetectionPipeline,
                           batches: Iterable[list[np.ndarray]], top_k: int, conf_thres: float,
                           reference_name: str, thresholds: VerdictThresholds = VerdictThresholds()) -> dict[str, Any]:
    """With random weights almost no box clears conf_thres, so detections are also compared at the threshold
    that keeps the reference's top_k candidates per image (never above conf_thres), and raw outputs over those
    same top candidates. The verdict is judged at conf_thres when the reference shows enough detections
    there, at the top-k threshold otherwise (`judged_at`). Each pipeline prepares the batch itself: a runtime that
    takes the pixels gets them, the reference their floats, the same values (PreparedForward.input_dtype)."""
    matches, raw, images, used_thresholds = MatchCounts(), RawError(0.0, 0.0, 0), 0, []
    at_configured = MatchCounts()
    for batch in batches:
        forwarded, expected = _forwarded(candidate, batch), _forwarded(reference, batch)
        reference_raw = reference.raw_output(expected)
        raw = raw + raw_output_error(reference_raw, candidate.raw_output(forwarded), top_k,
                                     reference.candidate_scores)
        threshold = topk_threshold(reference.candidate_scores(reference_raw), top_k, conf_thres)
        used_thresholds.append(threshold)
        for wanted, found in zip(reference.postprocess_at(expected, threshold),
                                 candidate.postprocess_at(forwarded, threshold)):
            matches = matches + match_detections(wanted, found)
        for wanted, found in zip(reference.postprocess_at(expected, conf_thres),
                                 candidate.postprocess_at(forwarded, conf_thres)):
            at_configured = at_configured + match_detections(wanted, found)
        images += len(batch)
    judged, judged_at = judged_counts(at_configured, matches, images)
    summary = agreement_summary(
        matches, raw, thresholds, reference=reference_name, images=images, top_k=top_k,
        nms_conf_thres=min(used_thresholds, default=conf_thres),
        at_configured_conf_thres={"conf_thres": conf_thres, "reference_detections": at_configured.reference,
                                  "candidate_detections": at_configured.candidate,
                                  "loose_recall": at_configured.loose_recall,
                                  "loose_precision": at_configured.loose_precision,
                                  "strict_recall": at_configured.strict_recall,
                                  "strict_precision": at_configured.strict_precision})
    # The figures above stay as they were; the verdict is judged where a deployment looks (see verdict.py).
    return dict(summary, verdict=verdict(judged, raw, thresholds), judged_at=judged_at)


def _forwarded(pipeline: DetectionPipeline, batch: list[np.ndarray]) -> Any:
    value: Any = batch
    for stage in pipeline.stages():
        value = stage.run(value)
        if stage.name == FORWARD_STAGE:
            return value
    raise ValueError(f"{type(pipeline).__name__} has no {FORWARD_STAGE} stage")


def run_agreement_check(run: BuiltRun, reference: Reference, accuracy: Optional[dict],
                        console: Callable[[str], None]) -> tuple[AgreementSection, list[str]]:
    """Outside every timed pass: the reference runs the first scored images (with labels, unless
    benchmark.agreement.images says otherwise, the accuracy pass's). summary.json `agreement`, and the
    warnings a verdict other than equal gives."""
    sections, pipeline = run.sections, run.pipeline
    check = sections.benchmark.agreement
    count = agreement_count(check.images, "images" in check.model_fields_set, run.truth is not None,
                            (accuracy or {}).get("images", 0))
    console(f"Checking detections against the {reference.backend} fp32 reference on the first {count} scored "
            "images...")
    reference_pipeline = reference.pipeline(sections.postprocess)
    # The images that decode, in full batches: both pipelines see the same images.
    scored = run.scored
    decoded = [sample.image for batch in scored.of(scored.items[:count]) for sample in batch
               if sample.image is not None]
    size = sections.dataset.batch_size
    batches = [decoded[start:start + size] for start in range(0, len(decoded), size)]
    agreement = apply_budget(
        compare_with_reference(pipeline, reference_pipeline, batches, check.top_k, pipeline.score_threshold,
                               reference_name=reference.name),
        accuracy, sections.benchmark.accuracy.max_drop)
    return agreement, verdict_warnings(agreement)
