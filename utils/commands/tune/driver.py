"""Runs the race: round after round, each run a normal benchmark.py run in a process started by the sweep's
launchers (under the latency goal, the batch sizes of one way of computing share one), its run directory beside
the others in the tune directory, the tables (sweep.csv, sweep.json) and the race's
state (tune.json) rewritten atomically after every run, report.html at the end. The first round may run on a
Ray cluster (`--launcher ray`); the later ones, where the finalists are decided, run here one after another.

Ctrl-C or SIGTERM is passed on to the running candidate; what was measured is kept and `--resume` continues.
"""
from __future__ import annotations

import json
import math
import os
import platform
import signal
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from tqdm import tqdm

from datasets.image_folder import find_images
from pipelines.registry import facts_for
from pipelines.runtimes.registry import is_reference
from utils.config.schema import ConfigError, load_config
from utils.core.errors import ExitStatus, UsageError
from utils.preflight.heap_setting import keep_heap_refusal, process_maps
from utils.storage.finished_run import FinishedRun, RunFilesError
from utils.commands.budgeted_search import BudgetedSearch, run_within_budget
from utils.commands.sweep.driver import RoundRun, settle_run
from utils.commands.sweep.figures import combine_rounds, read_point
from utils.launchers.base import Launcher, PointJob, PointOutcome, Stops
from utils.launchers.local import LocalLauncher
from utils.commands.sweep.plan import Point
from utils.commands.tune import race
from utils.commands.tune.advice import SPINNING_KEY, allocator_line, spinning_line
from utils.commands.tune.answer import round_lines, spent_line, standing, time_spent, tune_answer
from utils.commands.tune.goals import Goal
from utils.commands.tune.looks import (FIRST_LOOK, FULL, FULL_RUN, Look, check_overrides, describe, first_look,
                                       full_run_seconds, images_timed, look_floor_seconds, looks_text,
                                       preparation_seconds, verdict_images)
from utils.commands.tune.shared_runs import split_outcome
from utils.checks.accuracy.label_free import MIN_IMAGES
from utils.commands.sweep.plan import safe_name
from utils.commands.tune.space import BACKEND, BATCH, INT8_FLAGS, NATIVE_FLAGS, PRECISION, Candidate, build_space, this_machine
from utils.commands.tune.state import Entry, Run, run_dir_name
from utils.commands.tune.verdicts import check_of, checkers, drop_failed, settle_waiting, take_verdict
from utils.commands.tune.ways import first_look_order, first_looks, halve, undecidable, way_lines, way_name
from utils.storage.run_directory import RunDirectory
from utils.commands.tune.files import TUNE_JSON, write_tune_files

# Every run of the race times; what it need not write or measure is left out (the user's --set wins).
LEAN = ("benchmark.layer_timing=false", "profiling.kernels=false", "profiling.counters=false",
        "outputs.save_images=false", "outputs.plots=false", "outputs.report=false")
# A run that reuses its way's verdict skips the accuracy check; its detections are compared instead.
NO_CHECK = ("benchmark.agreement.enabled=false", "benchmark.accuracy.enabled=false")
# The flags that order the first looks (utils/commands/tune/ways.py), named on the console.
FAVOURING = frozenset(flag for flags in NATIVE_FLAGS.values() for flag in flags) | frozenset(INT8_FLAGS)
FIELD_SHARE = 0.9  # of the time left, what a later round's field is sized to
MAX_ROUNDS = 6  # two candidates not told apart by then are within the noise of this machine


class TuneBudgetError(UsageError):
    """The time budget cannot pay for one round of the space."""


@dataclass
class TuneRequest:
    config_file: str
    overrides: list[str]
    sweeps: list[str]
    goal: Goal
    minutes: float
    rounds: int = MAX_ROUNDS  # at most

    def document(self) -> dict:
        return {**asdict(self), "goal": asdict(self.goal)}

    @classmethod
    def from_document(cls, data: dict) -> "TuneRequest":
        return cls(data["config_file"], data["overrides"], data["sweeps"], Goal(**data["goal"]), data["minutes"],
                   data.get("rounds", MAX_ROUNDS))


