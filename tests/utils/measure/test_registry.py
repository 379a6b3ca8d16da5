"""The registry of measurements (utils/measure/registry.py): what each real one declares holds together, and a
measurement registered in a test reaches summary.json, the console, report.html, its files, the journal,
TensorBoard and the compared figures with no line of the harness changed (its plot, in a whole run:
tests/whole_runs/test_registered_measurement.py)."""
import importlib
import json
import operator
from pathlib import Path

import pandas as pd

from tests.support import fake_measurement as fake
from tests.support.paths import CONFIGS
from utils.config.schema import load_config
from utils.measure.listening import PassRecorders
from utils.measure.registry import measurements
from utils.measure.steps.journal import RunJournal
from utils.record.run_record import RunIdentity, RunRecord, Status
from utils.record.sections import NOT_MEASURED_YET
from utils.record.steps import PassKind
from utils.reporting.console import format_summary
from utils.reporting.run_figures import headline_figures
from utils.reporting.run_report import page_measurements
from utils.reporting.run_writer import RunWriter
from utils.reporting.summary import summary_document
from utils.storage import layout
from utils.storage.run_directory import RunDirectory


def settings(*overrides: str) -> dict:
    """Each measurement's config section, as the composition root hands them over."""
    config = load_config(CONFIGS / "samples_tiny.yaml", list(overrides))
    return {m.key: operator.attrgetter(m.config_key)(config) for m in measurements() if m.config_key}


def identity() -> RunIdentity:
    return RunIdentity(run_id="fake", config_file="x.yaml", family="yolo", arch="yolov7-tiny",
                       weights="random (seed 0)", random_weights=True, seed=0, img_size=160, batch_size=1,
                       runtime={"backend": "torch", "precision": "fp32", "threads": 1},
                       step_order=("pipeline", "load", "forward"))


def test_the_real_measurements_build_from_their_config_sections_and_own_distinct_keys_and_files():
    assert [m.key for m in measurements()] == ["energy", "memory", "contention"]
    sections = settings()
    assert set(sections) == {"energy", "memory"}  # contention takes no settings
    for measurement in measurements():
        assert measurement.build(sections.get(measurement.key)) is not None
    harness_keys = set(summary_document(RunRecord(identity())))
    assert {m.key for m in measurements()} <= harness_keys  # each under its own key, none shadowed
    plots = [plot.file for m in measurements() for plot in m.plots]
    assert all(plot.startswith(layout.PLOTS_DIR + "/") for plot in plots)
    files = [file for m in measurements() for file in m.files] + plots
    harness_files = {value for name, value in vars(layout).items() if name.isupper() and isinstance(value, str)}
    assert len(files) == len(set(files)) and not set(files) & harness_files
    assert [m.key for m in page_measurements()] == ["memory", "energy"]
    for plot in (plot for m in measurements() for plot in m.plots):
        module, _, name = plot.draw.partition(":")
        assert callable(getattr(importlib.import_module(module), name))


def test_each_measurement_writes_only_the_files_it_declares(tmp_path):
    recorders = PassRecorders.built(settings())
    journal = RunJournal(tmp_path / layout.STEPS_TIMER, recorders.timer.records, recorders.timer.origin_ns)
    record = RunRecord(identity())
    record.steps = recorders.timer.records
    run_through_passes(recorders, journal)
    journal.close()
    recorders.collect(record)
    assert list(record.measured) == ["energy", "memory", "contention"]
    for measurement, recording in recorders.recordings:
        declared = set(measurement.files)
        assert set(record.measured[measurement.key].tables) <= declared
        assert {table.file for table in recording.growing_tables()} <= declared
    assert set(record.measured["memory"].tables) == {"memory.csv", "memory_steps.csv"}


def test_disabled_sections_say_so():
    record = RunRecord(identity())
    recorders = PassRecorders.built(settings("benchmark.energy.enabled=false", "benchmark.memory.enabled=false"))
    with recorders.running(), recorders.listening(PassKind.TIMED):
        pass
    recorders.collect(record)
    assert record.measured["energy"].section == {
        "status": "unavailable", "reason": "disabled by the config (benchmark.energy.enabled: false)"}
    assert record.measured["memory"].section == {"status": "disabled"}
    assert record.measured["energy"].tables == record.measured["memory"].tables == {}


