"""What the console shows: the layer overview after a run, and the summary that ends with the headline."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from utils.measure.layers.tables import layer_tree_text, top_self_table
from utils.record.layers import LayerProfile, TimingSnapshot
from utils.config.schema import SINGLE_STREAM
from utils.storage import layout
from utils.measure.below_layer.files import below_console_lines
from utils.checks.int8.repair_statement import control_entry, statement
from utils.reporting.peer_advice import peer_lines
from utils.measure.contract import section_in
from utils.measure.registry import measurements
from utils.record.sections import AccuracySection, AgreementSection, RecipeEntry, ScenarioSection, SourceSection
from utils.scenarios.cameras import report as cameras_report

_STEP_TABLE = ("step", "count", "images", "p50_ms", "p90_ms", "mean_ms", "share_of_pipeline", "ms_per_image",
               "spread_per_image", "repeat_spread")


def _fmt(value, spec: str = ".1f", missing: str = "n/a") -> str:
    return missing if value is None else format(value, spec)


def layer_overview(snapshot: TimingSnapshot, profile: LayerProfile | None = None) -> str:
    """With a profiled batch, its memory columns stand beside the instrumented pass's times."""
    return ("Pipeline tree, instrumented pass (every module: layer_tree.txt):\n"
            + layer_tree_text(snapshot, max_depth=1, profile=profile)
            + "Top 20 layers by self time (instrumented pass):\n" + top_self_table(snapshot, top=20, profile=profile))


def headline(summary: dict) -> str:
    """Under LoadGen the run's figure is the scenario's; the step times are then each stream's own."""
    latency = summary["pipeline_latency"]
    runtime = summary.get("runtime") or {}
    batch = latency.get("mean_images_per_batch")
    per_image = (f"{_fmt(latency['ms_per_image'])} ms/image (p50 {_fmt(latency.get('p50_ms_per_image'))} ms/image, "
                 f"{_fmt(batch, '.2g')} images per batch)")
    lead = (f"{summary['model']} on {runtime.get('backend', '?')} {runtime.get('precision', '')}, "
            f"{summary.get('threads')} thread(s): ")
    scenario: Optional[ScenarioSection] = summary.get("scenario")
    if summary.get("cameras"):
        return lead + cameras_report.headline(summary["cameras"]) + "; each batch " + per_image
    if not scenario:
        return lead + f"{_fmt(latency['images_per_s'], '.2f')} images/s, " + per_image
    streams = latency.get("streams", 1)
    return (lead + f"{scenario['name']} {scenario_figure(scenario)} (LoadGen); "
            + (f"each of {streams} streams " if streams > 1 else "") + per_image)


def scenario_figure(scenario: ScenarioSection) -> str:
    """The scenario's own figure (summary.json scenario.figure) with its value."""
    result = scenario.get("result") or {}
    if scenario["name"] == "multi_stream":
        return f"p99 query latency {_fmt((result.get('latency_ms') or {}).get('p99'))} ms"
    return f"{_fmt(result.get('samples_per_s'), '.2f')} samples/s"


def forward_bound_line(bound: dict) -> str:
    return (f"  offline on {bound['streams']} stream(s): the whole pipeline allows "
            f"{_fmt(bound['pipeline_samples_per_s'], '.2f')} samples/s, the forward alone "
            f"{_fmt(bound['forward_samples_per_s'], '.2f')} (what a runtime's own benchmark tool times): "
            f"{bound['outside_forward_share']:.1%} of each stream's time is spent outside the forward")


def scenario_line(scenario: ScenarioSection) -> str:
    """LoadGen's verdict in one line: valid or why not, samples/s and the tail latency."""
    result = scenario.get("result") or {}
    latency = result.get("latency_ms") or {}
    verdict = ("VALID" if result.get("valid") else
               f"INVALID ({result.get('reason')})" if result.get("valid") is False else "no result")
    return (f"  scenario {scenario['name']} under {scenario['driver']}: {verdict}; "
            f"{_fmt(result.get('samples_per_s'), '.2f')} samples/s, latency p50 {_fmt(latency.get('p50'), '.1f')} ms "
            f"p90 {_fmt(latency.get('p90'), '.1f')} ms p99 {_fmt(latency.get('p99'), '.1f')} ms "
            f"(LoadGen's own files: {scenario['logs']['summary']})")


def recipe_lines(recipe: RecipeEntry) -> list[str]:
    yours = f", with your {', '.join(recipe['yours'])}" if recipe.get("yours") else ""
    return [f"  recipe: {recipe['ground']}{yours}", f"    {recipe['said']}", f"    ({recipe['change']})"]


