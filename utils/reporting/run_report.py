"""report.html: one self-contained page that answers "how fast, where the time goes, at what cost, and are
the answers right" for a finished run, built from the summary document and the tables the writer already holds.

Charts are inline SVG whose bars carry their details as hover text; the PNG plots are embedded; the page loads
nothing and runs no script, so it opens offline at once.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from utils.storage import layout
from utils.checks.int8.repair_statement import control_entry, statement
from utils.measure.below_layer.report import SECTION as BELOW_SECTION, below_section
from utils.storage.html_page import Bar, HtmlPage, escape, format_cell
from utils.scenarios.cameras import report as cameras_report
from utils.measure.layers.path_labels import shorten
from utils.measure.contract import Measurement, section_in
from utils.measure.registry import measurements
from utils.record.sections import AccuracySection, AgreementSection, ScenarioSection, measured

TOP_LAYERS = 20
TYPES_SHOWN = 15
PATHS_PER_TYPE = 3
# tab10, the palette of the PNG plots, so a type keeps its colour from one view to the other
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
# (steps_summary.csv column, header): the columns people quote, the rest stay in the CSV
STEP_COLUMNS = (("step", "step"), ("count", "batches"), ("images", "images"), ("p50_ms", "p50 ms"),
                ("p90_ms", "p90 ms"), ("p50_ms_per_image", "p50 ms/image"), ("p90_ms_per_image", "p90 ms/image"),
                ("spread_per_image", "spread over images"), ("repeat_spread", "spread over passes"),
                ("share_of_pipeline", "share"), ("images_per_s", "images/s"))
FRACTION_COLUMNS = ("spread_per_image", "repeat_spread", "share_of_pipeline")  # shown as percentages
VERDICT_TONES = {"equal": "good", "close": "warn", "within_budget": "warn", "different": "bad"}
# The page's own sections in order; a measurement's goes after the one its PageSection names (page_sections). A
# camera run's section follows the steps (only in a camera run).
HARNESS_SECTIONS = (("steps", "Steps"), (cameras_report.ANCHOR, cameras_report.TITLE), ("layers", "Layers"),
                    ("agreement", "Agreement"), ("accuracy", "Accuracy"), ("environment", "Environment"),
                    ("trace", "Trace"), BELOW_SECTION)
ACCURACY_COLUMNS = (("class_id", "class"), ("class_name", "name"), ("objects", "objects"),
                    ("detections", "detections"), ("ap_50_95", "AP@0.5:0.95"), ("ap_50", "AP@0.5"),
                    ("ap_75", "AP@0.75"), ("ar_100", "AR@100"), ("reference_ap_50_95", "reference AP@0.5:0.95"))


@dataclass(frozen=True)
class PageEntry:
    """One section of the page: the harness's own (measurement None) or a measurement's."""
    anchor: str
    title: str
    measurement: Optional[Measurement] = None


def page_sections() -> list[PageEntry]:
    """The page's sections in order: each measurement's right after the section its `after` names, those after
    the same one in registry order."""
    following: dict[str, list[Measurement]] = {}
    for measurement in measurements():
        if measurement.page is not None:
            following.setdefault(measurement.page.after, []).append(measurement)
    entries: list[PageEntry] = []

    def place(anchor: str, title: str, measurement: Optional[Measurement]) -> None:
        entries.append(PageEntry(anchor, title, measurement))
        for follower in following.pop(anchor, []):
            place(follower.page.anchor, follower.page.title, follower)

    for anchor, title in HARNESS_SECTIONS:
        place(anchor, title, None)
    if following:
        raise ValueError(f"report.html has no section {', '.join(following)} for "
                         f"{', '.join(m.key for waiting in following.values() for m in waiting)} to follow")
    return entries


def page_measurements() -> list[Measurement]:
    """The measurements with a section of the page, in the page's order (the order their plots are drawn in)."""
    return [entry.measurement for entry in page_sections() if entry.measurement is not None]


@dataclass(frozen=True)
class LayerTables:
    """The layer tables of the run: `timer` as layer_timer.csv, `types` as layer_types.csv, `top` the heaviest
    call paths by self time (layer_tables.top_self_frame)."""
    timer: pd.DataFrame
    types: pd.DataFrame
    top: pd.DataFrame


