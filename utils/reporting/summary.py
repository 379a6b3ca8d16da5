"""summary.json: the run record's identity, headline figures and each measurement's section in one document.

Derived here from raw data on every write, so the document written at the start (`status: running`), after an
interruption and at the end always agrees with the CSVs beside it.
"""
from __future__ import annotations

from typing import Any, Optional

from pipelines.contract import FORWARD_STAGE
from utils.record.run_record import RunRecord
from utils.measure.steps.statistics import cold_batch_times, cold_shape_warning, overhead_ratio, summarize_steps
from utils.record.steps import ANNOTATE_STEP, DECODE_FRAMES_STEP, LOAD_STEP, PIPELINE_STEP, PassKind
from utils.measure.steps.stream_rates import forward_bound
from utils.storage import layout
from utils.measure.below_layer.files import below_summary
from utils.measure.registry import measurements
from utils.record.sections import NOT_MEASURED_YET

NOISE_WARNING = 0.10  # interquartile range over median, the spread torch.utils.benchmark flags at 10%
MATERIAL_SHARE = 0.05
PIPELINE_LATENCY_DEFINITION = (
    "per batch: {fetch} + the pipeline's stages ({stages}); annotate_save is excluded "
    "and reported separately. Timed passes only, warm-up, instrumented passes and batches without images excluded.")
# What each fetch step of a batch holds, in the definition's words.
FETCH_WORDS = {LOAD_STEP: "load (wait for the data loader; under LoadGen, for samples it holds decoded in memory)",
               DECODE_FRAMES_STEP: "decode_frames (reading and decoding the batch's video frames, in the loop)"}
STREAMS_LATENCY_NOTE = (
    " With {streams} streams answering at once (LoadGen's, or a camera run's detectors), each batch is timed on its "
    "own stream: images_per_s is one stream's rate (1000 / ms_per_image), not the run's; the run's rate is the "
    "scenario's figure.")


def overhead_verdict(ratio: Optional[float]) -> Optional[str]:
    """Words for an instrumented/clean ratio: below 1 cannot be a cost, only the machine's noise."""
    if ratio is None:
        return None
    if ratio < 1.0:
        return f"x{ratio:.3f}: below 1, so within the machine's noise (no measurable overhead)"
    return f"x{ratio:.3f}: the instrumented pass ran {ratio - 1:.1%} slower than the timed passes"


def noisy_steps_warning(step_summary: list[dict]) -> Optional[str]:
    """Noise is judged on the same batch timed again (`repeat_spread`), not on the spread over images, which also
    holds how much the images differ (steps that run once by design, as annotate_save, are then not judged). A run
    whose passes never repeated a batch is judged by the spread over images, and the words say it mixes the two."""
    # Sub-millisecond steps always scatter; warn where the spread moves the pipeline's numbers.
    material = [s for s in step_summary if s["count"] > 1 and (s["share_of_pipeline"] or 0) >= MATERIAL_SHARE]
    pipeline = next((s for s in step_summary if s["step"] == PIPELINE_STEP), {})
    if pipeline.get("repeat_spread") is not None:
        noisy = [f"{s['step']} {s['repeat_spread']:.0%}" for s in material
                 if s.get("repeat_spread") is not None and s["repeat_spread"] > NOISE_WARNING]
        return (f"noisy timings, the same batch differing from pass to pass by more than {NOISE_WARNING:.0%} "
                f"(interquartile range over median, median over batches): {', '.join(noisy)}; quote medians (p50), "
                "and repeat on a quieter machine or with more repeats") if noisy else None
    spread = [f"{s['step']} {s['spread_per_image']:.0%}" for s in material
              if s.get("spread_per_image") is not None and s["spread_per_image"] > NOISE_WARNING]
    return (f"timings spread over images by more than {NOISE_WARNING:.0%} (interquartile range over median per "
            f"image): {', '.join(spread)}; no batch was timed twice, so the machine's noise cannot be told from the "
            "images' own differences: time the same images in 2 passes or more (benchmark.repeats) to tell them "
            "apart") if spread else None