def format_summary(summary: dict, run_path: Path) -> str:
    lines = [f"detbench run {summary['run_id']}: {summary['status']}"
             + (f" ({summary['stop_reason']})" if summary.get("stop_reason") else ""),
             f"  model {summary['model']} ({'fused' if summary.get('fused') else 'unfused'}), "
             f"weights: {summary['weights']}",
             *(recipe_lines(summary["recipe"]) if summary.get("recipe") else []),
             f"  {'frames' if summary.get('source') else 'images'}: {summary['images_processed']} processed, "
             f"{summary['images_skipped']} skipped, {summary['detections']} detections; "
             f"{summary['timed_passes']} timed pass(es)"]
    if summary.get("source"):
        lines.append(source_console_line(summary["source"]))
    scenario: Optional[ScenarioSection] = summary.get("scenario")
    if scenario and "result" in scenario:  # LoadGen's verdict
        lines.append(scenario_line(scenario))
        if scenario.get("forward_bound"):
            lines.append(forward_bound_line(scenario["forward_bound"]))
    lines += peer_lines(summary.get("runtime") or {}, (scenario or {}).get("name", SINGLE_STREAM))
    control = control_entry(summary.get("runtime") or {})
    if control:
        lines.append(f"  {statement(control)}")
    layer = summary.get("layer_timing")
    if layer:
        lines.append(f"  layer hooks: overhead {layer.get('hook_overhead') or 'n/a'}; unattributed "
                     f"{_fmt(layer['unattributed_ms'])} ms of {_fmt(layer['model_forward_ms'])} ms model time")
    for measurement in measurements():
        lines += measurement.console(section_in(summary, measurement))
    if summary.get("cameras"):
        lines.extend(cameras_report.console_lines(summary["cameras"]))
    lines.extend(below_console_lines(summary))
    steps_csv = run_path / layout.STEPS_SUMMARY
    if steps_csv.exists():
        table = pd.read_csv(steps_csv)
        if not table.empty:
            lines.append("")
            lines.append(table[list(_STEP_TABLE)].to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep=""))
    for warning in summary.get("warnings", []):
        lines.append(f"WARNING: {warning}")
    lines.append(f"outputs: {run_path}")
    if summary.get("random_weights"):
        lines.append("RANDOM WEIGHTS: timings are real, boxes are not")
    lines.append(headline(summary))
    accuracy: Optional[AccuracySection] = summary.get("accuracy")
    if accuracy:
        lines.append(accuracy_line(accuracy))
    agreement: Optional[AgreementSection] = summary.get("agreement")
    if agreement:
        lines.append(f"detections vs {agreement['reference']}: {agreement['verdict'].upper()} (strict recall "
                     f"{_fmt(agreement['strict']['recall'], '.3f')}, precision {_fmt(agreement['strict']['precision'], '.3f')}; "
                     f"raw max error {_fmt(agreement['raw_output']['max_abs'], '.3g')} over the top "
                     f"{agreement['top_k']} candidates of {agreement['images']} images)"
                     + (f"; judged at conf_thres {agreement['at_configured_conf_thres']['conf_thres']}"
                        if agreement.get("judged_at") == "conf_thres" else ""))
        free = agreement.get("label_free")
        if free:
            lines.append(f"  without labels, {free['estimates']} over {free['images']} images: {free['statement']}")
    return "\n".join(lines)


def source_console_line(source: SourceSection) -> str:
    """A video run's frames: how many, chosen and decoded how, and what a reading of them met."""
    line = (f"  video: {len(source['videos'])} video(s), {source['frames']} frame(s) ({source['selection']}), decoded "
            f"in the loop as {source['step']} with {source['decoder_threads'] or 'FFmpeg-chosen'} decoder thread(s)")
    reading = source.get("reading")
    if reading:
        line += (f"; each pass decoded {reading['decoded']}, skipped {reading['corrupt_packets']} corrupt packet(s), "
                 f"{reading['not_decoded']} frame(s) not decoded")
    return line


def accuracy_line(accuracy: AccuracySection) -> str:
    """mAP of the accuracy pass, and beside a reference its drop with the interval and the budget."""
    against = ("labels" if "format" in accuracy["ground_truth"] else "the reference's detections"
               + (" on the mirror images" if (accuracy.get("drop") or {}).get("against") == "mirror images" else ""))
    if accuracy.get("not_scored"):
        return f"accuracy ({accuracy['images']} images vs {against}): NOT SCORED: {accuracy['not_scored']}"
    line = (f"accuracy ({accuracy['images']} images vs {against}): mAP@0.5:0.95 {_fmt(accuracy['map_50_95'], '.4f')}, "
            f"mAP@0.5 {_fmt(accuracy['map_50'], '.4f')}")
    shown = accuracy.get("at_conf_thres")
    if shown:
        line += (f"; at conf_thres {shown['conf_thres']}: precision {_fmt(shown['precision'], '.3f')}, recall "
                 f"{_fmt(shown['recall'], '.3f')}")
    drop = accuracy.get("drop")
    if drop:
        line += (f"; reference {_fmt(accuracy['reference']['map_50_95'], '.4f')}, drop "
                 f"{_fmt(drop['map_50_95'], '+.4f')}")
        interval = drop.get("interval")
        if interval:
            line += (f" ({interval['confidence']:.0%} interval over images {_fmt(interval['low'], '+.4f')} to "
                     f"{_fmt(interval['high'], '+.4f')})")
    return line
