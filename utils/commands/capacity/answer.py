"""The capacity answer: the largest N served by the best candidate searched, each N's figures, the bound from
isolated costs and how close the search came to it. Pure: the searches' state in, a plain dict out."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional, Sequence

from utils.commands.capacity.bound import bound_line, cameras_bound
from utils.commands.capacity.point import Bounds
from utils.commands.capacity.searches import CandidateSearch, CountRun
from utils.commands.capacity.search import point_verdict

VERDICT_WORDS = {True: "served", False: "not served", None: "undecided"}
BUSY_SHARE = 0.1  # other processes' share of the cores above which the bound on the cores they left is said too
SHORT_KEYS = {"dataset.batch_size": "batch", "runtime.threads": "threads", "runtime.streams": "streams"}


def label(values: dict[str, str]) -> str:
    """A candidate in a few words: its runtime and precision, then its schedule (pinning only when on)."""
    words = [values[key] for key in ("runtime.backend", "runtime.precision") if key in values]
    for key, value in values.items():
        if key in SHORT_KEYS:
            words.append(f"{SHORT_KEYS[key]} {value}")
        elif key == "runtime.pinning":
            words += ["pinned"] if value == "true" else []
        elif key not in ("runtime.backend", "runtime.precision"):
            words.append(f"{key}={value}")
    return " ".join(words) or "the config's own way"


@dataclass(frozen=True)
class Searched:
    """A candidate's search with what the race knows of it."""

    search: CandidateSearch
    values: dict[str, str]
    verdict: Optional[str]  # its accuracy verdict; None: not judged
    eligible: bool  # its verdict lets it be the answer (or nothing was judged: one way, no images)


@dataclass(frozen=True)
class Setting:
    """What the answer is about: the bounds, the source and its rate per camera, the cores."""

    bounds: Bounds
    source: str
    fps: Optional[float]
    cores: int


def _median(values: Sequence[Optional[float]]) -> Optional[float]:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def _interval(reading, name: str) -> Optional[list[float]]:
    interval = getattr(reading, name)
    return None if interval is None else [interval.low, interval.high]


def run_row(run: CountRun) -> dict:
    reading, figures = run.reading, run.point.figures if run.point else {}
    return {"run_dir": run.run_dir, "status": run.status, "reason": run.reason, "duration_s": run.duration_s,
            "fps_detected": figures.get("fps_detected"), "p99_ms": reading.p99_ms if reading else None,
            "p99_interval": _interval(reading, "p99_interval") if reading else None,
            "drop_share": reading.drop_share if reading else None,
            "drop_interval": _interval(reading, "drop_interval") if reading else None,
            "steady": reading.steady if reading else None, "steadiness": reading.steadiness if reading else None,
            "served": reading.served if reading else None, "sure": reading.sure if reading else None,
            "load_average": figures.get("load_average")}


def count_rows(search: CandidateSearch) -> list[dict]:
    """One row per N run: its verdict, the median of its runs' p99 and drops, and every run."""
    rows = []
    for count in sorted({run.count for run in search.runs}):
        runs = [run for run in search.runs if run.count == count]
        judged = [run.judgement() for run in runs if run.status == "complete" and run.judgement() is not None]
        shown = [run_row(run) for run in runs]
        rows.append({"count": count, "verdict": VERDICT_WORDS[point_verdict(judged) if judged else None],
                     "runs": shown, "p99_ms": _median([row["p99_ms"] for row in shown]),
                     "drop_share": _median([row["drop_share"] for row in shown]),
                     "fps_detected": _median([row["fps_detected"] for row in shown])})
    return rows


def point_text(row: dict) -> str:
    runs = [run for run in row["runs"] if run["p99_ms"] is not None]
    if not runs:
        return f"N={row['count']}: no figure ({'; '.join(run['reason'] for run in row['runs']) or 'not run'})"
    last = runs[-1]
    interval = last["p99_interval"]
    drops = last["drop_interval"]
    return (f"N={row['count']}: p99 {last['p99_ms']:.1f} ms"
            + (f" (95% interval {interval[0]:.1f}-{interval[1]:.1f})" if interval else "")
            + f", dropped {last['drop_share']:.1%}" + (f" ({drops[0]:.1%}-{drops[1]:.1%})" if drops else "")
            + (f", {last['fps_detected']:.2f} frames/s detected" if last["fps_detected"] is not None else "")
            + f": {row['verdict']}" + (f" over {len(row['runs'])} runs" if len(row["runs"]) > 1 else ""))


def _shown(search: CandidateSearch) -> int:
    """The most cameras a candidate's own runs served, up to its answer: a search raised to another's floor that
    serves nothing above it answers the floor, which is that other candidate's to claim, not its own."""
    largest = search.answer(None).largest
    return max((count for count, served in search.verdicts().items() if served and count <= largest), default=0)


