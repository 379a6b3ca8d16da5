"""A measurement written the way utils/measure/contract.py asks, for the tests that register it (`registered`) and
look for it in every output without touching the harness: it counts the batches of the passes it listens in,
keeps one row per batch in a table that grows through the journal, and shows the count everywhere a measurement
can. `fake_measurement()` builds it, so a test can change what it declares.
"""
from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

from utils.measure import registry
from utils.measure.contract import GrowingTable, Measurement, PageSection, Plot, Recording, ScalarWriter, Section
from utils.record.run_record import MeasurementResult, RunRecord, Table
from utils.record.sections import MEASURED, measured
from utils.record.steps import PIPELINE_STEP, PassKind
from utils.storage.html_page import HtmlPage

KEY = "batches_seen"
TABLE = "batches_seen.csv"
PLOT = "plots/batches_seen.png"
COLUMNS = ("batch",)


class BatchCounter:
    """A step listener: one row per pipeline step that ends while it is attached."""

    def __init__(self):
        self.rows: list[dict] = []
        self.events: list[str] = []  # its hooks in the order they ran, for the tests of the nesting

    def step_started(self, name: str) -> None:
        pass

    def step_ended(self, name: str) -> None:
        if name == PIPELINE_STEP:
            self.rows.append({"batch": len(self.rows)})

    def rows_since(self, start: int) -> list[dict]:
        return self.rows[start:]


class CountingRecording(Recording):
    def __init__(self, settings: Any):
        self.counter = BatchCounter()
        self.listeners = (self.counter,)
        self.settings = settings

    @contextmanager
    def running(self) -> Iterator[None]:
        self.counter.events.append("running")
        yield
        self.counter.events.append("stopped")

    def before_passes(self) -> None:
        self.counter.events.append("before passes")

    @contextmanager
    def around_pass(self) -> Iterator[None]:
        self.counter.events.append("around pass")
        yield
        self.counter.events.append("after pass")

    @contextmanager
    def inside_pass(self) -> Iterator[None]:
        self.counter.events.append("inside pass")
        yield

    def growing_tables(self) -> Sequence[GrowingTable]:
        return (GrowingTable(TABLE, COLUMNS, self.counter.rows_since),)

    def collect(self, record: RunRecord) -> MeasurementResult:
        return MeasurementResult({"status": MEASURED, "batches": len(self.counter.rows)},
                                 {TABLE: Table(list(self.counter.rows), COLUMNS)})


def console(section: Section) -> list[str]:
    return [f"  batches seen: {section['batches']}"] if measured(section) else [f"  batches seen: {section['status']}"]


def render(page: HtmlPage, section: Section, plots: Mapping[str, Path]) -> None:
    page.paragraph(f"The fake measurement saw {section.get('batches')} batches.")
    if PLOT in plots:
        page.image(plots[PLOT], "batches seen")


def headline(section: Section) -> list[tuple[str, Any]]:
    return [("batches seen", section["batches"])] if measured(section) else []


def scalars(writer: ScalarWriter, result: MeasurementResult) -> None:
    writer.add_scalar("batches_seen/count", len(result.tables[TABLE].rows), 0)


def draw(tables: Sequence[Optional[Any]], target: Path, order: Sequence[str], note: Optional[str]) -> Optional[Path]:
    from utils.storage.png_figure import bar_figure, save_png

    figure, axes = bar_figure(1)
    axes.barh(["batches"], [len(tables[0])])
    return save_png(figure, target, note)


def fake_measurement(**changes: Any) -> Measurement:
    measurement = Measurement(
        key=KEY, listens_in=frozenset({PassKind.TIMED}), build=CountingRecording, files=(TABLE,), console=console,
        page=PageSection("batches", "Batches seen", after="energy", render=render, headline=headline),
        environment=lambda section: [("fake measurement", "registered")],
        plots=(Plot(PLOT, reads=(TABLE,), draw=f"{__name__}:draw"),), scalars=scalars,
        figures=lambda section: {"batches_seen": section.get("batches")})
    return dataclasses.replace(measurement, **changes)


def registered(monkeypatch, measurement: Optional[Measurement] = None) -> Measurement:
    """Adds the measurement (the fake by default) to the registry for the test, after the real ones."""
    measurement = measurement or fake_measurement()
    monkeypatch.setattr(registry, "MEASUREMENTS", registry.MEASUREMENTS + (measurement,))
    return measurement
