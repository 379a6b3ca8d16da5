"""Runs `capacity`: how many cameras of one source this CPU serves within a latency budget and a drop bound, and
which way of computing serves the most. Every run is a normal benchmark.py run in a process started by a launcher,
its run directory in the capacity directory; capacity.csv and capacity.json are rewritten after every run, so a stop
or a kill loses nothing measured, and `--resume` continues.

1. One camera of the first candidate (the config's own way where the space holds it): whether the config runs at
   all, whether one camera is served, and what one camera costs (the bound from isolated costs).
2. With more than one candidate, the race (tune's machinery: utils/commands/tune/race.py, ways.py, verdicts.py):
   every way of computing gets a first look, a flat-out camera run (plan.py) beside its accuracy check on images;
   halving, then rounds of F-race within RACE_SHARE of the time.
3. The search over N (search.py) for the race's leader from one camera up, then for each candidate the race could
   not tell from it, from the best answer so far (it must serve one camera more to win), while time is left.
"""
from __future__ import annotations

import json
import os
import signal
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from tqdm import tqdm

from datasets.image_folder import find_images
from datasets.sources.dataset import IMAGES, find_dataset
from datasets.sources.locations import is_stream_url
from pipelines.registry import facts_for
from pipelines.runtimes.registry import is_reference
from utils.checks.accuracy.label_free import MIN_IMAGES
from utils.commands.budgeted_search import BudgetedSearch, run_within_budget
from utils.commands.capacity.answer import Searched, Setting, capacity_answer, point_text
from utils.commands.capacity.bound import cameras_bound
from utils.commands.capacity.files import CAPACITY_CSV, CAPACITY_JSON, write_capacity_files
from utils.commands.capacity.goal import ServedGoal
from utils.commands.capacity.plan import (SCENARIO, CapacityRequest, arguments, check_sets, flat_out_sets,
                                          point_sets, refuse_owned, stream_probe)
from utils.commands.capacity.readings import camera_point
from utils.commands.capacity.searches import CandidateSearch, CountRun
from utils.commands.sweep.answer import REFERENCE
from utils.commands.sweep.driver import RoundRun, settle_run
from utils.commands.sweep.figures import read_point
from utils.commands.sweep.plan import Point
from utils.commands.tune import race
from utils.commands.tune.answer import standing, tune_answer
from utils.commands.tune.driver import base_config
from utils.commands.tune.shared_runs import split_outcome
from utils.commands.tune.space import (BACKEND, BATCH, MAX_BATCH, PINNING, PRECISION, THREADS, Candidate, build_space,
                                       this_machine)
from utils.commands.tune.state import Entry, Run
from utils.commands.tune.verdicts import drop_failed, settle_waiting, take_verdict
from utils.commands.tune.ways import first_looks, halve, undecidable, way_name
from utils.config.schema import ConfigError, load_config
from utils.core.errors import ExitStatus, UsageError
from utils.launchers.base import Launcher, PointJob, PointOutcome, Stops
from utils.launchers.local import LocalLauncher
from utils.scenarios.cameras.settings import camera_settings
from utils.scenarios.cameras.sources import build_cameras
from utils.storage.finished_run import FinishedRun, RunFilesError
from utils.storage.run_directory import RunDirectory

RACE_SHARE = 0.5  # of the time budget, what the race may take: the search over N is the answer
RACE_ROUNDS = 4  # at most, round 1 (the first looks) included
FIRST_RUN_GUESS_S = 30.0  # a run's cost before any has been timed
CANNOT_RUN = "cannot run (exit 2)"


class CapacityInputError(UsageError):
    """What the search found the inputs cannot answer (one camera not served, a config that cannot run)."""


@dataclass
class Planned:
    """One run to start: its directory name, benchmark.py's arguments, and what to do with its outcome."""

    run_dir: str
    arguments: list[str]
    settle: Callable[[PointOutcome, float, Stops], None]
    timing: object  # the Run or CountRun whose seconds and start_s are kept


@dataclass
class RaceState:
    entries: list[Entry]
    rounds: list[dict] = field(default_factory=list)  # number, field, order, capped, dropped, closed
    leaders: dict[int, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)  # run_dir -> check, images or flat_out
    done: bool = False


def _fixed(overrides: list[str]) -> dict[str, str]:
    return {key.strip(): value for key, _, value in (item.partition("=") for item in overrides)}


def _runtime_of(way: tuple[tuple[str, str], ...]) -> dict[str, str]:
    return {key.partition(".")[2]: value for key, value in way if key.startswith("runtime.")}


