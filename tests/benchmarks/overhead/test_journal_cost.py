"""benchmarks/overhead/journal_cost.py runs on the harness's own batch loop and journal: a change to either that the
script did not follow shows here, not on the day the journal's cost is measured again."""
import re
import subprocess
import sys

import pytest

from tests.support.paths import ROOT


@pytest.mark.slow
def test_the_script_prints_each_block_with_its_ratio_and_a_verdict():
    result = subprocess.run([sys.executable, "benchmarks/overhead/journal_cost.py", "--img-size", "64", "--rounds", "3",
                             "--batches", "2"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == ["round 1/3", "round 2/3", "round 3/3"]
    rows = {}
    for line in lines:
        match = re.fullmatch(r"(memory|journal|memory, again) +(\d+\.\d+) +(\d+\.\d+) +(.+?) +(\d+\.\d+)", line)
        if match:
            rows[match[1]] = (float(match[2]), float(match[3]), match[4], float(match[5]))
    assert list(rows) == ["memory", "journal", "memory, again"], result.stdout
    assert rows["memory"][1] == 1.0 and all(row[0] > 0 and row[3] > 0 for row in rows.values())
    assert lines[-1].startswith("goal: the journal's pipeline p50 at most x1.01 the in-memory record's: ")
