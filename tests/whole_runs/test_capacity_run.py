"""`benchmark.py capacity` once, end to end, on a clip the tests make: two batch sizes of the reference way race
flat out before the search over N, and its files say all of it (the search, the refusals and the answer's words are
the pure modules' tests in tests/utils/commands/capacity/)."""
import csv
import json

import pytest

from tests.support.clips import moving_shapes, write_clip
from tests.support.paths import CONFIGS
from utils.commands.capacity.command import capacity_main

pytestmark = pytest.mark.slow

QUICK = ("--point-s", "4", "--warmup-s", "0.5")  # 4 s: the fewest seconds a point's interval is drawn from
SETS = ("preprocess.img_size=96", "runtime.threads=1", "runtime.precision=fp32", "runtime.backend=torch",
        "benchmark.memory.enabled=false")


def test_batch_sizes_of_the_reference_way_race_before_the_search(tmp_path, capsys):
    clip = write_clip(tmp_path / "shapes.mp4", moving_shapes(160, 96, 30), fps=15)
    sets = [part for item in (*SETS, f"run.output_dir={tmp_path}", "run.id=race") for part in ("--set", item)]
    code = capacity_main(["--config", str(CONFIGS / "cameras.yaml"), "--source", str(clip), *QUICK, *sets,
                          "--sweep", "dataset.batch_size=1,2", "--budget-ms", "5000", "--max-drop", "0.9",
                          "--minutes", "0.55"])
    out = capsys.readouterr().out
    assert code == 0, out
    folder = tmp_path / "race"
    with open(folder / "capacity.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert {row["kind"] for row in table} >= {"flat_out", "point"}
    assert not any(row["kind"] in ("check", "images") for row in table)  # torch fp32 is the reference itself
    document = json.loads((folder / "capacity.json").read_text())
    assert document["race"]["winner"] is not None and "race: Fastest" in out
    assert document["answer"]["best"]["largest"] >= 1 and document["answer"]["bound"]["cameras"] > 0
    assert "N=1: p99" in out and document["state"]["searches"][0]["runs"][0]["count"] == 1
    assert (folder / "capacity.png").is_file() and "Answer" in (folder / "report.html").read_text()