def _best(searched: Sequence[Searched]) -> Optional[Searched]:
    eligible = [entry for entry in searched if entry.eligible]
    return max(eligible, key=lambda entry: _shown(entry.search)) if eligible else None


def capacity_answer(searched: Sequence[Searched], setting: Setting) -> dict:
    """`searched` in the order they were searched (the race's leader first: ties keep it)."""
    best = _best(searched)
    answer = {"best": None, "bound": None, "closeness": None, "searches": [], "statement": ""}
    bound_value = None
    if best is not None:
        lowest = best.search.lowest()
        costs = lowest.point.costs if lowest is not None else None
        if costs is not None:
            bound_value = cameras_bound(costs, setting.cores)
            figures = lowest.point.figures
            free = figures.get("free_cores")
            answer["bound"] = {"cameras": bound_value, "line": bound_line(costs, setting.cores),
                               "from_count": lowest.count, "run_dir": lowest.run_dir,
                               "decode_ms": costs.decode_ms, "pipeline_ms": costs.pipeline_ms,
                               "decoded_fps": costs.decoded_fps, "delivered_fps": costs.delivered_fps,
                               "other_processes_cpu_share": figures.get("other_processes_cpu_share"),
                               "free_cores": free, "load_average": figures.get("load_average"),
                               "cameras_on_free_cores": cameras_bound(costs, free) if free else None}
    for entry in searched:
        found = entry.search.answer(bound_value)
        answer["searches"].append({"candidate": entry.search.candidate, "label": label(entry.values),
                                   "values": entry.values,
                                   "verdict": entry.verdict, "eligible": entry.eligible, "floor": entry.search.floor,
                                   "largest": found.largest, "first_not_served": found.first_not_served,
                                   "settled": found.settled, "at_least": found.at_least,
                                   "disagreeing": list(found.disagreeing), "stopped": entry.search.stopped,
                                   "points": count_rows(entry.search)})
    if best is None:
        answer["statement"] = ("No candidate searched can be the answer: none has detections equal to the reference's "
                               "or within the accuracy budget. See the race's drops.")
        return answer
    found = best.search.answer(bound_value)
    rate = f" at {setting.fps:g} fps" if setting.fps else ""
    answer["best"] = {"candidate": best.search.candidate, "label": label(best.values), "values": best.values,
                      "largest": found.largest,
                      "first_not_served": found.first_not_served, "settled": found.settled,
                      "at_least": found.at_least, "verdict": best.verdict}
    if bound_value and found.largest:
        answer["closeness"] = found.largest / bound_value
    answer["statement"] = _statement(best, found, setting, rate, answer)
    return answer


def _statement(best: Searched, found, setting: Setting, rate: str, answer: dict) -> str:
    bounds = setting.bounds
    within = f"within p99 {bounds.budget_ms:g} ms from arrival with at most {bounds.max_drop:.1%} dropped"
    rows = {row["count"]: row for row in count_rows(best.search)}
    if found.largest == 0 and found.first_not_served == 1:
        text = (f"No number of cameras is served {within}: one camera of {setting.source}{rate} is not "
                f"({point_text(rows[1])}).")
    else:
        how_many = f"at least {found.largest}" if found.at_least else str(found.largest)
        text = (f"{how_many} camera(s) of {setting.source}{rate} served {within}, by {label(best.values)}"
                + (f" (detections {best.verdict})" if best.verdict else " (detections not judged)") + ".")
        if found.largest in rows:
            text += f" {point_text(rows[found.largest])}."
        if found.first_not_served in rows:
            text += f" {point_text(rows[found.first_not_served])}."
        if not found.settled:
            text += (f" Not settled: between {found.largest} and {found.first_not_served or 'more'} the search was cut "
                     "short" + (f" ({best.search.stopped})" if best.search.stopped else " (time or a stop)") + ".")
        if found.at_least:
            text += " That is the search's limit: more may be served."
    if found.disagreeing:
        text += (f" The machine's noise: N={', '.join(map(str, found.disagreeing))} was served above "
                 f"N={found.first_not_served}, which was not.")
    bound = answer["bound"]
    if bound is not None and bound["cameras"]:
        text += f" The bound from isolated costs (its run of {bound['from_count']} camera(s)): {bound['line']}"
        text += (f"; the search came to {answer['closeness']:.0%} of it." if answer["closeness"] is not None
                 else ".")
        busy = bound.get("other_processes_cpu_share")
        if busy is not None and busy > BUSY_SHARE and bound["cameras_on_free_cores"]:
            text += (f" Other processes used {busy:.0%} of the cores during that run (load average "
                     f"{bound['load_average']}): on the {bound['free_cores']:.2f} core(s) they left, the bound is "
                     f"{bound['cameras_on_free_cores']:.2f} cameras.")
    return text
