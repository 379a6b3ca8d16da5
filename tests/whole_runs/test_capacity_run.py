"""`benchmark.py capacity` on a clip the tests make: one camera that no budget of a millisecond serves ends with
its figures and exit status 2; a search cut short by its time is continued by --resume from where it stopped; and
two batch sizes of the reference way race before the search, its files saying all of it."""
import csv
import json

import pytest

from tests.support.clips import moving_shapes, write_clip
from tests.support.paths import CONFIGS
from utils.commands.capacity.command import capacity_main

pytestmark = pytest.mark.slow

QUICK = ("--point-s", "4", "--warmup-s", "0.5")  # 4 s: the fewest seconds a point's interval is drawn from
SETS = ("preprocess.img_size=64", "runtime.threads=1", "runtime.precision=fp32", "runtime.backend=torch",
        "benchmark.memory.enabled=false")


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return write_clip(tmp_path_factory.mktemp("clip") / "shapes.mp4", moving_shapes(160, 96, 30), fps=15)


def capacity(folder, clip, run_id, *arguments):
    sets = [part for item in (*SETS, f"run.output_dir={folder}", f"run.id={run_id}") for part in ("--set", item)]
    return capacity_main(["--config", str(CONFIGS / "cameras.yaml"), "--source", str(clip), *QUICK, *sets,
                          *arguments])


def rows(folder):
    with open(folder / "capacity.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_budget_one_camera_cannot_meet_ends_with_its_figures(tmp_path, clip, capsys):
    code = capacity(tmp_path, clip, "tight", "--set", "dataset.batch_size=1", "--budget-ms", "0.01",
                    "--max-drop", "0", "--minutes", "3")
    out = capsys.readouterr().out
    assert code == 2
    assert "No number of cameras is served within p99 0.01 ms" in out and "N=1: p99" in out
    assert "error: the latency budget or the drop bound is not met by one camera" in out
    points = [row for row in rows(tmp_path / "tight") if row["kind"] == "point"]
    assert {row["count"] for row in points} == {"1"} and all(row["served"] == "False" for row in points)
    document = json.loads((tmp_path / "tight" / "capacity.json").read_text())
    assert document["answer"]["best"]["largest"] == 0 and document["answer"]["bound"]["cameras"] > 0


def test_a_search_cut_short_by_its_time_is_resumed_where_it_stopped(tmp_path, clip, capsys):
    assert capacity(tmp_path, clip, "cut", "--set", "dataset.batch_size=1", "--budget-ms", "5000",
                    "--max-drop", "0.9", "--minutes", "0.05") == 0
    folder = tmp_path / "cut"
    first = [row["count"] for row in rows(folder) if row["kind"] == "point"]
    assert first == ["1"]  # the first run always goes; the next would overrun the budget
    assert "Not settled" in capsys.readouterr().out
    assert capacity_main(["--resume", str(folder), "--minutes", "0.8"]) == 0
    counts = [row["count"] for row in rows(folder) if row["kind"] == "point" and row["status"] == "complete"]
    assert list(dict.fromkeys(counts))[:2] == ["1", "2"]  # on from the point it had (run again if it was unsure)
    document = json.loads((folder / "capacity.json").read_text())
    assert document["status"] == "complete" and (folder / "report.html").is_file()


def test_batch_sizes_of_the_reference_way_race_before_the_search(tmp_path, clip, capsys):
    code = capacity(tmp_path, clip, "race", "--sweep", "dataset.batch_size=1,2", "--budget-ms", "5000",
                    "--max-drop", "0.9", "--minutes", "1.5")
    out = capsys.readouterr().out
    assert code == 0, out
    folder = tmp_path / "race"
    table = rows(folder)
    assert {row["kind"] for row in table} >= {"flat_out", "point"}
    assert not any(row["kind"] in ("check", "images") for row in table)  # torch fp32 is the reference itself
    document = json.loads((folder / "capacity.json").read_text())
    assert document["race"]["winner"] is not None and "race: Fastest" in out
    assert document["answer"]["best"]["largest"] >= 1
    assert (folder / "capacity.png").is_file() and "Answer" in (folder / "report.html").read_text()