def summary_document(record: RunRecord, step_summary: Optional[list[dict]] = None) -> dict[str, Any]:
    identity = record.identity
    if step_summary is None:
        step_summary = summarize_steps(record.steps, identity.step_order)
    by_step = {s["step"]: s for s in step_summary}
    pipeline, forward = by_step.get(PIPELINE_STEP, {}), by_step.get(FORWARD_STAGE, {})
    warnings = list(record.warnings)
    noisy = noisy_steps_warning(step_summary)
    if noisy:
        warnings.append(noisy)
    cold = cold_shape_warning(record.steps)
    if cold:
        warnings.append(cold)
    stages = [name for name in identity.step_order if name not in (PIPELINE_STEP, *FETCH_WORDS, ANNOTATE_STEP)]
    # The fetch the timed batches ran (LoadGen's, from memory, where its warm-up decoded frames), else the order's.
    fetches = [name for name in identity.step_order if name in FETCH_WORDS]
    fetches = [name for name in fetches if name in by_step] or fetches
    streams = (record.scenario or {}).get("streams", 1)
    definition = PIPELINE_LATENCY_DEFINITION.format(fetch=" + ".join(FETCH_WORDS[name] for name in fetches),
                                                    stages=" + ".join(stages))
    if streams > 1:
        definition += STREAMS_LATENCY_NOTE.format(streams=streams)
    document: dict[str, Any] = {
        "schema_version": identity.schema_version,
        "detbench_version": identity.detbench_version,
        "run_id": identity.run_id,
        "status": record.status,
        "stop_reason": record.stop_reason,
        "started_utc": identity.started_utc,
        "ended_utc": record.ended_utc,
        "config_file": identity.config_file,
        "family": identity.family,
        "model": identity.arch,
        "weights": identity.weights,
        "random_weights": identity.random_weights,
        "fused": identity.runtime.get("fused"),
        "runtime": identity.runtime,
        "img_size": identity.img_size,
        "batch_size": identity.batch_size,
        "threads": identity.runtime.get("threads"),
        "images_found": record.images.found,
        "images_processed": record.images.processed,
        "images_skipped": record.images.skipped,
        "detections": record.images.detections,
        "timed_passes": record.timed_passes,
        "images_timed": pipeline.get("images", 0),
        "pipeline_latency": {
            "definition": definition,
            "streams": streams,
            "p50_ms_per_batch": pipeline.get("p50_ms"),
            "mean_ms_per_batch": pipeline.get("mean_ms"),
            "mean_images_per_batch": pipeline.get("mean_images_per_batch"),
            "ms_per_image": pipeline.get("ms_per_image"),
            "p50_ms_per_image": pipeline.get("p50_ms_per_image"),
            "p90_ms_per_image": pipeline.get("p90_ms_per_image"),
            "images_per_s": pipeline.get("images_per_s"),
            "repeat_spread": pipeline.get("repeat_spread"),  # the machine's noise: steps_summary.csv's column
        },
        "forward": {"p50_ms_per_batch": forward.get("p50_ms"), "p50_ms_per_image": forward.get("p50_ms_per_image"),
                    "cv_per_image": forward.get("cv_per_image"), "ms_per_image": forward.get("ms_per_image"),
                    "repeat_spread": forward.get("repeat_spread")},
        "steps": {s["step"]: {"total_ms": s["total_ms"], "p50_ms": s["p50_ms"], "share_of_pipeline":
                              s["share_of_pipeline"], "images_per_s": s["images_per_s"]} for s in step_summary},
        "wall_s": record.wall_s,
        **measured_sections(record),
        "warnings": warnings,
        "notes": list(record.notes),
    }
    if record.scenario is not None:
        bound = forward_bound(record.scenario["name"], streams, pipeline.get("ms_per_image"),
                              forward.get("ms_per_image"))
        document["scenario"] = dict(record.scenario, **({"forward_bound": bound} if bound else {}))
    if record.cameras is not None:
        document["cameras"] = record.cameras
    if record.source is not None:
        document["source"] = record.source
    if record.warmup is not None:
        document["warmup"] = warmup_with_cold_times(record)
    if record.agreement is not None:
        document["agreement"] = record.agreement
    if record.accuracy is not None:
        document["accuracy"] = record.accuracy
    if record.calibration is not None:
        document["calibration"] = record.calibration
    if record.recipe is not None:
        document["recipe"] = record.recipe
    if record.layer_timing is not None:
        timing = record.layer_timing
        ratio = overhead_ratio(record.steps, PassKind.LAYERS)
        document["layer_timing"] = {
            "pass": PassKind.LAYERS.value,
            "source": record.layer_timing_source,
            "hook_overhead_ratio": ratio,
            "hook_overhead": overhead_verdict(ratio),
            "model_forward_ms": timing.model_total_ms,
            "unattributed_ms": timing.unattributed_ms,
            "forwards": timing.forwards,
            "images": timing.images,
            "gflops_per_forward": timing.flops_per_forward / 1e9,
            "gflops_per_image": (timing.flops_per_image or 0) / 1e9 if timing.images else None,
            "files": list(layout.LAYER_FILES),
        }
    document.update(below_summary(record))
    if record.profile is not None:
        ratio = overhead_ratio(record.steps, PassKind.PROFILER)
        document["profiler"] = {"trace": layout.TRACE, "ops_csv": layout.PROFILER_OPS,
                                "wall_ms": record.profile.wall_ms, "forward_overhead_ratio": ratio,
                                "forward_overhead": overhead_verdict(ratio)}
        if record.profile.layers is not None:
            document["profiler"]["layer_ops_csv"] = layout.LAYER_OPS
    return document


def warmup_with_cold_times(record: RunRecord) -> dict[str, Any]:
    """The warm-up's plan, each cold batch with what its pipeline and forward took when it ran."""
    times = cold_batch_times(record.steps)
    document = dict(record.warmup)
    document["cold_shapes"] = [dict(cold, pipeline_ms=times.get(cold["batch"], {}).get(PIPELINE_STEP),
                                    forward_ms=times.get(cold["batch"], {}).get(FORWARD_STAGE))
                               for cold in record.warmup["cold_shapes"]]
    return document


def measured_sections(record: RunRecord) -> dict[str, Any]:
    """Every registered measurement's section under its key, in registry order; one not collected yet says so."""
    return {measurement.key: record.measured[measurement.key].section if measurement.key in record.measured
            else {"status": NOT_MEASURED_YET} for measurement in measurements()}