def run_through_passes(recorders: PassRecorders, journal: RunJournal) -> None:
    """A warm-up batch, then two timed passes of two batches, as the pass runner brackets them."""
    timer = recorders.timer
    with recorders.running():
        for kind, index, batches in ((PassKind.WARMUP, 0, 1), (PassKind.TIMED, 0, 2), (PassKind.TIMED, 1, 2)):
            with recorders.listening(kind):
                for batch in range(batches):
                    timer.set_batch(kind, index, batch)
                    timer.set_images(1)
                    with timer.step("pipeline"), timer.step("forward"):
                        pass
            journal.pass_ended()


def test_a_registered_measurement_reaches_every_output(tmp_path, monkeypatch):
    fake.registered(monkeypatch)
    run_dir = RunDirectory(tmp_path, "fake")
    run_dir.create()
    record = RunRecord(identity())
    recorders = PassRecorders.built(settings())
    counter = dict((m.key, r) for m, r in recorders.recordings)[fake.KEY].counter
    journal = RunJournal(run_dir.file(layout.STEPS_TIMER), recorders.timer.records, recorders.timer.origin_ns,
                         [(run_dir.file(t.file), t.columns, t.rows_since) for t in recorders.growing_tables()
                          if t.file == fake.TABLE])
    record.steps, record.steps_origin_ns = recorders.timer.records, recorders.timer.origin_ns
    run_through_passes(recorders, journal)
    # The journal kept its rows as the passes ended: what a killed run leaves.
    assert pd.read_csv(run_dir.file(fake.TABLE)).to_dict("list") == {"batch": [0, 1, 2, 3]}
    assert counter.events == ["running", "before passes", "around pass", "inside pass", "after pass",
                              "around pass", "inside pass", "after pass", "stopped"]  # the timed passes only
    journal.close()
    recorders.collect(record)
    record.finish(Status.COMPLETE)
    summary = RunWriter(run_dir, plots=False, tensorboard=False, report=True).write_record(record)

    written = json.loads(run_dir.file(layout.SUMMARY).read_text())
    assert written[fake.KEY] == {"status": "measured", "batches": 4} == summary[fake.KEY]
    assert list(written)[list(written).index("contention") + 1] == fake.KEY  # after the real ones
    assert pd.read_csv(run_dir.file(fake.TABLE)).to_dict("list") == {"batch": [0, 1, 2, 3]}
    console = format_summary(summary, run_dir.path).splitlines()
    real = [i for i, line in enumerate(console) if line.startswith(("  energy", "  memory", "  machine"))]
    assert console.index("  batches seen: 4") > max(real)  # after the real ones' lines
    report = run_dir.file(layout.REPORT).read_text()
    assert '<a href="#batches">Batches seen</a>' in report and 'id="batches"' in report
    assert report.index('<a href="#energy">') < report.index('<a href="#batches">') < report.index(
        '<a href="#agreement">')  # after energy, as it asked
    assert "The fake measurement saw 4 batches." in report and ">batches seen<" in report
    assert "fake measurement" in report and "registered" in report  # its environment row
    assert headline_figures(summary)["batches_seen"] == 4.0


def test_a_measurement_not_collected_yet_says_so(monkeypatch):
    fake.registered(monkeypatch)
    summary = summary_document(RunRecord(identity()))
    assert summary[fake.KEY] == {"status": NOT_MEASURED_YET}
    assert "  batches seen: not measured yet" in format_summary(summary, Path("x"))


def test_its_scalars_reach_tensorboard(tmp_path, monkeypatch):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    fake.registered(monkeypatch, fake.fake_measurement(plots=()))
    run_dir = RunDirectory(tmp_path, "fake")
    run_dir.create()
    record = RunRecord(identity())
    recorders = PassRecorders.built(settings())
    journal = RunJournal(run_dir.file(layout.STEPS_TIMER), recorders.timer.records, recorders.timer.origin_ns)
    record.steps, record.steps_origin_ns = recorders.timer.records, recorders.timer.origin_ns
    run_through_passes(recorders, journal)
    journal.close()
    recorders.collect(record)
    RunWriter(run_dir, plots=False, tensorboard=True, report=False).write_record(record)
    events = EventAccumulator(str(run_dir.path / layout.TENSORBOARD_DIR))
    events.Reload()
    assert [(s.step, s.value) for s in events.Scalars("batches_seen/count")] == [(0, 4.0)]
    assert [(s.step, s.value) for s in events.Scalars("headline/batches_seen")] == [(0, 4.0)]
