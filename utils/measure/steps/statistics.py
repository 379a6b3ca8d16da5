"""Per-step statistics over the timed passes (the rows of steps_summary.csv) and the overhead of the
instrumented passes, both derived from raw StepRecords."""
from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence

from pipelines.contract import FORWARD_STAGE
from utils.record.statistics import describe, repeat_spread
from utils.record.steps import PIPELINE_STEP, RUN_STEP, PassKind, StepRecord

STEP_SUMMARY_COLUMNS = ("step", "parent", "count", "images", "mean_ms", "std_ms", "min_ms", "p50_ms", "p90_ms",
                        "p99_ms", "max_ms", "total_ms", "cv", "iqr_ms", "outliers", "share_of_pipeline",
                        "ms_per_image", "images_per_s", "p50_ms_per_image", "cv_per_image", "spread_per_image",
                        "repeat_spread", "mean_images_per_batch", "p90_ms_per_image")


def timed_records(records: Iterable[StepRecord]) -> list[StepRecord]:
    """Steps of the clean timed passes, of batches that held images: warm-up, hooked and profiled passes and
    batches whose every file was skipped would distort the figures. So would a batch whose input shape runs
    for the first time (cold_shape): it is left out while any warm batch is measured; a run that has none
    (benchmark.warmup 0 on one batch) keeps it, and warns (see cold_shape_warning)."""
    timed = [r for r in records if r.pass_kind is PassKind.TIMED and r.images > 0 and r.step != RUN_STEP]
    warm = [r for r in timed if not r.cold_shape]
    return warm if warm else timed


def summarize_steps(records: Iterable[StepRecord], order: Sequence[str] = ()) -> list[dict]:
    """Outliers are counted, never dropped. Statistics are per batch; p50 and CV are also given per image,
    which stays comparable when batch sizes differ. Rows follow `order`, unknown steps after it."""
    grouped: dict[str, list[StepRecord]] = defaultdict(list)
    for record in timed_records(records):
        grouped[record.step].append(record)
    pipeline_total = sum(r.ms for r in grouped.get(PIPELINE_STEP, []))
    summary = []
    for step, step_records in grouped.items():
        stats = describe([r.ms for r in step_records])
        per_image = describe([r.ms / r.images for r in step_records])
        images = sum(r.images for r in step_records)
        total = stats["total"]
        by_batch: dict[int, list[float]] = defaultdict(list)  # a batch holds the same images in every pass
        for r in step_records:
            by_batch[r.batch].append(r.ms / r.images)
        summary.append({
            "step": step,
            "parent": step_records[0].parent or "",
            "count": stats["count"],
            "images": images,
            "mean_ms": stats["mean"], "std_ms": stats["std"], "min_ms": stats["min"], "p50_ms": stats["p50"],
            "p90_ms": stats["p90"], "p99_ms": stats["p99"], "max_ms": stats["max"], "total_ms": total,
            "cv": stats["cv"], "iqr_ms": stats["iqr"], "outliers": stats["outliers"],
            "share_of_pipeline": total / pipeline_total if pipeline_total else None,
            "ms_per_image": total / images if images else None,
            "images_per_s": images / (total / 1000.0) if images and total else None,
            "p50_ms_per_image": per_image["p50"],
            "cv_per_image": per_image["cv"],
            "spread_per_image": per_image["spread"],
            "repeat_spread": repeat_spread(by_batch.values()),
            "mean_images_per_batch": images / stats["count"],
            "p90_ms_per_image": per_image["p90"],
        })
    position = {name: i for i, name in enumerate(order)}
    summary.sort(key=lambda row: position.get(row["step"], len(position)))
    return summary


def _forward_ms_per_image(records: Iterable[StepRecord], kind: PassKind, step: str) -> dict[int, list[float]]:
    by_batch: dict[int, list[float]] = {}
    for r in records:
        if r.step == step and r.pass_kind is kind and r.images and not r.cold_shape:
            by_batch.setdefault(r.batch, []).append(r.ms / r.images)
    return by_batch


def overhead_ratio(records: Sequence[StepRecord], instrumented: PassKind, step: str = FORWARD_STAGE) -> float | None:
    """Median over batches of (instrumented time / median clean time of the same batch), per image."""
    clean = _forward_ms_per_image(records, PassKind.TIMED, step)
    hooked = _forward_ms_per_image(records, instrumented, step)
    ratios = [statistics.median(hooked[b]) / statistics.median(clean[b])
              for b in hooked if b in clean and statistics.median(clean[b]) > 0]
    return statistics.median(ratios) if ratios else None


def cold_batch_times(records: Iterable[StepRecord]) -> dict[int, dict[str, float]]:
    """Batch -> step -> ms of the timed batches that ran an input shape for the first time."""
    times: dict[int, dict[str, float]] = {}
    for r in records:
        if r.cold_shape and r.pass_kind is PassKind.TIMED and r.step != RUN_STEP:
            times.setdefault(r.batch, {})[r.step] = r.ms
    return times


def cold_shape_warning(records: Sequence[StepRecord]) -> str | None:
    """Words for cold batches: left out of the statistics, or (when nothing warm was timed) the whole of them."""
    timed = [r for r in records if r.pass_kind is PassKind.TIMED and r.images > 0 and r.step == PIPELINE_STEP]
    cold = [r for r in timed if r.cold_shape]
    if not cold:
        return None
    if len(cold) == len(timed):
        return ("every timed batch ran its input shape for the first time (cold start): the statistics are "
                "cold-start figures; set benchmark.warmup: auto to warm every shape up first")
    return (f"{len(cold)} timed batch(es) ran an input shape for the first time (cold start): they are left out "
            "of the statistics and listed in summary.json warmup.cold_shapes; raise benchmark.warmup_max_batches "
            "(or use benchmark.warmup: auto) to warm every shape up first")
