"""Per-step statistics over the timed passes: the rows of steps_summary.csv."""
from __future__ import annotations

from collections import defaultdict

from utils.statistics import describe

STEP_SUMMARY_COLUMNS = ("step", "parent", "count", "images", "mean_ms", "std_ms", "min_ms", "p50_ms", "p90_ms",
                        "p99_ms", "max_ms", "total_ms", "cv", "iqr_ms", "outliers", "share_of_pipeline",
                        "ms_per_image", "images_per_s", "p50_ms_per_image", "cv_per_image")
PIPELINE_STEP = "pipeline"


def summarize_steps(rows: list[dict], timed_passes: set[str]) -> list[dict]:
    """Warm-up rows and rows of instrumented passes are excluded; outliers are counted, never dropped.

    Statistics are per batch; p50 and CV are also given per image, which stays comparable when batch
    sizes differ."""
    grouped: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row["pass"] in timed_passes and not row["warmup"]:
            grouped[row["step"]].append(row)
    pipeline_total = sum(r["ms"] for r in grouped.get(PIPELINE_STEP, []))
    summary = []
    for step, step_rows in grouped.items():
        stats = describe([r["ms"] for r in step_rows])
        # Batches of different sizes (the last one is often short) only compare per image.
        per_image = describe([r["ms"] / r["images"] for r in step_rows if r["images"]])
        images = sum(r["images"] for r in step_rows)
        total = stats["total"]
        summary.append({
            "step": step,
            "parent": step_rows[0]["parent"] or "",
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
        })
    order = {name: i for i, name in enumerate(
        (PIPELINE_STEP, "load", "preprocess", "forward", "postprocess", "nms", "scale_boxes", "annotate_save"))}
    summary.sort(key=lambda r: order.get(r["step"], len(order)))
    return summary