def check_request(request: CapacityRequest) -> None:
    for flag, value, ok in (("--budget-ms", request.budget_ms, request.budget_ms > 0),
                            ("--max-drop", request.max_drop, 0 <= request.max_drop < 1),
                            ("--minutes", request.minutes, request.minutes > 0),
                            ("--point-s", request.point_s, request.point_s > 0),
                            ("--warmup-s", request.warmup_s, request.warmup_s >= 0),
                            ("--fps", request.fps, request.fps is None or request.fps > 0)):
        if not ok:
            raise UsageError(f"{flag} {value:g}: give a positive number" + (
                " below 1 (a share of the frames, e.g. --max-drop 0.01)" if flag == "--max-drop" else ""))


class Capacity:
    def __init__(self, request: CapacityRequest, launcher: Optional[Launcher] = None, resume: Optional[Path] = None,
                 console: Callable[[str], None] = print, clock: Callable[[], float] = time.monotonic):
        self.request = request
        self.launcher = launcher or LocalLauncher()
        self.resume = resume
        self.console = console
        self.clock = clock
        self.spent_s = 0.0
        self.searches: list[CandidateSearch] = []
        self.notes: list[str] = []
        self.failure: Optional[str] = None  # a run the inputs cannot get past (exit 2)

    # ---- before anything runs ----
    def prepare(self) -> None:
        """The source looked at, the space built and pruned, the directory claimed (or read back with --resume).
        Raises UsageError (exit status 2) for a mistake."""
        self.started = self.clock()
        request = self.request
        check_request(request)
        refuse_owned(request.overrides, request.sweeps)
        self.machine = this_machine()
        base, self.stand_in = base_config(request.config_file, [*request.overrides, f"{SCENARIO}=cameras"],
                                          self.machine.installed)
        self.source = self._source(base)
        self.camera_fps, self.stream = self._look_at_source()
        self.images = self._images(base)
        self.cores = len(os.sched_getaffinity(0))
        network = base.model.network
        self.reference_backend = facts_for(network).reference_backend(network)
        fixed = _fixed(request.overrides)
        fixed.setdefault(PINNING, "false")  # cameras' threads share the cores with the detector's: not raced
        self.space = build_space(self.machine, False, MAX_BATCH, fixed, request.sweeps, self._refusal)
        self._judging(base)
        self.goal = ServedGoal(self.camera_fps)
        self.budget_s = request.minutes * 60.0
        if self.resume is None:
            self.directory = RunDirectory(base.run.output_dir, base.run.id)
            self.state = RaceState([Entry(candidate) for candidate in self.space.candidates])
            self._mark_references()
        else:
            self.directory = RunDirectory(self.resume.parent, self.resume.name)
            self._read_back()
        self.launcher.open()
        try:
            if self.resume is None:
                self.directory.create()
        except BaseException:
            self.launcher.close()
            raise

    def _source(self, base) -> str:
        if self.request.source:
            return self.request.source
        sources = base.cameras.sources
        if len(sources) > 1:
            raise UsageError(f"cameras.sources names {len(sources)} sources; capacity counts copies of one: give "
                             "--source (a video file or a stream URL)")
        if sources:
            return sources[0]
        path = Path(base.dataset.path)
        if path.is_dir() and not is_stream_url(base.dataset.path):
            try:
                kind = find_dataset(path, 1, camera_settings(base.cameras, base.dataset, base.benchmark).decode).kind
            except UsageError:
                kind = None
            if kind == IMAGES:
                raise UsageError(f"dataset.path {path} is a folder of images, which cameras do not read: give the "
                                 "cameras' source with --source (a video file, a folder of videos or a stream URL); "
                                 "the images then judge each way's accuracy")
        return base.dataset.path

    def _camera_overrides(self) -> list[str]:
        return [f"{SCENARIO}=cameras", f"cameras.sources={json.dumps([self.source])}", "cameras.count=1"]

    def _look_at_source(self) -> tuple[Optional[float], bool]:
        """The source opened as one camera's (a file probed and its first frame decoded, a stream connected to): a
        location that is not a video or a stream ends here with exit status 2. Returns each camera's frames per
        second handed on (None: a stream's, known once it ran) and whether it is a live stream."""
        try:
            config = load_config(self.request.config_file,
                                 [*self.request.overrides, *self._camera_overrides(), *self.stand_in])
        except ConfigError as error:
            raise UsageError(f"the config cannot run cameras of {self.source}:\n{error}") from None
        camera = build_cameras(camera_settings(config.cameras, config.dataset, config.benchmark))[0]
        videos = getattr(camera.source, "videos", ())
        own = videos[0].info.fps if videos else None
        fps = min(value for value in (own, self.request.fps) if value) if (own or self.request.fps) else None
        return fps, not videos

    def _images(self, base) -> Optional[str]:
        """Where each way's accuracy is judged: --images, else the config's dataset.path when it holds images."""
        if self.request.images:
            find_images(self.request.images)  # DatasetError (exit 2) for a folder with none
            return self.request.images
        path = Path(base.dataset.path)
        if path.is_dir() and str(path) != self.source:
            try:
                find_images(path)
                return str(path)
            except UsageError:
                return None
        return None

    def _refusal(self, overrides: list[str]) -> Optional[str]:
        try:
            load_config(self.request.config_file,
                        [*self.request.overrides, *self._camera_overrides(), *self.stand_in, *overrides])
        except ConfigError as error:
            return str(error).splitlines()[-1].strip()
        return None

    def _is_reference(self, way) -> bool:
        return is_reference(_runtime_of(way), self.reference_backend)

    def _judging(self, base) -> None:
        """Which ways need an accuracy check, and whether there are images to judge them on."""
        needing = sorted({way_name(c.way) for c in self.space.candidates if not self._is_reference(c.way)})
        self.images_found = len(find_images(self.images)) if self.images else 0
        if needing and self.images is None:
            if len(self.space.candidates) > 1:
                raise UsageError(
                    f"the race judges each way of computing's accuracy on images, as tune does ({', '.join(needing)} "
                    "must be checked against the reference): give --images DIR (a folder of images like the "
                    "cameras' frames; with --set dataset.labels=... to score mAP), or fix the way with --set "
                    f"{BACKEND}=... --set {PRECISION}=...")
            self.notes.append(f"detections not judged: {needing[0]} is not the reference, and there are no images "
                              "to check it on (--images DIR)")
            return
        if self.images and base.benchmark.accuracy.enabled:
            calibration = base.runtime.calibration
            refused = undecidable(self.space.axes.get(PRECISION, ()), self.images_found, base.dataset.labels is not None,
                                  calibration.images, calibration.path is not None, MIN_IMAGES)
            left = [c for c in self.space.candidates if c.values.get(PRECISION) not in refused]
            if refused and left:
                self.space.candidates = left
                self.space.refusals += [f"{PRECISION}={p}: cannot be judged on {self.images}: {why}"
                                        for p, why in refused.items()]
            elif refused:
                raise UsageError("no way of computing can be judged on these images:\n  "
                                 + "\n  ".join(f"{PRECISION}={p}: {why}" for p, why in refused.items()))

    def _mark_references(self) -> None:
        """The reference way's detections are the answer the others are checked against: it needs no check."""
        for entry in self.state.entries:
            if self._is_reference(entry.candidate.way):
                entry.verdict, entry.verdict_from = REFERENCE, entry.name

    # ---- resume ----
    def _read_back(self) -> None:
        data = json.loads((self.directory.path / CAPACITY_JSON).read_text())["state"]
        by_name = {candidate.name: candidate for candidate in self.space.candidates}
        if sorted(by_name) != sorted(entry["candidate"] for entry in data["entries"]):
            raise UsageError(f"--resume {self.directory.path}: this machine's space is not the one searched there "
                             f"({len(by_name)} candidates here, {len(data['entries'])} there); start a new capacity run")
        entries = []
        for saved in data["entries"]:
            entry = Entry(by_name[saved["candidate"]], verdict=saved["verdict"], doubt=saved["doubt"],
                          verdict_from=saved["verdict_from"], needs_check=saved["needs_check"],
                          dropped=saved["dropped"])
            for run_data in saved["runs"]:
                run = Run(**{key: value for key, value in run_data.items() if key in Run.__dataclass_fields__})
                run.status = run.status if run.status in ("complete", "failed") else "stopped"
                if run.status == "complete":
                    self._read_race_figures(entry, run)
                entry.runs.append(run)
            entries.append(entry)
        self.state = RaceState(entries, data["rounds"], {int(k): v for k, v in data["leaders"].items()},
                               data["kinds"], data["done"])
        self.spent_s = data["spent_s"]
        for saved in data["searches"]:
            search = CandidateSearch(saved["candidate"], saved["floor"], stopped=saved["stopped"])
            for run_data in saved["runs"]:
                run = CountRun(**run_data)
                run.status = run.status if run.status in ("complete", "failed") else "stopped"
                if run.status == "complete":
                    self._read_point(run)
                search.runs.append(run)
            self.searches.append(search)

    def _read_race_figures(self, entry: Entry, run: Run) -> None:
        try:
            run.figures_row, run.figures = read_point(Point(entry.name, entry.candidate.assignments),
                                                      FinishedRun(self.directory.path / run.run_dir))
        except (RunFilesError, ValueError, KeyError) as error:
            run.status, run.reason = "failed", f"its files cannot be read back: {error}"

    def _read_point(self, run: CountRun) -> None:
        try:
            run.point = camera_point(FinishedRun(self.directory.path / run.run_dir), self.request.bounds)
        except (RunFilesError, ValueError, KeyError) as error:
            run.status, run.reason = "failed", f"its files cannot be read back: {error}"

    # ---- running ----
    def elapsed(self) -> float:
        return self.spent_s + self.clock() - self.started

    def run(self) -> int:
        ended = run_within_budget(BudgetedSearch(self.budget_s, self._announced_work,
                                                 lambda stopped: self._write(stopped=stopped, final=True),
                                                 self.launcher.close, self.console, self.directory.path))
        if ended is None:
            return ExitStatus.FAILED
        return self._conclude(ended.document, ended.stopped)

    def _announced_work(self, stops: Stops, progress: tqdm) -> None:
        self.progress = progress
        self._announce()
        self._work(stops)

    def _announce(self) -> None:
        rate = f" at {self.camera_fps:g} fps" if self.camera_fps else ""
        tqdm.write(f"capacity {self.directory.run_id}: cameras of {self.source}{rate} within p99 "
                   f"{self.request.budget_ms:g} ms, at most {self.request.max_drop:.1%} dropped; "
                   f"{len(self.space.candidates)} candidate(s), budget {self.request.minutes:g} min, {self.cores} "
                   f"core(s)")
        for key, values in self.space.axes.items():
            tqdm.write(f"  {key}: {', '.join(values)}")
        for line in self.space.refusals:
            tqdm.write(f"  left out: {line}")
        for line in self.notes:
            tqdm.write(f"  {line}")

    def _work(self, stops: Stops) -> None:
        first = self._search_of(self._first_candidate().name, 0)
        self._search(first, stops, until_decided=1)
        if stops.received or self.failure:
            return
        if len(self.state.entries) > 1 and not self.state.done:
            self._race(stops)
            if stops.received or self.failure:
                return
            self.state.done = True
        for name in self._search_order():
            search = self._search_of(name, self._best_answer(excluding=name))
            self._search(search, stops)
            if stops.received or self.failure or self.out_of_time:
                return

    @property
    def out_of_time(self) -> bool:
        return self.elapsed() >= self.budget_s

    def _first_candidate(self) -> Candidate:
        """The config's own way and schedule where the space holds it, else the first look the CPU favours."""
        if self.searches:
            return self._entry(self.searches[0].candidate).candidate
        own = load_config(self.request.config_file, [*self.request.overrides, *self._camera_overrides(),
                                                     *self.stand_in])
        values = {BACKEND: own.runtime.backend, PRECISION: own.runtime.precision, BATCH: own.dataset.batch_size,
                  THREADS: own.runtime.threads}
        for candidate in self.space.candidates:
            if all(candidate.values.get(key, str(value)) == str(value) for key, value in values.items()
                   if value is not None):
                return candidate
        return first_looks(self.space.candidates, self.machine.flags)[0]

    def _entry(self, name: str) -> Entry:
        return next(entry for entry in self.state.entries if entry.name == name)

    def _search_of(self, name: str, floor: int) -> CandidateSearch:
        search = next((search for search in self.searches if search.candidate == name), None)
        if search is None:
            search = CandidateSearch(name, floor)
            self.searches.append(search)
        elif floor > search.floor:
            search.floor = floor
        return search

    def _best_answer(self, excluding: str) -> int:
        """The most cameras another eligible candidate was found to serve."""
        eligible = [search for search in self.searches
                    if search.candidate != excluding and self._eligible(search.candidate)]
        return max((search.answer(None).largest for search in eligible), default=0)

    def _eligible(self, name: str) -> bool:
        """A candidate whose verdict lets it win; one candidate alone always is (its verdict is said with it)."""
        return len(self.state.entries) == 1 or self._entry(name).can_win is True

    def _search_order(self) -> list[str]:
        """The race's leader, then the candidates it could not tell from it, by their figure; one candidate alone."""
        if len(self.state.entries) == 1:
            return [self.state.entries[0].name]
        alive = [standing(entry, self.goal) for entry in self.state.entries
                 if entry.dropped is None and entry.can_win is True and entry.complete]
        best = race.leader(alive)
        if best is None:
            return []
        others = sorted((s for s in alive if s is not best and s.rounds), key=lambda s: s.figure)
        return [best.name, *(s.name for s in others)]

    # ---- the search over N ----
    def _bound(self, search: CandidateSearch) -> Optional[float]:
        lowest = search.lowest()
        costs = lowest.point.costs if lowest is not None else None
        return cameras_bound(costs, self.cores) if costs is not None else None

    def _search(self, search: CandidateSearch, stops: Stops, until_decided: Optional[int] = None) -> None:
        """Its points one after another until it settles (or, `until_decided`, until that N is decided)."""
        while not stops.received and not self.failure:
            if until_decided is not None and search.verdicts().get(until_decided) is not None:
                return
            count = search.next_count(self._bound(search))
            if count is None:
                return
            duration = search.duration_s(count, self.request.point_s)
            if self.runs_done() and self.elapsed() + self._run_seconds(duration) > self.budget_s:
                self.notes.append(f"the time budget ran out before {search.candidate} ran {count} camera(s)")
                self.progress.n = self.progress.total
                return
            run = CountRun(search.candidate, count, self._run_name(f"{search.candidate},cameras={count}"), duration)
            search.runs.append(run)
            sets = point_sets(self.request, self.source, self._entry(search.candidate).candidate.overrides, count,
                              duration)
            group = [Planned(run.run_dir, arguments(self.request, sets, run.run_dir), self._count_settler(run), run)]
            check = self._check_run(search.candidate) if until_decided is not None else None
            self._launch([*([check] if check else []), *group], stops)
            if run.status == "failed":
                search.stopped = f"its run of {count} camera(s) failed: {run.reason}"
                if CANNOT_RUN in run.reason:
                    self.failure = f"{run.run_dir}: {run.reason}"
                return

    def _check_run(self, name: str) -> Optional[Planned]:
        """One candidate alone: its accuracy checked on images beside its first point, where there are images."""
        entry = self._entry(name)
        if len(self.state.entries) > 1 or entry.verdict is not None or not self.images or entry.runs:
            return None
        return self._image_run(entry, 1, checks=True)

    def _count_settler(self, run: CountRun) -> Callable[[PointOutcome, float, Stops], None]:
        def settle(outcome: PointOutcome, seconds: float, stops: Stops) -> None:
            run.seconds = seconds
            settled = RoundRun(1, self.directory.path / run.run_dir)
            settle_run(self.directory.path, Point(run.run_dir, ()), settled, outcome, stops)
            run.status, run.reason = settled.status, settled.reason
            if run.status == "complete":
                self._read_point(run)
            tqdm.write(self._count_line(run))
        return settle

    def _count_line(self, run: CountRun) -> str:
        reading = run.reading
        if reading is None:
            return f"{run.run_dir}: {run.status} ({run.reason})"
        p99 = "no frame detected" if reading.p99_ms is None else f"p99 {reading.p99_ms:.1f} ms"
        interval = (f" [{reading.p99_interval.low:.1f}-{reading.p99_interval.high:.1f}]"
                    if reading.p99_interval is not None else "")
        return (f"{run.run_dir}: {p99}{interval}, dropped {reading.drop_share:.1%}: "
                f"{'served' if reading.served else 'not served'}{'' if reading.sure else ' (not sure: run again)'}; "
                f"{reading.steadiness}")

    def runs_done(self) -> list:
        return [run for run in self._all_runs() if run.status in ("complete", "failed")]

    def _all_runs(self) -> list:
        return [*(run for entry in self.state.entries for run in entry.runs),
                *(run for search in self.searches for run in search.runs)]

    def _run_seconds(self, duration_s: float) -> float:
        """What a point of this window will take: the window, the warm-up and the median overhead seen so far."""
        done = [run for search in self.searches for run in search.runs if run.status == "complete"]
        overheads = [run.seconds + run.start_s - run.duration_s for run in done]
        overhead = statistics.median(overheads) if overheads else FIRST_RUN_GUESS_S
        return duration_s + self.request.warmup_s + max(0.0, overhead)

    def _run_name(self, name: str) -> str:
        taken = {run.run_dir for run in self._all_runs()}
        unique, attempt = name, 2
        while unique in taken or (self.directory.path / unique).exists():
            unique, attempt = f"{name},try={attempt}", attempt + 1
        return unique

    # ---- the race of the ways ----
    def _race(self, stops: Stops) -> None:
        while not stops.received and not self.failure:
            current = self._current_round()
            if current is None:
                return
            for name in current["order"]:
                entry = self._entry(name)
                if stops.received or entry.dropped is not None or self._ran_in(entry, current["number"]):
                    continue
                if current["number"] > 1 and self.elapsed() + self._group_seconds() > RACE_SHARE * self.budget_s:
                    current["capped"].append(name)
                    continue
                self._launch(self._race_group(entry, current["number"], current), stops)
            if stops.received:
                return
            self._close_round(current)

    def _ran_in(self, entry: Entry, number: int) -> bool:
        return any(run.round == number and run.status == "complete" and self.state.kinds.get(run.run_dir) ==
                   "flat_out" for run in entry.runs)

    def _group_seconds(self) -> float:
        runs = [run for entry in self.state.entries for run in entry.runs if run.status == "complete"]
        return statistics.median(run.seconds + run.start_s for run in runs) if runs else FIRST_RUN_GUESS_S

    def _current_round(self) -> Optional[dict]:
        rounds = self.state.rounds
        if rounds and not rounds[-1].get("closed"):
            return rounds[-1]
        number = len(rounds) + 1
        alive = [entry for entry in self.state.entries if entry.dropped is None]
        capped: list[str] = []
        if number == 1:
            names = [c.name for c in first_looks([entry.candidate for entry in alive], self.machine.flags)]
        else:
            if number == 2:
                self._halve()
                alive = [entry for entry in self.state.entries if entry.dropped is None]
            left = RACE_SHARE * self.budget_s - self.elapsed()
            size = race.cap(max(0.0, left), self._group_seconds())
            if number > RACE_ROUNDS or len(alive) < 2 or size < 2:
                return None
            chosen, left_out = race.next_field([standing(entry, self.goal) for entry in alive], size, 50.0,
                                               self._priors())
            names = [s.name for s in chosen]
            for standing_left in left_out:
                self._entry(standing_left.name).dropped = {
                    "round": number, "reason": f"left out of round {number}: the race's time pays for {size} runs "
                                               "and its best case ranked below them"}
                capped.append(standing_left.name)
        current = {"number": number, "field": names, "order": race.interleaved(names, number), "capped": capped,
                   "dropped": [], "closed": False}
        rounds.append(current)
        return current

    def _first_looks(self) -> dict:
        names = set(self.state.rounds[0]["field"]) if self.state.rounds else set()
        return {entry.candidate.way: entry for entry in self.state.entries if entry.name in names}

    def _priors(self) -> dict[str, float]:
        priors = {}
        looks = self._first_looks()
        for entry in self.state.entries:
            look = looks.get(entry.candidate.way)
            if not entry.complete and look is not None and standing(look, self.goal).rounds:
                priors[entry.name] = standing(look, self.goal).figure
        return priors

    def _halve(self) -> None:
        figures, stopped = {}, {}
        for way, look in self._first_looks().items():
            figure = standing(look, self.goal)
            if look.dropped is not None:
                stopped[way] = f"its way's first look ({look.name}) was dropped: {look.dropped['reason']}"
            elif not figure.rounds or look.can_win is not True:
                stopped[way] = f"its way's first look ({look.name}) has no figure that can win"
            else:
                figures[way] = figure.figure
        stopped.update(halve(figures).dropped)
        for entry in self.state.entries:
            if entry.candidate.way in stopped and entry.dropped is None:
                entry.dropped = {"round": 1, "reason": stopped[entry.candidate.way]}

    def _race_group(self, entry: Entry, number: int, current: dict) -> list[Planned]:
        """Its flat-out run, after an image run where its verdict is not settled: its way's check, or (its way
        judged already) a run whose detections are compared with the judged run's."""
        group = []
        if entry.verdict is None and self.images and not any(
                self.state.kinds.get(run.run_dir) in ("check", "images") and run.status == "pending"
                for run in entry.runs):
            judged = {e.candidate.way for e in self.state.entries if e.verdict_from == e.name}
            checking = {self._entry(name).candidate.way for name in current.get("checking", [])}
            checks = entry.needs_check or (entry.candidate.way not in judged and entry.candidate.way not in checking)
            if checks:
                current.setdefault("checking", []).append(entry.name)
            if checks or not any(self.state.kinds.get(run.run_dir) == "images" for run in entry.runs):
                group.append(self._image_run(entry, number, checks))
        run = Run(entry.name, number, False, self._run_name(f"{entry.name},round={number}"))
        entry.runs.append(run)
        self.state.kinds[run.run_dir] = "flat_out"
        if self.stream:
            sets = point_sets(self.request, self.source, entry.candidate.overrides, stream_probe(self._first_bound()),
                              self.request.point_s)
        else:
            sets = flat_out_sets(self.request, self.source, entry.candidate.overrides)
        group.append(Planned(run.run_dir, arguments(self.request, sets, run.run_dir), self._race_settler(entry, run),
                             run))
        return group

    def _first_bound(self) -> Optional[float]:
        return self._bound(self.searches[0]) if self.searches else None

    def _image_run(self, entry: Entry, number: int, checks: bool) -> Planned:
        kind = "check" if checks else "images"
        run = Run(entry.name, number, checks, self._run_name(f"{entry.name},{kind}"))
        entry.runs.append(run)
        self.state.kinds[run.run_dir] = kind
        sets = check_sets(self.request, self.images, entry.candidate.overrides, checks, self.images_found)
        return Planned(run.run_dir, arguments(self.request, sets, run.run_dir), self._race_settler(entry, run), run)

    def _race_settler(self, entry: Entry, run: Run) -> Callable[[PointOutcome, float, Stops], None]:
        def settle(outcome: PointOutcome, seconds: float, stops: Stops) -> None:
            run.seconds = seconds
            settled = RoundRun(run.round, self.directory.path / run.run_dir)
            settle_run(self.directory.path, Point(entry.name, entry.candidate.assignments), settled, outcome, stops)
            run.status, run.reason = settled.status, settled.reason
            run.figures_row, run.figures = settled.figures_row, settled.figures
            if run.status == "complete":
                take_verdict(entry, run)
                cost = self.goal.cost(run.figures)
                shown = self.goal.shown(cost) if cost else f"detections {run.figures.agreement}"
                tqdm.write(f"{run.run_dir}: {shown}")
            elif run.status == "failed":
                drop_failed(self.state.entries, entry, run)
                tqdm.write(f"{run.run_dir}: failed ({run.reason})")
            for line in settle_waiting(self.state.entries, self.directory.path):
                tqdm.write(line)
        return settle

    def _close_round(self, current: dict) -> None:
        number = current["number"]
        alive = [entry for entry in self.state.entries if entry.dropped is None and entry.complete]
        standings = [standing(entry, self.goal) for entry in alive]
        for drop in race.eliminate(standings, number, 50.0, self.goal.unit):
            self._entry(drop.name).dropped = {"round": number, "reason": drop.reason}
            current["dropped"].append(drop.name)
        best = race.leader(standings)
        if best is not None:
            self.state.leaders[number] = best.name
        current["closed"] = True
        self._write(stopped=None, final=False)
        tqdm.write(f"round {number}: {len(current['field'])} raced, {len(current['dropped'])} dropped"
                   + (f", leader {best.name} ({self.goal.shown(best.figure)})" if best else ""))

    # ---- processes ----
    def _launch(self, group: list[Planned], stops: Stops) -> None:
        """The group's runs in one process of `benchmark.py runs` (threads are the process's: one candidate's
        runs share one); each run's own time told apart from the process's start, which goes to the first."""
        spec = json.dumps([[item.run_dir, item.arguments] for item in group])
        job = PointJob(group[0].run_dir, ("runs", spec), self.directory.path / group[0].run_dir)
        began: list[float] = []

        def started(job: PointJob, where: str) -> None:
            began.append(self.clock())
            self.progress.set_postfix_str(f" {', '.join(item.run_dir for item in group)}"[:120])

        def finished(job: PointJob, outcome: PointOutcome) -> None:
            wall = self.clock() - (began[0] if began else self.clock())
            split = split_outcome([item.run_dir for item in group], outcome)
            for item in group:
                run_outcome, seconds = split[item.run_dir]
                item.settle(run_outcome, seconds, stops)
            group[0].timing.start_s = max(0.0, wall - sum(item.timing.seconds for item in group))
            self.progress.n = min(round(self.elapsed()), self.progress.total)
            self.progress.refresh()
            self._write(stopped=None, final=False)

        self.launcher.run([job], stops, started, finished)

    # ---- files ----
    def _searched(self) -> list[Searched]:
        return [Searched(search, self._entry(search.candidate).candidate.values,
                         self._entry(search.candidate).verdict, self._eligible(search.candidate))
                for search in self.searches]

    def _setting(self) -> Setting:
        return Setting(self.request.bounds, self.source, self.camera_fps, self.cores)

    def _write(self, stopped: Optional[int], final: bool) -> dict:
        answer = capacity_answer(self._searched(), self._setting())
        finished = final and not stopped
        status = "stopped" if stopped else "complete" if finished else "running"
        document = {
            "capacity_id": self.directory.run_id, "kind": "capacity", "status": status,
            "stop_reason": signal.Signals(stopped).name if stopped else None, "failure": self.failure,
            "config_file": self.request.config_file, "overrides": self.request.overrides,
            "source": self.source, "camera_fps": self.camera_fps, "live_stream": self.stream,
            "budget_ms": self.request.budget_ms, "max_drop": self.request.max_drop, "cores": self.cores,
            "images": self.images, "swept": {key: list(values) for key, values in self.space.axes.items()},
            "left_out": self.space.refusals, "notes": self.notes, "answer": answer,
            "race": (tune_answer(self.state.entries, self.goal, self.state.rounds, self.state.leaders)
                     if len(self.state.entries) > 1 else None),
            "time": {"budget_s": self.budget_s, "elapsed_s": self.elapsed(), "runs": len(self.runs_done())},
        }
        document["state"] = {
            "request": self.request.document(), "spent_s": self.elapsed(), "rounds": self.state.rounds,
            "leaders": self.state.leaders, "kinds": self.state.kinds, "done": self.state.done,
            "entries": [{"candidate": entry.name, "verdict": entry.verdict, "doubt": entry.doubt,
                         "verdict_from": entry.verdict_from, "needs_check": entry.needs_check,
                         "dropped": entry.dropped, "runs": [run.document() for run in entry.runs]}
                        for entry in self.state.entries],
            "searches": [search.document() for search in self.searches]}
        write_capacity_files(self.directory.path, document, self._rows(), report=final)
        return document

    def _rows(self) -> list[dict]:
        rows = []
        for entry in self.state.entries:
            for run in entry.runs:
                figures = run.figures_row or {}
                rows.append({"phase": "race", "candidate": entry.name, "kind": self.state.kinds.get(run.run_dir),
                             "round": run.round, "status": run.status, "reason": run.reason,
                             "fps_detected": figures.get("cameras_fps_detected"),
                             "p99_ms": figures.get("cameras_latency_p99_ms"),
                             "drop_share": figures.get("cameras_drop_share"),
                             "cpu_ms_per_frame": figures.get("cameras_cpu_ms_per_frame"),
                             "agreement": figures.get("agreement"), "seconds": run.seconds, "run_dir": run.run_dir})
        for search in self.searches:
            for run in search.runs:
                reading, figures = run.reading, (run.point.figures if run.point else {})
                rows.append({"phase": "search", "candidate": search.candidate, "kind": "point", "count": run.count,
                             "status": run.status, "reason": run.reason, "duration_s": run.duration_s,
                             **figures, **({} if reading is None else {
                                 "p99_ms": reading.p99_ms, "drop_share": reading.drop_share,
                                 "p99_low": reading.p99_interval.low if reading.p99_interval else None,
                                 "p99_high": reading.p99_interval.high if reading.p99_interval else None,
                                 "drop_low": reading.drop_interval.low if reading.drop_interval else None,
                                 "drop_high": reading.drop_interval.high if reading.drop_interval else None,
                                 "steady": reading.steady, "served": reading.served, "sure": reading.sure}),
                             "seconds": run.seconds, "run_dir": run.run_dir})
        return rows

    def _conclude(self, document: dict, stopped: Optional[int]) -> int:
        answer = document["answer"]
        if self.failure:
            self.console(f"error: a run cannot start with these inputs: {self.failure}; the runs are in "
                         f"{self.directory.path}")
            return ExitStatus.USAGE
        if document["race"]:
            self.console(f"race: {document['race']['statement']}")
        for search in answer["searches"]:
            self.console(f"{search['label']} (from {search['floor'] + 1} camera(s); {search['candidate']}):")
            for row in search["points"]:
                self.console(f"  {point_text(row)}")
        self.console(answer["statement"])
        self.console(f"outputs: {self.directory.path} ({CAPACITY_CSV}, {CAPACITY_JSON}, report.html)")
        if stopped:
            self.console(f"stopped by {signal.Signals(stopped).name}: what was measured is kept; continue with "
                         f"python benchmark.py capacity --resume {self.directory.path}")
            return ExitStatus.stopped_by(stopped)
        best = answer["best"]
        if best is not None and best["largest"] == 0 and best["first_not_served"] == 1:
            self.console("error: the latency budget or the drop bound is not met by one camera; raise --budget-ms "
                         "or --max-drop, lower --fps, or give a faster way of computing")
            return ExitStatus.USAGE
        return ExitStatus.OK
