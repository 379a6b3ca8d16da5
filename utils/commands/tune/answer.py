"""The race's answer: the winner among the candidates whose verdict lets them win, its margin over the runner-up
(the ratio of their figures, a bootstrap interval, the rounds they shared), the `--set` line that reproduces
it, what was dropped and why, and how the time was spent. Pure: the race's state in, a plain dict out.
"""
from __future__ import annotations

from typing import Sequence

from utils.record.bootstrap import median_ratio_interval
from utils.commands.tune.goals import Goal
from utils.commands.tune.looks import FIRST_LOOK
from utils.commands.tune.race import Standing, leader
from utils.commands.tune.state import Entry


def standing(entry: Entry, goal: Goal) -> Standing:
    figures, samples = {}, []
    for run in entry.complete:
        cost = goal.cost(run.figures)
        if cost is not None:
            figures[run.round] = cost
            samples += goal.samples(run.figures)
    return Standing(entry.name, figures, tuple(samples), can_lead=entry.can_win is True)


def margin(best: Standing, runner_up: Standing) -> dict:
    """Beyond the noise only when the interval of the ratio lies above 1 and the runner-up was slower in every
    round they shared (two at least): each round's pair ran side by side, so the machine's drift cancels."""
    shared = sorted(set(best.figures) & set(runner_up.figures))
    by_round = [runner_up.figures[n] / best.figures[n] for n in shared]
    interval = median_ratio_interval(best.samples, runner_up.samples)
    document = {"ratio": runner_up.figure / best.figure, "ci_low": interval.low if interval else None,
                "ci_high": interval.high if interval else None, "rounds_shared": len(shared),
                "round_ratios": by_round}
    if interval is None:
        return dict(document, beyond_noise=False, note="too few samples for an interval: within the noise")
    if interval.low <= 1.0:
        return dict(document, beyond_noise=False, note="the 95% interval of the ratio includes 1: within the noise")
    if len(shared) < 2 or min(by_round) <= 1.0:
        return dict(document, beyond_noise=False,
                    note="the runner-up was not slower in each of at least 2 shared rounds: within the noise")
    return dict(document, beyond_noise=True,
                note=f"the 95% interval lies above 1 and the runner-up was slower in each of the {len(shared)} "
                     "rounds they shared: beyond the noise")


def set_line(entry: Entry, goal: Goal) -> str:
    return " ".join(f"--set {item}" for item in [*goal.overrides()[:1], *entry.candidate.overrides])


def tune_answer(entries: Sequence[Entry], goal: Goal, rounds: list[dict], leaders: dict[int, str]) -> dict:
    """`leaders`: the leader after each round, to count the rounds the winner held."""
    standings = {entry.name: standing(entry, goal) for entry in entries}
    eligible = [standings[entry.name] for entry in entries if entry.can_win]
    best = leader(eligible)
    answer = {"goal": goal.describe(), "winner": None, "runner_up": None, "margin": None, "set_line": None,
              "dropped": [{"candidate": entry.name, **entry.dropped} for entry in entries if entry.dropped],
              "rounds": rounds}
    if best is None:
        answer["statement"] = ("No candidate completed with a verdict that lets it win (equal detections, or within "
                               "the accuracy budget and not in doubt): there is no answer. See the drops.")
        return answer
    winner = next(entry for entry in entries if entry.name == best.name)
    others = [s for s in eligible if s is not best]
    runner = leader(others)
    held = sum(1 for name in leaders.values() if name == best.name)
    looked = sorted(run.round for run in winner.complete if run.look == FIRST_LOOK)
    answer.update(winner={"candidate": best.name, "values": winner.candidate.values, "figure": best.figure,
                          "shown": goal.shown(best.figure), "rounds": best.rounds, "rounds_led": held,
                          "first_look_rounds": looked, "verdict": winner.verdict, "verdict_from": winner.verdict_from,
                          "verdict_images": winner.verdict_images},
                  set_line=set_line(winner, goal))
    of_which = (("its only round a first look" if best.rounds == 1 else "round 1 its first look") if looked else "")
    images = f" on {winner.verdict_images} image(s)" if winner.verdict_images else ""
    text = (f"Fastest ({goal.describe()}): {best.name}, {goal.shown(best.figure)} over {best.rounds} round(s)"
            f"{f' ({of_which})' if of_which else ''}, leading after {held} of {len(leaders)}; detections "
            f"{winner.verdict}{images}"
            + (f" (the verdict of {winner.verdict_from}, detections checked equal)"
               if winner.verdict_from != best.name else "") + ".")
    if runner is None:
        text += " No other candidate could win, so there is no runner-up to beat."
    else:
        edge = margin(best, runner)
        answer.update(runner_up={"candidate": runner.name, "figure": runner.figure, "shown": goal.shown(runner.figure),
                                 "rounds": runner.rounds}, margin=edge)
        interval = (f", 95% CI {edge['ci_low']:.3f}-{edge['ci_high']:.3f}" if edge["ci_low"] is not None else "")
        text += (f" Runner-up {runner.name} ({goal.shown(runner.figure)}) takes x{edge['ratio']:.3f} as long"
                 f"{interval}, over {edge['rounds_shared']} shared round(s): {edge['note']}.")
    answer["statement"] = text + f" Reproduce it: {answer['set_line']}"
    return answer


def time_spent(runs: Sequence, budget_s: float, elapsed_s: float) -> dict:
    """Where the wall time went: starting processes, runs with their own accuracy check, runs timed only,
    the race's own work."""
    starts = sum(run.start_s for run in runs)
    checked = sum(run.seconds for run in runs if run.checks)
    timed = sum(run.seconds for run in runs if not run.checks)
    looks = [run for run in runs if run.look == FIRST_LOOK]
    return {"budget_s": budget_s, "elapsed_s": elapsed_s, "runs": len(runs), "process_starts_s": starts,
            "checked_runs_s": checked, "timing_runs_s": timed,
            "other_s": max(0.0, elapsed_s - starts - checked - timed),
            "first_looks": len(looks), "first_looks_s": sum(run.seconds + run.start_s for run in looks),
            "preparing_s": sum(run.preparation_s for run in runs),
            "failed_runs": sum(1 for run in runs if run.status == "failed")}


def spent_line(spent: dict) -> str:
    looks = spent.get("first_looks", 0)
    return (f"time: {spent['elapsed_s'] / 60:.1f} of {spent['budget_s'] / 60:.1f} min; {spent['runs']} runs"
            + (f" ({looks} first looks, {spent['first_looks_s']:.0f} s with their processes' starts)" if looks else "")
            + f": {spent['process_starts_s']:.0f} s starting processes, {spent['checked_runs_s']:.0f} s in runs that "
            f"checked their accuracy, {spent['timing_runs_s']:.0f} s in runs that only timed"
            + (f" ({spent['preparing_s']:.0f} s of them preparing models)" if spent.get("preparing_s", 0) >= 1 else "")
            + f", {spent['other_s']:.0f} s deciding and writing")


def round_lines(rounds: list[dict]) -> list[str]:
    """One line a round, with how long its runs were (a first look's or a full run's)."""
    return [f"round {entry['number']}" + (f" ({entry['look']['text']})" if entry.get("look") else "")
            + f": {len(entry['field'])} candidate(s), {entry.get('seconds', 0.0):.0f} s"
            + (f", {len(entry['capped'])} left out by the budget" if entry.get("capped") else "")
            + (f", dropped after it: {len(entry['dropped'])}" if entry.get("dropped") else "")
            for entry in rounds]

