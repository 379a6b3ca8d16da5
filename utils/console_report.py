"""The short summary printed at the end of a run."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

_STEP_TABLE = ("step", "count", "images", "p50_ms", "p90_ms", "mean_ms", "share_of_pipeline", "ms_per_image",
               "cv_per_image")


def _fmt(value, spec: str = ".1f", missing: str = "n/a") -> str:
    return missing if value is None else format(value, spec)


def format_summary(summary: dict, run_path: Path) -> str:
    lines = [f"detbench run {summary['run_id']}: {summary['status']}",
             f"  model {summary['model']} ({'fused' if summary['fused'] else 'unfused'}), weights: {summary['weights']}",
             f"  images: {summary['images_processed']} processed, {summary['images_skipped']} skipped, "
             f"{summary['detections']} detections; {summary['timed_passes']} timed pass(es), "
             f"{summary['threads']} thread(s)"]
    latency = summary["pipeline_latency"]
    lines.append(f"  pipeline: {_fmt(latency['ms_per_image'])} ms/image, {_fmt(latency['images_per_s'], '.2f')} images/s "
                 f"(p50 {_fmt(latency['p50_ms_per_batch'])} ms per batch of {summary['batch_size']})")
    layer = summary.get("layer_timing")
    if layer:
        ratio = layer["hook_overhead_ratio"]
        lines.append(f"  layer hooks: overhead x{_fmt(ratio, '.3f')}, unattributed {_fmt(layer['unattributed_ms'])} ms "
                     f"of {_fmt(layer['model_forward_ms'])} ms model time")
    energy = summary["energy"]
    if energy.get("status") == "measured":
        per_image, watts = energy.get("joules_per_image") or {}, energy.get("average_watts") or {}
        domains = ", ".join(f"{domain} {_fmt(per_image.get(domain), '.2f')} J/image {_fmt(watts.get(domain), '.1f')} W"
                            for domain in energy["domains"])
        lines.append(f"  energy (RAPL): {domains}")
    else:
        lines.append(f"  energy: {energy.get('status')} ({energy.get('reason')})")
    memory = summary["memory"]
    if "peak_rss_mb" in memory:
        lines.append(f"  memory: baseline {_fmt(memory.get('baseline_rss_mb'), '.0f')} MiB, "
                     f"peak {_fmt(memory.get('peak_self_rss_mb'), '.0f')} MiB RSS of the process "
                     f"({_fmt(memory.get('peak_rss_mb'), '.0f')} MiB with loader workers, which share its pages)")
    steps_csv = run_path / "steps_summary.csv"
    if steps_csv.exists():
        table = pd.read_csv(steps_csv)
        if not table.empty:
            lines.append("")
            lines.append(table[list(_STEP_TABLE)].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for warning in summary.get("warnings", []):
        lines.append(f"WARNING: {warning}")
    lines.append(f"outputs: {run_path}")
    return "\n".join(lines)
