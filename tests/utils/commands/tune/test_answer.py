"""The race's answer (utils/commands/tune/answer.py): never a candidate whose verdict fails or is in doubt; its margin
beyond the noise only when the interval and every shared round say so."""
from utils.commands.sweep.answer import PointFigures
from utils.commands.tune.answer import margin, round_lines, set_line, spent_line, time_spent, tune_answer
from utils.commands.tune.goals import Goal
from utils.commands.tune.looks import FIRST_LOOK
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


def looked(backend, per_round, verdict_images=30):
    """Round 1 a first look of 30 batches, the later rounds full runs."""
    item = entry(backend, per_round)
    item.runs[0].look, item.runs[0].timed_batches = FIRST_LOOK, 30
    item.verdict_images = verdict_images
    return item


def test_the_answer_tells_a_first_looks_figure_from_a_full_runs_and_says_the_verdicts_images():
    fast, slow = looked("a", [10.0, 10.0, 10.0]), looked("b", [12.0])
    answer = tune_answer([slow, fast], LATENCY, [], {1: fast.name, 2: fast.name, 3: fast.name})
    assert answer["winner"]["first_look_rounds"] == [1] and answer["winner"]["verdict_images"] == 30
    assert "over 3 round(s) (round 1 its first look)" in answer["statement"]
    assert "detections equal on 30 image(s)" in answer["statement"]
    # Picked on first looks alone (a budget that paid for nothing more), it says so.
    alone = tune_answer([looked("a", [10.0]), slow], LATENCY, [], {1: "runtime.backend=a,dataset.batch_size=1"})
    assert "over 1 round(s) (its only round a first look)" in alone["statement"]


def test_round_lines_say_how_long_each_rounds_runs_were():
    rounds = [{"number": 1, "field": ["a", "b"], "seconds": 40.0, "look": {"text": "first looks: 1 timed pass of 30 "
                                                                                  "batch(es), verdicts on 30 images"}},
              {"number": 2, "field": ["a"], "seconds": 90.0, "capped": ["b"],
               "look": {"text": "full runs: every batch (200 images) in 3 timed pass(es)"}}]
    assert round_lines(rounds) == [
        "round 1 (first looks: 1 timed pass of 30 batch(es), verdicts on 30 images): 2 candidate(s), 40 s",
        "round 2 (full runs: every batch (200 images) in 3 timed pass(es)): 1 candidate(s), 90 s, 1 left out by the "
        "budget"]


def test_time_spent_says_what_the_first_looks_took_and_what_preparing_models_did():
    runs = looked("a", [10.0, 10.0]).runs
    runs[0].start_s, runs[0].preparation_s = 3.0, 4.0
    spent = time_spent(runs, 600.0, 25.0)
    assert spent["first_looks"] == 1 and spent["first_looks_s"] == 13.0 and spent["preparing_s"] == 4.0
    assert "2 runs (1 first looks, 13 s with their processes' starts)" in spent_line(spent)
    assert "(4 s of them preparing models)" in spent_line(spent)
