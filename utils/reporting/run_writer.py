"""Turns a run record into the files of outputs/<run_id>/ (names from layout.py, and each measurement's tables
under the names it gives them), each written atomically.

summary.json is written first at the start (`status: running`) and last at the end, so it always describes
the files beside it. Between the two, the run's journal (utils/measure/steps/journal.py) keeps on disk what the passes measure.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

from utils.measure.layers import run_trace
from utils.measure.layers.chrome_trace import integer_ids, trace_origin_ns
from utils.measure.layers.tables import (layer_ops_frame, layer_timer_frame, layer_tree_text, layer_types_frame,
                                      top_self_frame)
from utils.record.run_record import RunRecord
from utils.measure.steps.statistics import STEP_SUMMARY_COLUMNS, summarize_steps
from utils.record.steps import STEP_TIMER_COLUMNS, step_rows
from utils.storage import layout
from utils.measure.below_layer.files import write_below_layer
from utils.storage.run_directory import RunDirectory
from utils.reporting.run_figures import flatten, headline_figures
from utils.reporting.run_report import TOP_LAYERS, LayerTables, render_run_report
from utils.reporting.summary import summary_document
from utils.reporting.tensorboard_events import write_tensorboard
from utils.scenarios.cameras.trace import camera_events, with_cameras


class RunWriter:
    def __init__(self, run_dir: RunDirectory, plots: bool, tensorboard: bool = False, report: bool = True):
        self.run_dir = run_dir
        self.plots = plots
        self.tensorboard = tensorboard
        self.report = report
        self.config: dict[str, Any] = {}
        self.environment: dict[str, Any] | None = None  # env.json, kept for the report

    def write_start(self, record: RunRecord, config_yaml: str, environment: dict[str, Any]) -> None:
        self.run_dir.write_text(layout.CONFIG, config_yaml)
        self.config = yaml.safe_load(config_yaml) or {}
        self.run_dir.write_json(layout.ENV, environment)
        self.environment = environment
        self.write_summary(record)

    def write_summary(self, record: RunRecord, step_summary: list[dict] | None = None,
                      extra: dict[str, Any] | None = None) -> dict[str, Any]:
        document = self._document(record, step_summary, extra)
        self.run_dir.write_json(layout.SUMMARY, document)
        return document

    @staticmethod
    def _document(record: RunRecord, step_summary: list[dict] | None, extra: dict[str, Any] | None) -> dict[str, Any]:
        document = summary_document(record, step_summary)
        document.update(extra or {})
        return document

    def write_layer_tables(self, record: RunRecord) -> LayerTables | None:
        """layer_timer.csv, layer_types.csv and layer_tree.txt from the record's layer timing (None without):
        after the layer pass, then again with what the later passes add."""
        if record.layer_timing is None:
            return None
        run_dir = self.run_dir
        profiled_layers = record.profile.layers if record.profile is not None else None
        kernels = record.below.kernel_by_path if record.below is not None else None
        layers = LayerTables(timer=layer_timer_frame(record.layer_timing, record.layer_timing_source,
                                                     profiled_layers, kernels),
                             types=layer_types_frame(record.layer_timing),
                             top=top_self_frame(record.layer_timing, TOP_LAYERS))
        run_dir.write_text(layout.LAYER_TIMER, layers.timer.to_csv(index=False))
        run_dir.write_text(layout.LAYER_TYPES, layers.types.to_csv(index=False))
        run_dir.write_text(layout.LAYER_TREE, layer_tree_text(record.layer_timing, profile=profiled_layers))
        return layers

    def _camera_tracks(self, record: RunRecord) -> None:
        """trace.json with one track per camera, merged into the one the profiler or the layer below wrote (on the
        profiler's Unix clock, or from the step timer's origin), or on its own."""
        streams = [row["stream"] for row in record.camera_streams.rows] if record.camera_streams is not None else []
        events = camera_events(record.camera_frames.rows, streams)
        if not events:
            return
        written = self.run_dir.path / layout.TRACE
        if written.exists():
            base = integer_ids(json.loads(written.read_text()))
        else:  # the timed passes' steps beside the cameras, from the step timer's origin
            base = run_trace.below_trace(None, 0, record.steps_origin_ns, run_trace.step_events(record.steps), [], [],
                                         {})
        shift_us = 0.0  # the events' clock is the run's: seconds from the step timer's origin
        if written.exists() and record.profile is not None:
            unix_minus_perf = (record.below.unix_minus_perf_ns if record.below is not None
                               else time.time_ns() - time.perf_counter_ns())
            shift_us = (unix_minus_perf - trace_origin_ns(base) + record.steps_origin_ns) / 1e3
        self.run_dir.write_text(layout.TRACE, json.dumps(with_cameras(base, events, streams, shift_us)))

    def write_record(self, record: RunRecord) -> dict[str, Any]:
        """Every table of the record, then the plots, TensorBoard events and report.html drawn from them, then
        summary.json."""
        run_dir, identity = self.run_dir, record.identity
        rows = step_rows(record.steps, record.steps_origin_ns)
        run_dir.write_csv(layout.STEPS_TIMER, rows, STEP_TIMER_COLUMNS)
        step_summary = summarize_steps(record.steps, identity.step_order)
        run_dir.write_csv(layout.STEPS_SUMMARY, step_summary, STEP_SUMMARY_COLUMNS)
        profiled_layers = record.profile.layers if record.profile is not None else None
        layers = self.write_layer_tables(record)
        if record.profile is not None:
            run_dir.write_text(layout.TRACE, record.profile.trace_json)
            run_dir.write_csv(layout.PROFILER_OPS, record.profile.ops.rows, record.profile.ops.columns)
        write_below_layer(run_dir, record)
        if record.camera_streams is not None:
            run_dir.write_csv(layout.CAMERAS, record.camera_streams.rows, record.camera_streams.columns)
        if record.camera_frames is not None:
            run_dir.write_csv(layout.CAMERA_FRAMES, record.camera_frames.rows, record.camera_frames.columns)
            self._camera_tracks(record)
        if profiled_layers is not None:
            run_dir.write_text(layout.LAYER_OPS, layer_ops_frame(profiled_layers).to_csv(index=False))
        for result in record.measured.values():
            for name, table in result.tables.items():
                run_dir.write_csv(name, table.rows, table.columns)
        if record.accuracy_classes is not None:
            run_dir.write_csv(layout.ACCURACY, record.accuracy_classes.rows, record.accuracy_classes.columns)
        extra: dict[str, Any] = {}
        plots: dict[str, Path] = {}  # layout name -> the PNG written
        if self.plots:
            # matplotlib's import only for runs that draw (tune's runs do not): benchmarks/overhead/startup_gc_pause.py times a start.
            from utils.reporting.plots import write_all_plots
            written = write_all_plots(run_dir.path, order=identity.step_order,
                                      note=identity.random_weights_note)
            extra["plots"] = [path.name for path in written]
            plots = {path.relative_to(run_dir.path).as_posix(): path for path in written}
        if self.tensorboard:
            extra["tensorboard"] = layout.TENSORBOARD_DIR
        if self.report:
            extra["report"] = layout.REPORT
        document = self._document(record, step_summary, extra)
        if self.tensorboard:
            write_tensorboard(run_dir.path, record, document, rows, flatten(self.config),
                              headline_figures(document))
        if self.report:
            run_dir.write_text(layout.REPORT, render_run_report(document, step_summary, self.environment, layers,
                                                                plots, identity.random_weights_note,
                                                                record.accuracy_classes.rows
                                                                if record.accuracy_classes is not None else ()))
        run_dir.write_json(layout.SUMMARY, document)
        return document
