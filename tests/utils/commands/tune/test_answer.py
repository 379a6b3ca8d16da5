"""The race's answer (utils/commands/tune/answer.py): never a candidate whose verdict fails or is in doubt; its margin
beyond the noise only when the interval and every shared round say so."""
from utils.commands.sweep.answer import PointFigures
from utils.commands.tune.answer import margin, set_line, time_spent, tune_answer
from utils.commands.tune.goals import Goal
from utils.commands.tune.race import Standing
from utils.commands.tune.space import Candidate
from utils.commands.tune.state import Entry, Run

LATENCY = Goal("latency")


def entry(backend, per_round, verdict="equal", doubt=None):
    candidate = Candidate((("runtime.backend", backend), ("dataset.batch_size", "1")))
    runs = []
    for number, value in enumerate(per_round, start=1):
        figures = PointFigures(candidate.name, candidate.values, value, None, verdict,
                               (value * 0.99, value, value * 1.01))
        runs.append(Run(candidate.name, number, number == 1, f"{candidate.name},round={number}", "complete",
                        seconds=10.0, figures=figures))
    return Entry(candidate, runs, verdict=verdict, doubt=doubt, verdict_from=candidate.name)


def test_the_winner_is_never_a_candidate_whose_verdict_fails():
    different = entry("a", [5.0, 5.0], verdict="different")
    undecided = entry("b", [6.0, 6.0], verdict="undecided", doubt="undecided: 6 images")
    honest = entry("c", [10.0, 10.0])
    answer = tune_answer([different, undecided, honest], LATENCY, [], {1: honest.name, 2: honest.name})
    assert answer["winner"]["candidate"] == honest.name
    assert answer["runner_up"] is None and "no runner-up" in answer["statement"]


def test_no_answer_when_nothing_can_win():
    answer = tune_answer([entry("a", [5.0], verdict="different")], LATENCY, [], {})
    assert answer["winner"] is None and "no answer" in answer["statement"]


def test_margin_beyond_the_noise_needs_every_shared_round():
    best = Standing("best", {1: 10.0, 2: 10.0}, (10.0, 10.1, 9.9, 10.0, 10.1, 9.9))
    slower = Standing("slow", {1: 12.0, 2: 12.0}, (12.0, 12.1, 11.9, 12.0, 12.1, 11.9))
    edge = margin(best, slower)
    assert edge["beyond_noise"] and edge["rounds_shared"] == 2
    assert edge["round_ratios"] == [1.2, 1.2]
    once = margin(Standing("best", {1: 10.0}, best.samples), Standing("slow", {1: 12.0}, slower.samples))
    assert not once["beyond_noise"] and "2 shared rounds" in once["note"]


def test_the_answer_says_the_set_line_and_the_rounds_led():
    fast, slow = entry("a", [10.0, 10.0]), entry("b", [12.0, 12.0])
    answer = tune_answer([slow, fast], LATENCY, [], {1: slow.name, 2: fast.name})
    assert answer["winner"]["rounds_led"] == 1 and answer["winner"]["rounds"] == 2
    assert answer["set_line"] == ("--set benchmark.scenario=single_stream --set runtime.backend=a "
                                  "--set dataset.batch_size=1")
    assert answer["set_line"] in answer["statement"]
    assert set_line(fast, LATENCY).startswith("--set benchmark.scenario=single_stream")


def test_time_spent_splits_checked_and_timing_runs():
    runs = entry("a", [10.0, 10.0]).runs
    runs[0].start_s = 3.0
    spent = time_spent(runs, 600.0, 25.0)
    assert spent["checked_runs_s"] == 10.0 and spent["timing_runs_s"] == 10.0
    assert spent["process_starts_s"] == 3.0 and spent["other_s"] == 2.0
