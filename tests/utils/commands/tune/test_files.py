"""The files of a tune directory (utils/commands/tune/files.py) from a race's state built by hand: sweep.csv with the
race's columns before run_dir, sweep.json, tune.json for --resume, and at the end race.png (each candidate's line
round by round, the winner's drawn apart, a cross where one was dropped) and report.html; each written whole or
not at all."""
from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import pytest

from utils.commands.sweep.answer import PointFigures
from utils.commands.tune.answer import spent_line, standing, time_spent, tune_answer
from utils.commands.tune.goals import Goal
from utils.commands.tune.looks import FIRST_LOOK, FULL
from utils.commands.tune.space import Candidate
from utils.commands.tune.state import Entry, Run
from utils.commands.tune import files as tune_files
from utils.storage.atomic import OutputWriteError
from utils.commands.sweep.files import FIGURE_COLUMNS
from utils.commands.tune.files import RACE_PLOT, TUNE_JSON, plot_race, tune_columns, write_tune_files

LATENCY = Goal("latency")
KEYS = ["runtime.backend"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def entry(backend: str, per_round: list[float], dropped: dict | None = None) -> Entry:
    candidate = Candidate((("runtime.backend", backend),))
    runs = []
    for number, value in enumerate(per_round, start=1):
        figures = PointFigures(candidate.name, candidate.values, value, None, "equal",
                               (value * 0.99, value, value * 1.01))
        # Round 1 is each candidate's first look, 30 batches; later rounds are full runs.
        runs.append(Run(candidate.name, number, number == 1, f"{candidate.name},round={number}", "complete",
                        seconds=10.0, figures=figures, look=FIRST_LOOK if number == 1 else FULL,
                        timed_batches=30 if number == 1 else None))
    return Entry(candidate, runs, verdict="equal", verdict_from=candidate.name, dropped=dropped)


def row(item: Entry, p50: float, **extra) -> dict:
    done = [run.run_dir for run in item.complete]
    return {"point": item.name, "runtime.backend": item.candidate.values["runtime.backend"], "status": "complete",
            "reason": "", "rounds": len(done), "images_per_s": 1000.0 / p50, "p50_ms_per_image": p50,
            "agreement": "equal", "race": "in the race", "race_reason": "", "verdict_from": item.name,
            "verdict_images": 30, "looks": "first look (round 1); full (round 2)" if len(done) > 1 else
            "first look (round 1)", "run_dir": done[0], "round_run_dirs": done, **extra}


def race_document(status: str = "complete", random_weights: bool = False) -> dict:
    """a leads both rounds (10 ms), b follows (12 ms), c is dropped after round 1."""
    fast, slow = entry("a", [10.0, 10.0]), entry("b", [12.0, 12.0])
    gone = entry("c", [20.0], dropped={"round": 1, "reason": "slower than the leader"})
    entries = [fast, slow, gone]
    rounds = [{"number": 1, "field": [e.name for e in entries], "capped": [], "dropped": [gone.name], "seconds": 30.0,
               "look": {"kind": FIRST_LOOK, "text": "first looks: 1 timed pass of 30 batch(es)"}},
              {"number": 2, "field": [fast.name, slow.name], "capped": ["runtime.backend=d"], "dropped": [],
               "seconds": 20.0, "look": {"kind": FULL, "text": "full runs: every batch"}}]
    spent = time_spent([run for e in entries for run in e.runs], 600.0, 55.0)
    spent["statement"] = spent_line(spent)
    return {
        "sweep_id": "race", "kind": "tune", "status": status,
        "stop_reason": None if status == "complete" else "SIGINT", "config_file": "configs/samples_tiny.yaml",
        "overrides": [], "swept": {"runtime.backend": ["a", "b", "c"]}, "points": 3, "left_out": [], "notes": [],
        "answer": tune_answer(entries, LATENCY, rounds, {1: fast.name, 2: fast.name}), "time": spent,
        "unit": LATENCY.unit,
        "race": [{"candidate": e.name, "figures": standing(e, LATENCY).figures,
                  "looks": {run.round: run.look for run in e.complete},
                  "dropped_round": e.dropped["round"] if e.dropped else None} for e in entries],
        "rows": [row(fast, 10.0, random_weights=random_weights), row(slow, 12.0),
                 row(gone, 20.0, race="dropped in round 1", race_reason="slower than the leader")],
    }


STATE = {"status": "complete", "spent_s": 55.0, "rounds": [], "leaders": {1: "runtime.backend=a"},
         "entries": [{"candidate": "runtime.backend=a", "run_dir": Path("runtime.backend=a,round=1")}]}


def temporaries(folder: Path) -> list[str]:
    return [path.name for path in folder.rglob(".*")]


# --- the columns and the tables ------------------------------------------------------------------------------

def test_the_race_columns_come_just_before_run_dir():
    assert tune_columns(KEYS) == ["point", "runtime.backend", "status", "reason", "rounds", *FIGURE_COLUMNS,
                                  "race", "race_reason", "verdict_from", "verdict_images", "looks", "run_dir"]
    assert tune_columns(["a", "b"])[1:3] == ["a", "b"]


def test_without_the_report_only_the_tables_and_the_state_are_written(tmp_path):
    document = race_document()
    write_tune_files(tmp_path, document, STATE, KEYS, report=False)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["sweep.csv", "sweep.json", TUNE_JSON]
    with open(tmp_path / "sweep.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert list(table[0]) == tune_columns(KEYS)  # round_run_dirs, not a column, is left out
    assert [(r["point"], r["race"], r["race_reason"]) for r in table] == [
        ("runtime.backend=a", "in the race", ""), ("runtime.backend=b", "in the race", ""),
        ("runtime.backend=c", "dropped in round 1", "slower than the leader")]
    assert table[0]["run_dir"] == "runtime.backend=a,round=1" and table[0]["map_50_95"] == ""
    assert json.loads((tmp_path / "sweep.json").read_text())["answer"]["winner"]["candidate"] == "runtime.backend=a"


def test_tune_json_holds_the_state_for_resume_as_text(tmp_path):
    write_tune_files(tmp_path, race_document(), STATE, KEYS, report=False)
    text = (tmp_path / TUNE_JSON).read_text()
    assert text.endswith("}\n") and text.startswith('{\n  "status": "complete"')  # indented by 2
    state = json.loads(text)
    assert state["leaders"] == {"1": "runtime.backend=a"}  # JSON keys are text; --resume turns them back to numbers
    assert state["entries"][0]["run_dir"] == "runtime.backend=a,round=1"  # a Path, written as its text


# --- the report ----------------------------------------------------------------------------------------------

def test_the_report_states_the_answer_rounds_drops_and_candidates(tmp_path):
    document = race_document()
    assert document["answer"]["margin"]["beyond_noise"] is True  # 12 ms against 10 in each of 2 rounds
    write_tune_files(tmp_path, document, STATE, KEYS, report=True)
    assert (tmp_path / RACE_PLOT).read_bytes().startswith(PNG_MAGIC)
    page = html.unescape((tmp_path / "report.html").read_text())
    assert "<title>detbench tune race</title>" in page and "RANDOM WEIGHTS" not in page
    assert "runtime.backend=a</div><div class=\"label\">winner" in page
    assert ">10.00 ms/image (p50)</div>" in page and ">2 / 2</div><div class=\"label\">rounds run / led" in page
    assert ">1.2</div><div class=\"label\">runner-up takes (x)" in page and ">beyond the noise</div>" in page
    assert "runtime.backend=c (round 1): slower than the leader" in page
    assert "<h2>The race</h2>" in page and "data:image/png;base64," in page
    rounds = re.search(r"<h2>Rounds</h2>(.*?)</table>", page, re.S).group(1)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", rounds)
    # round, how long its runs were, field, capped, dropped, seconds
    assert cells == ["1", "first looks: 1 timed pass of 30 batch(es)", "3", "0", "1", "30",
                     "2", "full runs: every batch", "2", "1", "0", "20"]
    candidates = re.search(r"<h2>Candidates</h2>(.*?)</table>", page, re.S).group(1)
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", candidates)
    assert headers[0] == "runtime.backend" and headers[-5:] == ["doubt", "race", "verdict_from", "verdict_images",
                                                                "looks"]
    assert "images/s" in headers and not {"point", "reason", "run_dir", "random_weights", "race_reason"} & set(headers)
    assert "Axes: runtime.backend: a, b, c." in page
    assert "config configs/samples_tiny.yaml, overrides none;" in page and "console output in logs/." in page


def test_a_stopped_race_with_random_weights_says_both(tmp_path):
    document = race_document(status="stopped", random_weights=True)
    document["answer"]["margin"]["beyond_noise"] = False
    document["left_out"], document["notes"] = ["runtime.backend=e: not offered here"], ["a note"]
    document["overrides"] = ["benchmark.repeats=2"]
    write_tune_files(tmp_path, document, STATE, KEYS, report=True)
    page = html.unescape((tmp_path / "report.html").read_text())
    assert "RANDOM WEIGHTS: no model.weights given" in page
    assert "The race was stopped (SIGINT): the answer covers what was measured; --resume continues it." in page
    assert ">within the noise</div>" in page
    assert "left out before measuring: runtime.backend=e: not offered here" in page and ">a note</div>" in page
    assert "overrides benchmark.repeats=2;" in page


def test_no_winner_and_no_figure_leave_out_the_plot_and_the_winner(tmp_path):
    document = race_document()
    document["answer"] = tune_answer([entry("a", [])], LATENCY, [], {})
    document["race"] = [{"candidate": "runtime.backend=a", "figures": {}, "dropped_round": None}]
    write_tune_files(tmp_path, document, STATE, KEYS, report=True)
    page = (tmp_path / "report.html").read_text()
    assert not (tmp_path / RACE_PLOT).exists() and "<h2>The race</h2>" not in page
    assert "rounds run / led" not in page and "there is no answer" in page
    assert "<h2>Dropped</h2>" not in page


# --- the race plot ---------------------------------------------------------------------------------------------

@pytest.fixture
def recorded(monkeypatch):
    made = []

    class RecordingFigure(tune_files.Figure):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(tune_files, "Figure", RecordingFigure)
    return made


def test_the_plot_draws_each_round_in_number_order_and_sets_the_winner_apart(tmp_path, recorded):
    race = [{"candidate": "a", "figures": {"10": 5.0, "2": 6.0, "1": 7.0}, "dropped_round": None},  # as JSON reads
            {"candidate": "b", "figures": {1: 8.0, 2: 9.0}, "dropped_round": 2},
            {"candidate": "never ran", "figures": {}, "dropped_round": None}]
    path = plot_race(race, "a", " ms/image", tmp_path / "race.png")
    assert path == tmp_path / "race.png" and path.read_bytes().startswith(PNG_MAGIC)
    assert temporaries(tmp_path) == []
    axes = recorded[0].axes[0]
    winner, other, cross = axes.get_lines()  # nothing drawn for the candidate that never ran
    assert list(winner.get_xdata()) == [1, 2, 10] and list(winner.get_ydata()) == [7.0, 6.0, 5.0]
    assert winner.get_linewidth() == 2.5 and winner.get_color() == "#1a7f37" and winner.get_label() == "a"
    assert other.get_linewidth() == 0.8 and other.get_color() == "#9ca3af" and other.get_label().startswith("_")
    assert list(cross.get_xdata()) == [2] and list(cross.get_ydata()) == [9.0] and cross.get_marker() == "x"
    assert axes.get_ylabel() == "ms/image" and axes.get_xlabel() == "round"
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["a"]


def test_the_plot_has_no_legend_without_a_winner(tmp_path, recorded):
    plot_race([{"candidate": "a", "figures": {1: 5.0}, "dropped_round": None}], None, " ms/sample",
              tmp_path / "race.png")
    assert recorded[0].axes[0].get_legend() is None


def test_no_figure_no_plot(tmp_path):
    assert plot_race([{"candidate": "a", "figures": {}, "dropped_round": 1}], "a", " ms/image",
                     tmp_path / "race.png") is None
    assert list(tmp_path.iterdir()) == []


# --- whole or not at all -----------------------------------------------------------------------------------------

class Unprintable:
    def __str__(self) -> str:
        raise ValueError("this value cannot be written")


def test_a_write_that_fails_midway_leaves_the_earlier_files_whole(tmp_path):
    write_tune_files(tmp_path, race_document(), STATE, KEYS, report=False)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    broken = race_document()
    broken["rows"][1]["images_per_s"] = Unprintable()  # the second row of sweep.csv cannot be written
    with pytest.raises(ValueError, match="cannot be written"):
        write_tune_files(tmp_path, broken, dict(STATE, status="running"), KEYS, report=False)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before
    assert temporaries(tmp_path) == []


def test_a_file_that_cannot_be_replaced_is_named(tmp_path):
    (tmp_path / TUNE_JSON).mkdir()  # a directory where tune.json goes
    with pytest.raises(OutputWriteError, match=f"could not write {re.escape(str(tmp_path / TUNE_JSON))}"):
        write_tune_files(tmp_path, race_document(), STATE, KEYS, report=False)
    assert (tmp_path / "sweep.csv").is_file() and (tmp_path / "sweep.json").is_file()  # each one whole
    assert temporaries(tmp_path) == []
