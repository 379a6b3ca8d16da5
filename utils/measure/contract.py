"""What a measurement states about itself: the one contract behind utils/measure/registry.py.

A measurement is a folder of utils/measure/ (energy/, memory/, contention/) whose `measurement.py` holds its
MEASUREMENT: the pass kinds it listens in, the config section it is built from and the Recording a run gets from
it, and how its result reads: summary.json under its key, its tables as files of the run directory (those that
grow through the run's journal too), its console lines, its section of report.html with its headline figures, its
plots, its TensorBoard scalars and the figures TensorBoard and MLflow compare runs by. The harness (composition,
listening, the writers) asks the registry and names no measurement.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Mapping, Optional, Protocol, Sequence

from utils.measure.listener import StepListener
from utils.record.run_record import MeasurementResult, RunRecord
from utils.record.sections import NOT_MEASURED_YET
from utils.record.steps import PassKind
from utils.storage.html_page import HtmlPage

Section = Mapping[str, Any]  # a measurement's summary.json section, as written or read back
Cell = tuple[str, Any]  # (label, value): a headline figure of report.html, a row of its environment table


@dataclass(frozen=True)
class GrowingTable:
    """A table the run's journal (utils/measure/steps/journal.py) appends to as each pass ends, so that a killed
    run keeps it; the writers then write it whole from the record."""
    file: str  # its name in the run directory
    columns: Sequence[str]
    rows_since: Callable[[int], list[dict]]  # the rows after the first n


class Recording(ABC):
    """What a measurement does during one run. Every hook but `collect` does nothing unless the measurement says
    otherwise. In a pass it listens in, its hooks nest as: around_pass, then its listeners attached, then the
    pass's `run` bracket (RUN_STEP, the window its listeners total), then inside_pass."""

    listeners: Sequence[StepListener] = ()  # told every step of the passes it listens in

    def running(self) -> ContextManager[Any]:
        """From before the first pass (the warm-up) to after the last (the memory sampler's thread)."""
        return nullcontext()

    def before_passes(self) -> None:
        """Once every measurement is running, just before the first pass (energy's idle reading, which should
        see the machine as the passes will)."""

    def around_pass(self) -> ContextManager[Any]:
        """Around each pass it listens in, outside the `run` bracket (contention's window)."""
        return nullcontext()

    def inside_pass(self) -> ContextManager[Any]:
        """Inside the `run` bracket of each pass it listens in (the memory sampler resumed, then paused)."""
        return nullcontext()

    def growing_tables(self) -> Sequence[GrowingTable]:
        return ()

    @abstractmethod
    def collect(self, record: RunRecord) -> MeasurementResult:
        """Its section and tables, once the passes have ended (however they ended); it may add warnings to the
        record."""


class Disabled(Recording):
    """A measurement its config switched off: it does nothing, and its section says so and why."""

    def __init__(self, section: Section):
        self.section = section

    def collect(self, record: RunRecord) -> MeasurementResult:
        return MeasurementResult(dict(self.section))


def _nothing(section: Section) -> list:
    return []


def _no_figures(section: Section) -> dict[str, Any]:
    return {}


def _no_scalars(writer: "ScalarWriter", result: MeasurementResult) -> None:
    return None


class ScalarWriter(Protocol):
    """What of TensorBoard's SummaryWriter a measurement's scalars use."""

    def add_scalar(self, tag: str, value: float, step: int) -> Any: ...


@dataclass(frozen=True)
class PageSection:
    """A measurement's section of report.html. The harness writes its heading and link; `render` the rest."""
    anchor: str  # its id in the page, and its link's target
    title: str
    # The anchor of the section it comes after: one of the harness's (steps, layers, agreement, accuracy,
    # environment, trace, below) or another measurement's.
    after: str
    render: Callable[[HtmlPage, Section, Mapping[str, Path]], None]  # (page, its section, plots written by name)
    headline: Callable[[Section], list[Cell]] = _nothing  # its figures at the top of the page


@dataclass(frozen=True)
class Plot:
    """A PNG under plots/, drawn from tables of the run directory (so a finished run can be drawn again)."""
    file: str  # its name in the run directory, e.g. plots/energy.png
    reads: tuple[str, ...]  # the tables it is drawn from; without rows in the first, there is no plot
    # "module:function" drawing it as function(tables, target, order, note) -> the path or None (nothing to
    # draw); each table a DataFrame or None. Imported only when plots are drawn: matplotlib is heavy.
    draw: str


@dataclass(frozen=True)
class Measurement:
    key: str  # its summary.json key, and the run record's name for its result
    listens_in: frozenset[PassKind]  # the passes it measures; in the others it is detached
    # Its Recording for a run, from its config section (None when config_key is None). A section that switches
    # it off gives Disabled, whose section says why.
    build: Callable[[Any], Recording]
    config_key: Optional[str] = None  # dotted, e.g. benchmark.energy
    files: tuple[str, ...] = ()  # the run directory's files its tables are written to (its plots: `plots`)
    console: Callable[[Section], list[str]] = _nothing  # its lines of the closing summary
    page: Optional[PageSection] = None
    environment: Callable[[Section], list[Cell]] = _nothing  # rows of report.html's Environment table
    plots: tuple[Plot, ...] = ()
    scalars: Callable[[ScalarWriter, MeasurementResult], None] = _no_scalars  # TensorBoard, from its tables
    # Figures runs are compared by (TensorBoard's hparams, MLflow); only numbers are kept, a None is left out.
    figures: Callable[[Section], dict[str, Any]] = _no_figures


def section_in(summary: Mapping[str, Any], measurement: Measurement) -> Section:
    """The measurement's section of a summary document; a document from before it reported says so."""
    return summary.get(measurement.key) or {"status": NOT_MEASURED_YET}