def _runtime_of(way: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """A way's runtime section as data (runtime.backend -> backend), for the registry's reference test."""
    return {key.partition(".")[2]: value for key, value in way if key.startswith("runtime.")}


def _fixed(overrides: list[str]) -> dict[str, str]:
    return {key.strip(): value for key, _, value in (item.partition("=") for item in overrides)}


@dataclass
class Race:
    """What tune.json holds besides the request."""

    entries: list[Entry]
    rounds: list[dict] = field(default_factory=list)  # number, field, capped, dropped, seconds
    leaders: dict[int, str] = field(default_factory=dict)
    spent_s: float = 0.0  # wall time of earlier sittings (before a --resume)
    check_images: dict[str, int] = field(default_factory=dict)  # way -> what its next check scores (undecided)


def base_config(config_file, overrides: list[str], installed: tuple[str, ...]) -> tuple[Any, list[str]]:
    """The config every candidate starts from, and what stands in for the config's own values. Its runtime.backend
    and dataset.batch_size are values of axes the race sets: where they cannot run the model (samples_tiny.yaml's
    torch at batch 2 with a static exported file as model.file), the first installed runtime that can, at batch 1,
    stands in for what --set did not fix. Each way and candidate is validated on its own later."""
    try:
        return load_config(config_file, overrides), []
    except ConfigError as refusal:
        fixed = {item.split("=", 1)[0].strip() for item in overrides}
        backends = [[]] + ([[f"{BACKEND}={name}"] for name in installed] if BACKEND not in fixed else [])
        batches = [[]] + ([[f"{BATCH}=1"]] if BATCH not in fixed else [])
        for backend in backends:
            for batch in batches:
                if backend or batch:
                    try:
                        return load_config(config_file, overrides + backend + batch), backend + batch
                    except ConfigError:
                        continue
        raise refusal


class Tune:
    def __init__(self, request: TuneRequest, launcher: Optional[Launcher] = None, resume: Optional[Path] = None,
                 console: Callable[[str], None] = print, clock: Callable[[], float] = time.monotonic):
        self.request = request
        self.first_launcher = launcher or LocalLauncher()
        self.resume = resume
        self.console = console
        self.clock = clock
        self.stand_in: list[str] = []  # what stands in for the config's own axis values (base_config)

    # ---- before anything runs ----
    def prepare(self) -> None:
        """The space, validated and pruned; the tune directory claimed (or, with --resume, read back).
        Raises UsageError (exit status 2) for a mistake."""
        # The budget runs from here: building the space (the runtimes' imports) is part of what tune costs.
        self.started = self.clock()
        request = self.request
        self.machine = this_machine()
        base, self.stand_in = base_config(request.config_file, request.overrides + request.goal.overrides(),
                                          self.machine.installed)
        found = find_images(base.dataset.path, base.dataset.limit)
        images = len(found)
        self.base_runtime = {"backend": base.runtime.backend, "spinning": base.runtime.spinning}
        # The runtime whose fp32 forward the verdicts compare with: torch, or for a file the one reading it as exported.
        self.reference_backend = facts_for(base.model.network).reference_backend(base.model.network)
        self.images = images
        # detections.csv's names, in the order the runs time them: a first look's are the first ones.
        self.image_names = [path.relative_to(Path(base.dataset.path)).as_posix() for path in found]
        self.passes = base.benchmark.repeats
        self.first_check = min(verdict_images(base.benchmark.accuracy.images, MIN_IMAGES), max(images, 1))
        self.space = build_space(self.machine, request.goal.runs_streams, images,
                                 _fixed(request.overrides), request.sweeps, self._refusal)
        self._leave_out_undecidable(base)
        self.budget_s = request.minutes * 60.0
        if self.resume is None:
            self.directory = RunDirectory(base.run.output_dir, base.run.id)
            self.race = Race([Entry(candidate) for candidate in self.space.candidates])
        else:
            self.directory = RunDirectory(self.resume.parent, self.resume.name)
            self.race = self._read_back()
        self.first_launcher.open()
        try:
            if self.resume is None:
                self.directory.create()
        except BaseException:
            self.first_launcher.close()
            raise

    def _leave_out_undecidable(self, base) -> None:
        """The reduced precisions the folder holds too few images to judge are left out at the start, once, with
        the images they need, rather than dropped candidate after candidate as their verdicts come back."""
        if not base.benchmark.accuracy.enabled:
            return
        calibration = base.runtime.calibration
        refused = undecidable(self.space.axes.get(PRECISION, ()), self.images, base.dataset.labels is not None,
                              calibration.images, calibration.path is not None, MIN_IMAGES)
        if not refused:
            return
        left = [c for c in self.space.candidates if c.values.get(PRECISION) not in refused]
        lines = [f"{PRECISION}={precision}: cannot be judged here: {why}" for precision, why in refused.items()]
        if not left:
            raise UsageError("no way of computing can be judged on this folder:\n  " + "\n  ".join(lines))
        answerable = sorted({way_name(c.way) for c in left})
        self.space.candidates = left
        self.space.refusals += lines
        self.space.notes.append(f"with these images the race answers among: {', '.join(answerable)}")

    def _refusal(self, overrides: list[str]) -> Optional[str]:
        try:
            # A way is checked at what stands in for the config's own batch and backend; a candidate's own values
            # come after and win.
            load_config(self.request.config_file,
                        self.request.overrides + self.request.goal.overrides() + self.stand_in + overrides)
        except ConfigError as error:
            return str(error).splitlines()[-1].strip()
        return None

    def _read_back(self) -> Race:
        data = json.loads((self.directory.path / TUNE_JSON).read_text())
        by_name = {candidate.name: candidate for candidate in self.space.candidates}
        missing = [entry["candidate"] for entry in data["entries"] if entry["candidate"] not in by_name]
        if missing or len(data["entries"]) != len(by_name):
            raise UsageError(f"--resume {self.directory.path}: this machine's space is not the one raced there "
                             f"({len(by_name)} candidates here, {len(data['entries'])} there); start a new tune")
        entries = []
        for saved in data["entries"]:
            entry = Entry(by_name[saved["candidate"]], verdict=saved["verdict"], doubt=saved["doubt"],
                          verdict_from=saved["verdict_from"], verdict_images=saved.get("verdict_images"),
                          needs_check=saved["needs_check"], dropped=saved["dropped"])
            for run_data in saved["runs"]:
                run = Run(**run_data)
                if run.status == "complete":
                    self._read_figures(entry, run)
                entry.runs.append(run)
            if entry.dropped and entry.dropped.get("budget"):
                entry.dropped = None  # not reached for want of time: a resumed race has more
            entries.append(entry)
        return Race(entries, data["rounds"], {int(k): v for k, v in data["leaders"].items()}, data["spent_s"],
                    data.get("check_images", {}))

    def _read_figures(self, entry: Entry, run: Run) -> None:
        try:
            run.figures_row, run.figures = read_point(self._point(entry.candidate),
                                                      FinishedRun(self.directory.path / run.run_dir))
        except (RunFilesError, ValueError, KeyError) as error:
            run.status, run.reason = "failed", f"its files cannot be read back: {error}"

    @staticmethod
    def _point(candidate: Candidate) -> Point:
        return Point(candidate.name, candidate.assignments)

    # ---- the race ----
    def run(self) -> int:
        ended = run_within_budget(BudgetedSearch(self.budget_s, self._announced_race,
                                                 lambda stopped: self._write(stopped=stopped, final=True),
                                                 self.first_launcher.close, self.console, self.directory.path))
        if ended is None:
            return ExitStatus.FAILED
        self._conclude(ended.document, ended.stopped)
        return ExitStatus.stopped_by(ended.stopped) if ended.stopped else ExitStatus.OK

    def _announced_race(self, stops: Stops, progress: tqdm) -> None:
        self.progress = progress
        self._announce()
        self._race(stops)

    def _announce(self) -> None:
        tqdm.write(f"tune {self.directory.run_id}: {len(self.space.candidates)} candidates, "
                   f"{self.request.goal.describe()}, budget {self.request.minutes:g} min")
        for key, values in self.space.axes.items():
            tqdm.write(f"  {key}: {', '.join(values)}")
        for line in self.space.refusals + self.space.notes:
            tqdm.write(f"  left out: {line}" if line in self.space.refusals else f"  {line}")
        ways = self._ways()
        tqdm.write(f"  first looks ({len(ways)} ways, one short run each before any second run), in the order this "
                   f"CPU's facts favour ({', '.join(sorted(self.machine.flags & FAVOURING)) or 'no bf16 or VNNI flags'}"
                   "): " + "; ".join(way_name(way) for way in ways))
        looks = [self._look(candidate, 1).timed_batches for candidate in self._first_look_candidates()]
        passes = self.passes if self.request.goal.timed_by_passes else None
        tqdm.write(f"  {describe(FIRST_LOOK, [n for n in looks if n], passes and 1, self.images, [self.first_check])}"
                   f"; then {describe(FULL, [], passes, self.images, [])}, for the ways still in the race")

    def _ways(self) -> list:
        return first_look_order(list(dict.fromkeys(entry.candidate.way for entry in self.race.entries)),
                                self.machine.flags)

    def _way_lines(self) -> list[str]:
        goal = self.request.goal

        def best_of(entry: Entry, look: str):
            costs = [cost for cost in (goal.cost(run.figures) for run in entry.complete if run.look == look)
                     if cost is not None]
            return (statistics.median(costs), goal.shown(statistics.median(costs))) if costs else None

        return way_lines(self._ways(), self.race.entries, len(self.race.rounds), best_of)

    def elapsed(self) -> float:
        return self.race.spent_s + self.clock() - self.started

    def _race(self, stops: Stops) -> None:
        while not stops.received:
            current = self._current_round()
            if current is None:
                return
            pending = self._to_run(current)
            out_of_time = False
            if current["number"] == 1 and self.first_launcher.places_points:
                self._launch(self.first_launcher, [[run] for run in pending], stops)
            else:
                out_of_time = self._run_locally(current, pending, stops)
            if stops.received:
                return
            self._close_round(current)
            if out_of_time:  # the next round's field would be paid for by time the budget has not got
                return

    def _run_locally(self, current: dict, pending: list[Run], stops: Stops) -> bool:
        """The round's runs here, a process per group, each as much of its group as the time left pays for;
        whether the time ran out before the round's last run."""
        for group in self._groups(pending):
            while group:
                if stops.received:
                    return False
                part = self._affordable(group)
                if not part:
                    self._out_of_time(current)
                    return True
                self._launch(self._local, [part], stops)
                if current["number"] == 1 and not stops.received:
                    self._check_budget_once()
                group = group[len(part):]
        return False

    @property
    def _local(self) -> Launcher:
        if not hasattr(self, "_local_launcher"):
            self._local_launcher = (self.first_launcher if not self.first_launcher.places_points
                                    else LocalLauncher())
        return self._local_launcher

    def _entry(self, name: str) -> Entry:
        if len(getattr(self, "_by_name", ())) != len(self.race.entries):
            self._by_name = {entry.name: entry for entry in self.race.entries}
        return self._by_name[name]

    def _round_runs(self, current: dict) -> list[Run]:
        """The round's latest run of each candidate, in the round's order."""
        runs = []
        for name in current["order"]:
            runs += [run for run in self._entry(name).runs if run.round == current["number"]][-1:]
        return runs

    def _to_run(self, current: dict) -> list[Run]:
        """What the round still has to run: its pending runs, and a new attempt of each stopped one (a Ctrl-C
        or a budget that ran out, before a --resume)."""
        runs = []
        for run in self._round_runs(current):
            # A run that was stopped, or started before the race itself was killed, runs again under a new name.
            killed = run.status == "pending" and (self.directory.path / run.run_dir).exists()
            if killed:
                self._settle_killed(run)
            interrupted = run.status == "stopped" or killed
            if interrupted and self._entry(run.candidate).dropped is None:
                run = self._new_run(self._entry(run.candidate), current["number"], run.checks)
            if run.status == "pending":
                runs.append(run)
        return runs

    def _settle_killed(self, run: Run) -> None:
        """A run whose race was killed under it: stopped, its reason saying up to where its directory holds."""
        run.status = "stopped"
        try:
            finished = FinishedRun(self.directory.path / run.run_dir)
            run.reason = (f"killed with the race; {finished.killed_note()}" if finished.killed
                          else f"the race was killed as it ended ({finished.summary.get('status')})")
        except RunFilesError as error:
            run.reason = f"killed with the race before it wrote anything readable ({error})"

    def _new_run(self, entry: Entry, number: int, checks: bool) -> Run:
        planned = {run.run_dir for run in entry.runs}  # planned runs have no directory yet
        name = run_dir_name(entry.name, number, lambda name: name in planned
                            or (self.directory.path / name).exists())
        look = self._look(entry.candidate, number)
        check_images = self.race.check_images.get(safe_name(entry.candidate.way), self.first_check)
        run = Run(entry.name, number, checks, name, look=look.kind, timed_batches=look.timed_batches,
                  check_images=check_images if checks else None)
        entry.runs.append(run)
        return run

    def _current_round(self) -> Optional[dict]:
        if self.race.rounds and not self.race.rounds[-1].get("closed"):
            return self.race.rounds[-1]
        number = len(self.race.rounds) + 1
        alive = [entry for entry in self.race.entries if entry.dropped is None]
        if number == 1:
            # Every way's first look before any way's second run, in the order the CPU's facts favour.
            field_names, capped = [candidate.name for candidate in self._first_look_candidates()], []
        else:
            if number == 2:
                self._halve()
                alive = [entry for entry in self.race.entries if entry.dropped is None]
            if len(alive) < 2 or number > self.request.rounds:
                return None
            standings = [standing(entry, self.request.goal) for entry in alive]
            # Sized on the mean run and a tenth of the time held back: a round the budget cuts short loses its
            # last runs, and every other round the leader runs last.
            size = race.cap(FIELD_SHARE * (self.budget_s - self.elapsed()), self._mean_seconds_per_run())
            if size < 2:
                return None
            chosen, left_out = race.next_field(standings, size, self.request.goal.quantile, self._way_priors())
            field_names, capped = [s.name for s in chosen], [s.name for s in left_out]
            for name in capped:
                self._entry(name).dropped = {"round": number, "reason": (
                    f"left out of round {number}: the time left pays for {size} runs and its best case ranked "
                    "below them" + ("" if self._entry(name).complete else " (never run; its way's first look "
                                                                            "stands for it)"))}
        order = race.interleaved(field_names, number)
        judged_ways = {entry.candidate.way for entry in self.race.entries if entry.verdict_from == entry.name}
        # The reference is the answer the others are checked against: it needs no check of its own.
        checking = checkers([self._entry(name) for name in order], judged_ways,
                            lambda way: is_reference(_runtime_of(way), self.reference_backend))
        runs = [self._new_run(self._entry(name), number, name in checking) for name in order]
        current = {"number": number, "field": field_names, "order": order, "capped": capped, "dropped": [],
                   "seconds": 0.0, "look": self._round_look(number, runs)}
        self.race.rounds.append(current)
        return current

    def _first_look_candidates(self) -> list[Candidate]:
        """Every way's first look: one candidate each, in the order the CPU's facts favour."""
        return first_looks([entry.candidate for entry in self.race.entries if entry.dropped is None],
                           self.machine.flags)

    def _look(self, candidate: Candidate, number: int) -> Look:
        """Round 1 takes a short first look at each way; the later rounds run in full."""
        if number > 1:
            return FULL_RUN
        return first_look(int(candidate.values.get(BATCH, "1")), self.first_check, self.images,
                          self.request.goal.timed_by_passes)

    def _round_look(self, number: int, runs: list[Run]) -> dict:
        """How long the round's runs are, for its readers (tune.json, sweep.json, the console)."""
        kind = FIRST_LOOK if number == 1 else FULL
        batches = sorted({run.timed_batches for run in runs if run.timed_batches})
        checks = sorted({run.check_images for run in runs if run.checks and run.check_images})
        passes = (1 if kind == FIRST_LOOK else self.passes) if self.request.goal.timed_by_passes else None
        return {"kind": kind, "timed_batches": batches or None, "timed_passes": passes, "check_images": checks,
                "text": describe(kind, batches, passes, self.images, checks)}

    def _first_look_of(self, way) -> Optional[Entry]:
        names = set(self.race.rounds[0]["field"]) if self.race.rounds else set()
        return next((entry for entry in self.race.entries if entry.candidate.way == way and entry.name in names),
                    None)

    def _halve(self) -> None:
        """After the first looks: a way whose look cannot win (its verdict, or a run that failed) stops whole,
        before its other schedules spend time; of the rest (those undecided on the look's images among them), the
        slower half stops (utils/commands/tune/ways.py)."""
        figures, stopped = {}, {}
        for way in self._ways():
            look = self._first_look_of(way)
            if look is None:
                continue
            figure = standing(look, self.request.goal)
            # Undecided on the look's few images, it may yet win: its next check scores more.
            deciding = look.verdict is None and safe_name(way) in self.race.check_images
            if look.dropped is not None:
                stopped[way] = f"its way's first look ({look.name}) was dropped: {look.dropped['reason']}"
            elif not figure.rounds or not (look.can_win is True or deciding):
                stopped[way] = f"its way's first look ({look.name}) has no figure that can win"
            else:
                figures[way] = figure.figure
        stopped.update(halve(figures).dropped)
        for entry in self.race.entries:
            if entry.candidate.way in stopped and entry.dropped is None:
                entry.dropped = {"round": 1, "reason": stopped[entry.candidate.way]}

    def _way_priors(self) -> dict[str, float]:
        """A candidate not yet run stands at its way's first look's figure when the field is ranked."""
        priors = {}
        for entry in self.race.entries:
            look = self._first_look_of(entry.candidate.way)
            if not entry.complete and look is not None and look.complete:
                priors[entry.name] = standing(look, self.request.goal).figure
        return priors

    def _groups(self, runs: list[Run]) -> list[list[Run]]:
        """The runs that share a process: one way of computing at one schedule but the batch size (threads are
        process-wide), in the round's order; each run alone where the goal does not share processes. A pinned
        run gives its threads their cores back as it ends (Runtime.close), so pinned runs share too."""
        if not self.request.goal.shares_processes:
            return [[run] for run in runs]
        groups: dict[tuple, list[Run]] = {}
        for run in runs:
            values = self._entry(run.candidate).candidate.assignments
            groups.setdefault(tuple(item for item in values if item[0] != BATCH), []).append(run)
        return list(groups.values())

    def _completed(self) -> list[Run]:
        return [run for entry in self.race.entries for run in entry.runs if run.status == "complete"]

    def _run_seconds(self, run: Run, first: bool) -> float:
        """What a run should take, its process's start apart: the median of the completed runs of its length (a
        first look or a full run), with their own accuracy check or not, first in their process (which pays the
        imports) or not; a full run before any has run, as the first looks say one would take; else any run's."""
        runs = [done for done in self._completed() if done.look == run.look]
        if not runs and run.look == FULL:
            estimates = self._full_from_looks({self._entry(run.candidate).candidate.way}) or self._full_from_looks()
            if estimates:
                return statistics.median(estimates)
        runs = runs or self._completed()
        seconds = (sorted(done.seconds for done in runs if done.checks == run.checks and (done.start_s > 0) == first)
                   or sorted(done.seconds for done in runs if (done.start_s > 0) == first)
                   or sorted(done.seconds for done in runs))
        return seconds[len(seconds) // 2] if seconds else 1.0

    def _full_from_looks(self, ways: Optional[set] = None) -> list[float]:
        """What a full run of each way (of `ways`; None: all) should take, from its first look
        (utils/commands/tune/looks.py): the look less its timed pass and what it spent preparing the model (the cache
        keeps that), plus the config's timed passes over every image at the look's median speed."""
        estimates = []
        for entry in self.race.entries:
            if ways is not None and entry.candidate.way not in ways:
                continue
            estimates += [self._full_from(run) for run in entry.complete
                          if run.look == FIRST_LOOK and run.figures is not None and run.figures.samples]
        return estimates

    def _full_from(self, run: Run) -> float:
        seconds = run.seconds - run.preparation_s
        if run.timed_batches is None:  # LoadGen's own timing, the same in a full run
            return seconds
        return full_run_seconds(seconds, self._images_timed(run), statistics.median(run.figures.samples),
                                self.images, self.passes)

    def _mean_seconds_per_run(self) -> float:
        """What a full run that only timed costs on average (else any full run; before any, what the first looks
        say one would, with a process's start), its share of process starts included: runs' times are skewed to the
        slow side, and a field sized on their median overruns."""
        runs = self._completed()
        full = [run for run in runs if run.look == FULL]
        timing = [run for run in full if not run.checks] or full
        racing = {entry.candidate.way for entry in self.race.entries if entry.dropped is None}
        if not timing and self._full_from_looks(racing):
            starts = [run.start_s for run in runs if run.start_s > 0]
            return statistics.mean(self._full_from_looks(racing)) + (statistics.mean(starts) if starts else 0.0)
        timing = timing or runs
        return sum(run.seconds + run.start_s for run in timing) / len(timing) if timing else 1.0

    def _affordable(self, group: list[Run]) -> list[Run]:
        """The head of the group the time left pays for. The race's very first run goes alone: what it takes
        says whether the budget can pay for one round at all."""
        done = [other for entry in self.race.entries for other in entry.runs if other.status != "pending"]
        if not done:
            return group[:1]
        starts = sorted(run.start_s for run in done if run.start_s > 0)
        spent = self.elapsed() + (starts[len(starts) // 2] if starts else 0.0)
        part = []
        for position, run in enumerate(group):
            spent += self._run_seconds(run, first=position == 0)
            if spent > self.budget_s:
                break
            part.append(run)
        return part

    def _check_budget_once(self) -> None:
        """After the race's first run: a budget that cannot pay for a short first look at every way is a mistake.
        Each process of round 1 costs at least what the first did (it started a process and checked its accuracy
        too) less what only it paid (its model's preparation, its own passes over its images), so that many of
        those are a floor under the round."""
        done = [run for entry in self.race.entries for run in entry.runs if run.status == "complete"]
        if done and not getattr(self, "_budget_checked", False):
            self._budget_checked = True
            self._check_budget(done)

    def _check_budget(self, done: list[Run]) -> None:
        processes = len(self._groups([entry.runs[0] for entry in self.race.entries if entry.runs]))
        took = sum(run.seconds + run.start_s for run in done) / len(done)
        per_process = sum(map(self._look_floor, done)) / len(done)
        needed = per_process * processes
        if needed <= self.budget_s:
            return
        self._write(stopped=None, final=False)
        first = self.race.rounds[0]
        looks = first.get("look", {}).get("text", "one run each")
        raise TuneBudgetError(
            f"--minutes {self.request.minutes:g} is too short: a short first look at each of the {len(first['field'])} "
            f"ways of computing ({looks}) takes at least {needed / 60:.1f} min here ({processes} process(es): the "
            f"first look took {took:.1f} s with its process's start and its accuracy check, {per_process:.1f} s of it "
            "what any look pays, not its own passes over its images nor preparing its model); the budget fits about "
            f"{max(1, int(self.budget_s // max(per_process, 1e-9)))} of them. Give "
            f"--minutes {math.ceil(needed / 60)} or more, or narrow the space with --set/--sweep (its axes: "
            f"{', '.join(f'{key} {len(values)}' for key, values in self.space.axes.items())}); the runs so far are "
            f"kept: --resume {self.directory.path} --minutes N continues it")

    def _look_floor(self, run: Run) -> float:
        """What any way's first look costs at least, from this run (utils/commands/tune/looks.py): its own passes
        are its timed images and, where it checked, the agreement check's and the accuracy pass's."""
        samples = run.figures.samples if run.figures is not None else ()
        if not samples or run.timed_batches is None:
            return run.seconds - run.preparation_s + run.start_s
        own = self._images_timed(run) + (2 * (run.check_images or 0) if run.checks else 0)
        return look_floor_seconds(run.seconds, run.start_s, run.preparation_s, own, statistics.median(samples))

    def _out_of_time(self, current: dict) -> None:
        for run in self._round_runs(current):
            if run.status == "pending":
                run.status, run.reason = "stopped", "not run: the time budget ran out"
                entry = self._entry(run.candidate)
                if not entry.complete and entry.dropped is None:
                    entry.dropped = {"round": current["number"], "budget": True,
                                     "reason": "not reached: the time budget ran out in its first round"}

    def _launch(self, launcher: Launcher, groups: list[list[Run]], stops: Stops) -> None:
        """Each group in one process of `benchmark.py runs` (a group of one too): each run's own time is then
        told apart from its process's start, which goes to the first run there (start_s)."""
        starts: dict[str, float] = {}
        by_job = {group[0].run_dir: group for group in groups}

        def started(job: PointJob, where: str) -> None:
            starts[job.name] = self.clock()
            self.progress.set_postfix_str(f" {self._where(job.name)}{'; on ' + where if where else ''}")

        def finished(job: PointJob, outcome: PointOutcome) -> None:
            group = by_job[job.name]
            wall = self.clock() - starts.get(job.name, self.clock())
            split = split_outcome([run.run_dir for run in group], outcome)
            for run in group:
                run_outcome, run.seconds = split[run.run_dir]
                self._settle(run, run_outcome, stops)
            # The process's start (imports, before its first run), on the run that paid it.
            group[0].start_s = max(0.0, wall - sum(run.seconds for run in group))
            self.progress.n = min(round(self.elapsed()), self.progress.total)
            self.progress.refresh()
            self._write(stopped=None, final=False)

        jobs = []
        for group in groups:
            arguments = ("runs", json.dumps([[run.run_dir, self._arguments(run)] for run in group]))
            jobs.append(PointJob(group[0].run_dir, arguments, self.directory.path / group[0].run_dir))
        launcher.run(jobs, stops, started, finished)

    def _where(self, run_name: str) -> str:
        current = self.race.rounds[-1]
        order = current["order"]
        name = run_name.split(",round=")[0]
        position = order.index(name) + 1 if name in order else 0
        left = (len(order) - position) * self._mean_seconds_per_run()
        return (f" round {current['number']}: {position}/{len(order)}, about {left / 60:.1f} min left in this round, "
                f"{max(0.0, self.budget_s - self.elapsed()) / 60:.1f} min of the budget")

    def _arguments(self, run: Run) -> list[str]:
        candidate = self._entry(run.candidate).candidate
        # A later check may grow to every image of the folder while its verdict is undecided (the user's --set wins).
        growing = [f"benchmark.accuracy.max_images={max(1, self.images)}"] if run.checks else []
        # What makes the run as long as its look, after the user's --set: a first look stays short, its check on
        # the verdict's images; a later check starts from the images its way's last verdict asked for.
        images = run.check_images or self.first_check
        scoring = [] if not run.checks else check_overrides(images, images if run.look == FIRST_LOOK else None)
        look = Look(run.look, run.timed_batches).overrides
        sets = [*LEAN, *growing, *self.request.goal.overrides(), *self.request.overrides, *candidate.overrides,
                *(() if run.checks else NO_CHECK), *look, *scoring, f"run.id={json.dumps(run.run_dir)}"]
        return ["--config", self.request.config_file, *(part for item in sets for part in ("--set", item))]

    def _settle(self, run: Run, outcome: PointOutcome, stops: Stops) -> None:
        entry = self._entry(run.candidate)
        settled = RoundRun(run.round, self.directory.path / run.run_dir)
        settle_run(self.directory.path, self._point(entry.candidate), settled, outcome, stops)
        run.status, run.reason = settled.status, settled.reason
        run.figures_row, run.figures = settled.figures_row, settled.figures
        run.placement = dict(outcome.placement)
        goal = self.request.goal
        if run.status == "complete":
            summary = FinishedRun(self.directory.path / run.run_dir).summary
            run.preparation_s = preparation_seconds((summary.get("runtime") or {}).get("preparation") or {})
            check = check_of(summary)
            more = take_verdict(entry, run, check)
            if more is not None:
                self.race.check_images[safe_name(entry.candidate.way)] = more
                tqdm.write(f"{run.run_dir}: undecided on {check.scored} image(s); its way's next check scores {more}")
            cost = goal.cost(run.figures)
            if cost is None and entry.dropped is None:
                entry.dropped = {"round": run.round, "reason": "LoadGen found no valid rate at the target latency"}
            length = f" ({run.look}, {run.timed_batches} timed batches)" if run.timed_batches else f" ({run.look})"
            tqdm.write(f"{run.run_dir}: {goal.shown(cost) if cost is not None else 'no figure'}{length}")
        elif run.status == "failed":
            drop_failed(self.race.entries, entry, run)
            tqdm.write(f"{run.run_dir}: failed ({run.reason})")
        for line in settle_waiting(self.race.entries, self.directory.path, self._shared_images):
            tqdm.write(line)

    def _shared_images(self, judged: Run, other: Run) -> Optional[list[str]]:
        """The images two runs both timed (a first look times the folder's first ones); None: every image."""
        covered = min(self._images_timed(judged), self._images_timed(other))
        return None if covered >= self.images else self.image_names[:covered]

    def _images_timed(self, run: Run) -> int:
        batch = int(self._entry(run.candidate).candidate.values.get(BATCH, "1"))
        return images_timed(run.timed_batches, batch, self.images)

    def _close_round(self, current: dict) -> None:
        number = current["number"]
        alive = [entry for entry in self.race.entries if entry.dropped is None and entry.complete]
        standings = [standing(entry, self.request.goal) for entry in alive]
        for drop in race.eliminate(standings, number, self.request.goal.quantile, self.request.goal.unit):
            self._entry(drop.name).dropped = {"round": number, "reason": drop.reason}
            current["dropped"].append(drop.name)
        best = race.leader(standings)
        if best is not None:
            self.race.leaders[number] = best.name
        current["seconds"] = sum(run.seconds + run.start_s for run in self._round_runs_all(number))
        current["closed"] = True
        self._write(stopped=None, final=False)
        tqdm.write(f"round {number}: {len(current['field'])} raced, {len(current['dropped'])} dropped"
                   + (f", leader {best.name} ({self.request.goal.shown(best.figure)})" if best else ""))

    def _round_runs_all(self, number: int) -> list[Run]:
        return [run for entry in self.race.entries for run in entry.runs if run.round == number]

    # ---- files ----
    def _write(self, stopped: Optional[int], final: bool) -> dict:
        runs = [run for entry in self.race.entries for run in entry.runs if run.status != "pending"]
        finished = final and not stopped
        status = "stopped" if stopped else "complete" if finished else "running"
        spent = time_spent(runs, self.budget_s, self.elapsed())
        spent["statement"] = spent_line(spent)
        document = {
            "sweep_id": self.directory.run_id,
            "kind": "tune",
            "status": status,
            "stop_reason": signal.Signals(stopped).name if stopped else None,
            "config_file": self.request.config_file,
            "overrides": self.request.overrides,
            "launcher": self.first_launcher.describe(),
            "swept": {key: list(values) for key, values in self.space.axes.items()},
            "points": len(self.race.entries),
            "left_out": self.space.refusals,
            "notes": self.space.notes,
            "answer": tune_answer(self.race.entries, self.request.goal, self.race.rounds, self.race.leaders),
            "time": spent,
            "unit": self.request.goal.unit,
            "race": [{"candidate": entry.name, "figures": standing(entry, self.request.goal).figures,
                      "looks": {run.round: run.look for run in entry.complete},
                      "dropped_round": entry.dropped["round"] if entry.dropped else None}
                     for entry in self.race.entries],
            "rows": self._rows(),
            "ways": self._way_lines(),
        }
        document["follow_up"] = self._follow_up(document["answer"]) if finished else None
        state = {"request": self.request.document(), "status": status, "spent_s": spent["elapsed_s"],
                 "rounds": self.race.rounds, "leaders": self.race.leaders, "check_images": self.race.check_images,
                 "entries": [{"candidate": entry.name, "verdict": entry.verdict, "doubt": entry.doubt,
                              "verdict_from": entry.verdict_from, "verdict_images": entry.verdict_images,
                              "needs_check": entry.needs_check, "dropped": entry.dropped,
                              "runs": [run.document() for run in entry.runs]}
                             for entry in self.race.entries]}
        write_tune_files(self.directory.path, document, state, list(self.space.axes), report=final)
        return document

    def _rows(self) -> list[dict]:
        rows = []
        for entry in self.race.entries:
            done = entry.complete
            row = {"point": entry.name, **entry.candidate.values, "run_dir": done[0].run_dir if done else ""}
            if done:
                figures_row, _ = combine_rounds([run.figures_row for run in done], [run.figures for run in done])
                row.update(figures_row, agreement=entry.verdict or "unchecked", verdict_from=entry.verdict_from)
            failed = [run for run in entry.runs if run.status == "failed"]
            row["status"] = ("failed" if failed and not done else "complete" if done else
                             "stopped" if any(run.status == "stopped" for run in entry.runs) else "pending")
            row["reason"] = failed[0].reason if failed and not done else ""
            row["race"] = (f"dropped in round {entry.dropped['round']}" if entry.dropped else
                           "in the race" if done else "waiting")
            row["race_reason"] = entry.dropped["reason"] if entry.dropped else ""
            row["round_run_dirs"] = [run.run_dir for run in done]
            row["looks"] = looks_text({run.round: run.look for run in done})
            row["verdict_images"] = entry.verdict_images
            rows.append(row)
        return rows

    def _follow_up(self, answer: dict) -> Optional[str]:
        """The races worth running next, on what this one left as it was, one a line: ONNX Runtime's spinning and
        the allocator under the winner."""
        request = self.request
        winner = answer["winner"] or {"values": {}}
        lines = [spinning_line(request.config_file, request.overrides, request.sweeps, request.goal, answer["set_line"],
                               winner["values"].get(BACKEND, self.base_runtime["backend"]), self._winner_spinning(winner)),
                 allocator_line(request.config_file, request.overrides, request.sweeps, request.goal,
                                answer["set_line"], keep_heap_refusal(os.environ, platform.libc_ver()[0],
                                                                      process_maps()))]
        return "\n".join(line for line in lines if line) or None

    def _winner_spinning(self, winner: dict) -> bool:
        value = winner["values"].get(SPINNING_KEY)
        return self.base_runtime["spinning"] if value is None else value.strip().lower() == "true"

    def _conclude(self, document: dict, stopped: Optional[int]) -> None:
        answer = document["answer"]
        self.console(answer["statement"])
        for line in round_lines(answer["rounds"]):
            self.console(f"  {line}")
        for drop in answer["dropped"]:
            self.console(f"  dropped {drop['candidate']} (round {drop['round']}): {drop['reason']}")
        self.console("  how far each way got:")
        for line in document["ways"]:
            self.console(f"    {line}")
        self.console(f"  {document['time']['statement']}")
        self.console(f"outputs: {self.directory.path} (sweep.csv, sweep.json, report.html, {TUNE_JSON})")
        if document["follow_up"]:
            for line in document["follow_up"].splitlines():
                self.console(line)
        if stopped:
            self.console(f"stopped by {signal.Signals(stopped).name}: what was measured is kept; continue with "
                         f"python benchmark.py tune --resume {self.directory.path}")