def _number(value: Any, unit: str = "") -> str:
    """4 significant digits, thousands grouped from 10,000 up (never 2.6e+04 ms)."""
    return "n/a" if value is None or pd.isna(value) else f"{format_cell(float(value))}{unit}"


def _share(value: Any) -> str:
    return "" if value is None or pd.isna(value) else f"{value:.1%}"


def _shapes(text: Any) -> Optional[str]:
    """layer_timer.csv keeps shapes as JSON text; '[[1, 3, 160, 160]]' reads better as 1x3x160x160."""
    if not isinstance(text, str) or not text:
        return None
    try:
        shapes = json.loads(text)
    except ValueError:
        return text

    def spell(shape: Any) -> str:
        if isinstance(shape, list) and all(isinstance(dim, int) for dim in shape):
            return "x".join(str(dim) for dim in shape)
        if isinstance(shape, list):
            return ", ".join(spell(part) for part in shape)
        return str(shape)
    return spell(shapes)


def verdict_label(agreement: AgreementSection) -> str:
    return f"detections vs {agreement['reference']}"


def headline_cells(summary: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The figures at the top of the page, each the summary.json value itself."""
    latency, forward = summary["pipeline_latency"], summary.get("forward") or {}
    streams = latency.get("streams", 1)
    figures: list[tuple[str, Any]] = [("images/s (pipeline)" if streams == 1 else f"images/s per stream ({streams})",
                                       latency.get("images_per_s"))]
    agreement: Optional[AgreementSection] = summary.get("agreement")
    if agreement:  # beside the speed: a faster configuration that changes the answers is no win
        figures.append((verdict_label(agreement), agreement["verdict"].upper()))
    accuracy: Optional[AccuracySection] = summary.get("accuracy")
    if accuracy:
        figures.append(("mAP@0.5:0.95", accuracy["map_50_95"]))
        if accuracy.get("drop"):
            figures.append(("mAP drop vs reference", accuracy["drop"]["map_50_95"]))
    figures += [("p50 ms per image", latency.get("p50_ms_per_image")),
                ("p90 ms per image", latency.get("p90_ms_per_image")),
                ("forward p50 ms per image", forward.get("p50_ms_per_image"))]
    for measurement in page_measurements():
        figures += measurement.page.headline(section_in(summary, measurement))
    if summary.get("cameras"):  # what the cameras were served comes first
        figures[:0] = cameras_report.headline_cells(summary["cameras"])
    scenario: Optional[ScenarioSection] = summary.get("scenario")
    if scenario and "result" in scenario:  # LoadGen's verdict first: an invalid result is not the scenario's figure
        result = scenario.get("result") or {}
        latency = result.get("latency_ms") or {}
        verdict = {True: "VALID", False: "INVALID", None: "no result"}[result.get("valid")]
        first = [(f"{scenario['name']} (LoadGen)", verdict),
                 (f"{scenario['name']} samples/s", result.get("samples_per_s")),
                 (f"{scenario['name']} latency p99 ms", latency.get("p99"))]
        bound = scenario.get("forward_bound")
        if bound:  # what a runtime's own benchmark tool would time: the forward alone
            first.append(("forward alone samples/s", bound["forward_samples_per_s"]))
        figures[:0] = first
    return [(label, "n/a" if value is None else value) for label, value in figures]


def _subtitle(summary: Mapping[str, Any]) -> str:
    runtime = summary.get("runtime") or {}
    status = summary["status"] + (f" ({summary['stop_reason']})" if summary.get("stop_reason") else "")
    return (f"{summary['model']} ({'fused' if summary.get('fused') else 'unfused'}) on {runtime.get('backend', '?')} "
            f"{runtime.get('precision', '')}, {summary.get('threads')} thread(s), image size {summary['img_size']}, "
            f"batch {summary['batch_size']}; weights: {summary['weights']}. {summary['images_processed']} "
            f"{'frames' if summary.get('source') else 'images'} processed, {summary['images_skipped']} skipped, "
            f"{summary['timed_passes']} timed pass(es).{_source_words(summary.get('source'))} "
            f"Status: {status}; started {summary['started_utc']}, ended {summary.get('ended_utc') or 'n/a'}.")


def _source_words(source: Optional[Mapping[str, Any]]) -> str:
    """A video run's frames in a sentence: how chosen and decoded, and what each pass met (summary.json source)."""
    if not source:
        return ""
    reading = source.get("reading") or {}
    met = (f"; each pass skipped {reading['corrupt_packets']} corrupt packet(s) and {reading['not_decoded']} "
           "frame(s) not decoded" if reading else "")
    return (f" Video frames of {source['path']} ({source['selection']}), decoded in the loop as the step "
            f"{source['step']}{met}.")


def _steps(page: HtmlPage, summary: Mapping[str, Any], step_summary: Sequence[Mapping[str, Any]],
           plots: Mapping[str, Path]) -> None:
    page.heading("Steps", "steps")
    if not step_summary:
        page.paragraph("No timed batch was recorded, so there are no step statistics.")
        return
    page.paragraph(f"Pipeline latency: {summary['pipeline_latency']['definition']} Times in ms per batch unless "
                   "the column says per image; quote the medians (p50).")
    rows = [[_share(row.get(column)) if column in FRACTION_COLUMNS else row.get(column)
             for column, _ in STEP_COLUMNS] for row in step_summary]
    page.table([header for _, header in STEP_COLUMNS], rows, text_columns=("step",),
               row_titles=[f"{row['step']}: inside {row.get('parent') or 'the run'}; mean "
                           f"{_number(row['mean_ms'], ' ms')}, max {_number(row['max_ms'], ' ms')}, "
                           f"{row['outliers']} outlier(s)" for row in step_summary])
    page.paragraph(f"Every statistic (mean, std, p99, max, IQR, outliers): {layout.STEPS_SUMMARY}.")
    if layout.STEP_LATENCY_PLOT in plots:
        page.image(plots[layout.STEP_LATENCY_PLOT], "latency per pipeline step over the timed batches")


def type_colors(tables: LayerTables) -> dict[str, str]:
    """One colour per layer type, heaviest type first, the same in both layer charts."""
    kinds = dict.fromkeys([*tables.types["type"], *tables.top["type"]])
    return {str(kind): PALETTE[i % len(PALETTE)] for i, kind in enumerate(kinds)}


def _type_bars(tables: LayerTables, colors: Mapping[str, str]) -> list[Bar]:
    types = tables.types.head(TYPES_SHOWN)
    per_forward = "mean_self_ms_per_forward"
    value_column = per_forward if types[per_forward].notna().all() else "self_ms"
    bars = []
    for row in types.itertuples(index=False):
        heaviest = tables.timer[tables.timer["type"] == row.type].nlargest(PATHS_PER_TYPE, "self_ms")
        paths = "\n".join(f"  {path}: {_number(ms, ' ms')}" for path, ms in zip(heaviest["path"], heaviest["self_ms"]))
        value = getattr(row, value_column)
        bars.append(Bar(
            label=str(row.type), value=float(value),
            value_text=f"{_number(value, ' ms')}  {_share(row.share_of_forward)}",
            tooltip=(f"type {row.type}\ncalls {row.calls}\nself {_number(row.self_ms, ' ms')} in total, "
                     f"{_number(getattr(row, per_forward), ' ms')} per forward\n"
                     f"share of the forward {_share(row.share_of_forward)}"
                     + (f"\nheaviest call paths:\n{paths}" if paths else "")),
            color=colors[str(row.type)]))
    return bars


def _top_bars(tables: LayerTables, colors: Mapping[str, str]) -> list[Bar]:
    shapes = tables.timer.drop_duplicates("path").set_index("path")
    bars = []
    for row in tables.top.itertuples(index=False):
        details = [f"path {row.path}", f"type {row.type}", f"calls {row.calls}",
                   f"self {_number(row.self_ms, ' ms')} in total, {_number(row.mean_self_ms, ' ms')} per call",
                   f"share of the pipeline {_share(row.share_of_pipeline)}"]
        if row.path in shapes.index:
            inputs = _shapes(shapes.at[row.path, "input_shapes"])
            outputs = _shapes(shapes.at[row.path, "output_shapes"])
            if inputs or outputs:
                details.append(f"shapes {inputs or '?'} -> {outputs or '?'}")
        per_call = f" ({_number(row.mean_self_ms, ' ms/call')})" if row.calls > 1 else ""
        bars.append(Bar(label=shorten(row.path), value=float(row.self_ms),
                        value_text=f"{_number(row.self_ms, ' ms')}{per_call}", tooltip="\n".join(details),
                        color=colors[str(row.type)]))
    return bars


def _flops(gflops_per_image: Optional[float]) -> str:
    if not gflops_per_image:  # runtimes that report layers by node name give no shapes to count MACs from
        return "FLOPs not counted for this runtime"
    return f"{_number(gflops_per_image)} GFLOPs per image"


def _layers(page: HtmlPage, summary: Mapping[str, Any], tables: Optional[LayerTables]) -> None:
    page.heading("Layers", "layers")
    timing = summary.get("layer_timing")
    if tables is None or timing is None or tables.types.empty:
        page.paragraph("No per-layer timing in this run (benchmark.layer_timing is off, or the runtime cannot "
                       "report layers, e.g. with runtime.compile).")
        return
    page.paragraph(f"From the instrumented pass ({timing['source']}, {timing['forwards']} forward(s), "
                   f"{timing['images']} image(s)); hook overhead {timing.get('hook_overhead') or 'n/a'}. "
                   f"{_flops(timing.get('gflops_per_image'))}; unattributed "
                   f"{_number(timing['unattributed_ms'], ' ms')} of "
                   f"{_number(timing['model_forward_ms'], ' ms')} model time. "
                   "Hover a bar for its call paths, calls and shapes.")
    colors = type_colors(tables)
    page.raw("<h3>Self time per layer type (per forward; share of the forward)</h3>")
    page.bar_chart(_type_bars(tables, colors))
    if not tables.top.empty:
        bars = _top_bars(tables, colors)
        page.raw(f"<h3>Top {len(bars)} layers by self time (instrumented pass)</h3>")
        page.bar_chart(bars, legend={kind: colors[str(kind)] for kind in dict.fromkeys(tables.top["type"])})
    page.paragraph(f"Every layer: {layout.LAYER_TIMER}, {layout.LAYER_TYPES}, {layout.LAYER_TREE}.")


def _agreement(page: HtmlPage, summary: Mapping[str, Any]) -> None:
    """The verdict against the reference, then what accuracy-aware int8 returned to float."""
    _verdict(page, summary)
    _int8_control(page, summary)


def _verdict(page: HtmlPage, summary: Mapping[str, Any]) -> None:
    page.heading("Agreement", "agreement")
    agreement: Optional[AgreementSection] = summary.get("agreement")
    if not agreement:
        runtime = summary.get("runtime") or {}
        page.paragraph(f"No agreement check: {runtime.get('backend')} {runtime.get('precision')} is the reference "
                       "itself, or benchmark.agreement.enabled is off.")
        return
    page.paragraph(f"Verdict: {agreement['verdict'].upper()} against {agreement['reference']}, over the first "
                   f"{agreement['images']} image(s) and the top {agreement['top_k']} candidates per image.")
    free = agreement.get("label_free")
    if free:
        page.paragraph(f"Without labels, the verdict estimates {free['estimates']}, over {free['images']} images: "
                       f"{free['statement']}.")
    raw, loose, strict = agreement["raw_output"], agreement["loose"], agreement["strict"]
    configured = agreement.get("at_configured_conf_thres") or {}
    page.table(("comparison", "recall", "precision", "detail"), [
        ("loose (same class, IoU >= 0.5)", loose["recall"], loose["precision"], f"{loose['matches']} matches"),
        ("strict (IoU >= 0.9, scores within 0.01)", strict["recall"], strict["precision"],
         f"{strict['matches']} matches"),
        (f"strict at conf_thres {configured.get('conf_thres')}", configured.get("strict_recall"),
         configured.get("strict_precision"), f"{configured.get('reference_detections')} reference detections"),
        ("raw output, max / mean abs error", None, None,
         f"{_number(raw['max_abs'], '')} / {_number(raw['mean_abs'], '')} "
         f"over {raw['candidates']} candidates"),
    ], text_columns=("comparison", "detail"))
    page.details("thresholds of the verdict", json.dumps(agreement.get("thresholds"), indent=1))


def _int8_control(page: HtmlPage, summary: Mapping[str, Any]) -> None:
    """Under Agreement: what accuracy-aware int8 returned to float, at what cost, and the steps of its search."""
    entry = control_entry(summary.get("runtime") or {})
    if not entry:
        return
    page.paragraph(statement(entry) + ".")
    if entry.get("worst"):
        reverted = list(entry.get("reverted") or [])
        names = {unit["name"] for unit in reverted}
        shown = reverted + [unit for unit in entry["worst"] if unit["name"] not in names]
        page.table(("operation or block", "drop won back alone", "operations", "returned to float"),
                   [(unit["name"], unit["cost"], unit.get("operations", 1), "yes" if unit["name"] in names else "no")
                    for unit in shown], text_columns=("operation or block", "returned to float"))
    if entry.get("steps"):
        page.table(("returned to float", "drop", "forward / fp32"),
                   [(step["reverted"], step["drop"], step["forward_vs_fp32"]) for step in entry["steps"]])


def _accuracy(page: HtmlPage, summary: Mapping[str, Any], classes: Sequence[Mapping[str, Any]]) -> None:
    page.heading("Accuracy", "accuracy")
    accuracy: Optional[AccuracySection] = summary.get("accuracy")
    if not accuracy:
        page.paragraph("No accuracy pass: set dataset.labels to score the run's detections (mAP), or run another "
                       "runtime than the fp32 reference to score it against that reference.")
        return
    truth = accuracy["ground_truth"]
    page.paragraph(f"{accuracy['images']} image(s) at {json.dumps(accuracy['settings'])}, scored against "
                   f"{truth['source']} ({truth['objects']} objects) by faster-coco-eval (COCOeval).")
    if accuracy.get("not_scored"):
        page.paragraph(f"Not scored: {accuracy['not_scored']}.")
        return
    rows = [("mAP@0.5:0.95", accuracy["map_50_95"]), ("mAP@0.5", accuracy["map_50"]),
            ("mAP@0.75", accuracy["map_75"]), ("AR@100", accuracy["ar_100"])]
    shown = accuracy.get("at_conf_thres")
    if shown:
        rows += [(f"precision at conf_thres {shown['conf_thres']}", shown["precision"]),
                 (f"recall at conf_thres {shown['conf_thres']}", shown["recall"])]
    drop = accuracy.get("drop")
    if drop:
        rows += [(f"reference ({accuracy['reference']['name']}) mAP@0.5:0.95", accuracy["reference"]["map_50_95"]),
                 ("mAP@0.5:0.95 drop", drop["map_50_95"])]
        if drop.get("interval"):
            rows.append((f"drop, {drop['interval']['confidence']:.0%} bootstrap interval over images",
                         f"{drop['interval']['low']:+.4f} to {drop['interval']['high']:+.4f}"))
    page.table(("figure", "value"), rows, text_columns=("figure",))
    if classes:
        present = [(key, title) for key, title in ACCURACY_COLUMNS if key in classes[0]]
        page.table([title for _, title in present], [[row.get(key) for key, _ in present] for row in classes],
                   text_columns=("name",))


def _flatten(prefix: str, value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, Mapping):
        return [item for key, inner in value.items() for item in _flatten(f"{prefix}.{key}" if prefix else key, inner)]
    if isinstance(value, (list, tuple)):
        return [(prefix, ", ".join(str(part) for part in value))]
    return [(prefix, value)]


def _environment(page: HtmlPage, summary: Mapping[str, Any], environment: Optional[Mapping[str, Any]]) -> None:
    page.heading("Environment", "environment")
    environment = dict(environment or {})
    build = environment.pop("torch_build_config", None)
    runtime = environment.pop("runtime", None) or summary.get("runtime") or {}
    variables = {name: value for name, value in (environment.pop("thread_variables", None) or {}).items()
                 if value is not None}
    allocator = {name: value for name, value in (environment.pop("allocator_variables", None) or {}).items()
                 if value is not None}
    rows = _flatten("", environment)
    rows.append(("thread variables", ", ".join(f"{name}={value}" for name, value in variables.items()) or "none set"))
    rows.append(("allocator variables", ", ".join(f"{name}={value}" for name, value in allocator.items())
                 or "none set (the C library's malloc with its defaults)"))
    rows += [(f"runtime.{key}", value) for key, value in _flatten("", runtime)]
    for measurement in measurements():
        rows += measurement.environment(section_in(summary, measurement))
    page.table(("setting", "value"), rows, text_columns=("setting", "value"))
    if build:
        page.details("torch build configuration", build)


def _trace(page: HtmlPage, summary: Mapping[str, Any]) -> None:
    page.heading("Trace", "trace")
    profiler = summary.get("profiler")
    cameras = measured(summary.get("cameras"))
    if cameras:
        page.paragraph(f"{layout.TRACE} holds one track per camera: its frames' batches (detect), each frame "
                       "dropped, and its latency as a counter; open it in Perfetto (ui.perfetto.dev) or "
                       "chrome://tracing.")
    if not profiler and summary.get("trace"):
        page.paragraph(f"{summary['trace']} holds the timed passes' steps with py-spy's stacks and the CPU counters "
                       "on the same clock: open it in Perfetto (ui.perfetto.dev) or chrome://tracing.")
        return
    if not profiler:
        if not cameras:
            page.paragraph("No trace in this run: set benchmark.profiler: true to profile one batch and write "
                           f"{layout.TRACE}.")
        return
    trace = escape(profiler["trace"])
    page.paragraph(f"{profiler['trace']} in this directory holds one profiled batch (Chrome trace format, "
                   f"{_number(profiler['wall_ms'], ' ms')}; profiler overhead "
                   f"{profiler.get('forward_overhead') or 'n/a'}). To look at it:")
    page.raw("<ol>"
             f"<li>Perfetto: open ui.perfetto.dev in a browser, choose <b>Open trace file</b> and pick "
             f"<code>{trace}</code> (the file is read in the browser, not uploaded).</li>"
             f"<li>Chrome or Chromium: open <code>chrome://tracing</code>, press <b>Load</b> and pick "
             f"<code>{trace}</code>.</li></ol>")
    page.paragraph(f"The operator table of the same batch is {profiler['ops_csv']}.")


def render_run_report(summary: Mapping[str, Any], step_summary: Sequence[Mapping[str, Any]],
                      environment: Optional[Mapping[str, Any]], layers: Optional[LayerTables],
                      plots: Mapping[str, Path], random_weights_note: Optional[str],
                      accuracy_classes: Sequence[Mapping[str, Any]] = ()) -> str:
    """`plots` maps the run directory's plot names to the PNGs written for this run; the ones present are
    embedded."""
    page = HtmlPage(f"detbench run {summary['run_id']}")
    page.paragraph(_subtitle(summary))
    if random_weights_note:
        page.banner(f"{random_weights_note}. Timings, FLOPs and memory are real.")
    agreement: Optional[AgreementSection] = summary.get("agreement")
    tones = {verdict_label(agreement): VERDICT_TONES.get(agreement["verdict"], "")} if agreement else None
    page.headline(headline_cells(summary), tones)
    page.warnings(summary.get("warnings") or [])
    harness = {"steps": partial(_steps, page, summary, step_summary, plots),
               "layers": partial(_layers, page, summary, layers), "agreement": partial(_agreement, page, summary),
               "accuracy": partial(_accuracy, page, summary, accuracy_classes),
               "environment": partial(_environment, page, summary, environment), "trace": partial(_trace, page, summary),
               BELOW_SECTION[0]: partial(below_section, page, summary),
               cameras_report.ANCHOR: partial(cameras_report.page_section, page, summary.get("cameras"), plots)}
    sections = [entry for entry in page_sections() if entry.anchor != cameras_report.ANCHOR or summary.get("cameras")]
    page.links([(entry.anchor, entry.title) for entry in sections])
    for entry in sections:
        if entry.measurement is None:
            harness[entry.anchor]()
        else:
            page.heading(entry.title, entry.anchor)
            entry.measurement.page.render(page, section_in(summary, entry.measurement), plots)
    return page.render()
