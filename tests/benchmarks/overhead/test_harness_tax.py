import re
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

CONFIGURATIONS = ("bare", "bare, again", "memory_profiler sampler (old)", "memory sampler (new)", "step timer",
                  "energy at step boundaries", "cpu counters around batches", "loader, workers=1",
                  "loader, workers=0", "all (old memory), workers=1", "all, workers=1", "all, workers=0",
                  "all, no images fetched")
NUMBER = r"(\d+\.\d+)"


@pytest.mark.slow
def test_the_script_prints_every_configuration_with_its_ratio():
    # One thread: two threads' barriers wait on a busy shared machine far longer than the tiny forwards take.
    result = subprocess.run(
        [sys.executable, "benchmarks/overhead/harness_tax.py", "--arch", "yolov7-tiny", "--img-size", "64",
         "--rounds", "2", "--block-s", "0.05", "--warmup", "1", "--threads", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.match(r"yolov7-tiny at 64 on torch, batch 1, 1 threads, 2 rounds x \d+ forwards per configuration "
                    r"\(each beside a bare block of its own", lines[0])
    assert lines[1].startswith("a round counts for a configuration when other processes took at most 3%")
    assert lines[2].split() == ["configuration", "forward", "p50", "ms", "x", "bare", "90%", "interval", "mean", "x",
                                "bare", "per", "batch", "p50", "ms", "x", "bare", "quiet", "rounds"]
    rows = {}
    for line in lines[3:3 + len(CONFIGURATIONS)]:
        name, (*numbers, rounds) = line[:32].strip(), line[32:].split()
        # two rounds are too few for an interval; the bare row pairs each of its 24 blocks with itself
        assert numbers.pop(2) == ("1.000-1.000" if name == "bare" else "-")
        rows[name] = [float(number) for number in numbers]
        # Contended rounds are left out when quiet ones exist; the machine decides which, so either form. Every
        # configuration's block has a bare block beside it, so the bare row counts one per configuration per round.
        blocks = 2 * (len(CONFIGURATIONS) - 1) if name == "bare" else 2
        match = re.fullmatch(r"(\d+)/(\d+)(\*?)", rounds)
        assert match and int(match[2]) == blocks
        assert (int(match[1]) == 0) == (match[3] == "*") and int(match[1]) <= blocks
    assert tuple(rows) == CONFIGURATIONS
    assert all(len(numbers) == 5 and all(number > 0 for number in numbers) for numbers in rows.values())
    assert rows["bare"][1] == rows["bare"][2] == rows["bare"][4] == 1.0
    rest = "\n".join(lines[3 + len(CONFIGURATIONS):])
    assert re.search(rf"goal: none set for yolov7-tiny at 64 \(whole harness forward x bare {NUMBER}\)", rest)
    assert re.search(r"memory sampler \(new\): \d+ RSS samples; \d+ tree PSS reads while forwards were timed "
                     rf"\(\d+ blocks\), one read {NUMBER} ms", rest)
    assert "energy: " in rest
    assert re.search(rf"machine during the rounds: other processes {NUMBER}% of the cores", rest)


def test_the_goal_is_judged_by_the_rounds_interval_not_the_median_alone():
    from benchmarks.overhead.harness_tax import judge_goal

    assert judge_goal(1.009, (0.995, 1.020), 0.02) == "met"  # the interval's top on the goal counts as met
    assert judge_goal(1.030, (1.021, 1.050), 0.02) == "missed"
    drifting = judge_goal(1.060, (0.990, 1.120), 0.02)  # the median over the goal, the rounds on both sides
    assert drifting.startswith("not resolved") and "0.990-1.120 contains 1.02" in drifting
    assert judge_goal(1.001, (0.950, 1.040), 0.02).startswith("not resolved")
    assert judge_goal(1.019, None, 0.02).startswith("met (the median alone")
    assert judge_goal(1.021, None, 0.02).startswith("missed (the median alone")


def _goal_only(*extra: str) -> list[str]:
    """The script's output lines for 3 short rounds of just the goal's rows, tiny model, one thread."""
    result = subprocess.run(
        [sys.executable, "benchmarks/overhead/harness_tax.py", "--arch", "yolov7-tiny", "--img-size", "64",
         "--rounds", "3", "--block-s", "0.05", "--warmup", "1", "--threads", "1", "--goal-only", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.mark.slow
def test_goal_only_runs_just_the_rows_the_goal_is_judged_on():
    lines = _goal_only()
    names = [line[:32].strip() for line in lines[3:6]]
    # The whole harness as a run composes it: one thread on this machine's cores decides the loader's workers.
    assert names[:2] == ["bare", "bare, again"] and re.fullmatch(r"all, workers=[01]", names[2])
    assert lines[6].startswith("goal: none set")
    # The bare row pairs its block with itself beside each of the two others, every round.
    assert re.fullmatch(r"\d+/6\*?", lines[3].split()[-1])


def _forward_and_batch_ms(row: str) -> tuple[float, float]:
    """A table row's forward p50 and per-batch p50."""
    numbers = row[32:].split()
    return float(numbers[0]), float(numbers[4])


@pytest.mark.slow
def test_with_stages_runs_the_pipelines_letterbox_and_nms_around_every_forward_bare_included():
    lines, back_to_back = _goal_only("--with-stages"), _goal_only()
    forward, batch = _forward_and_batch_ms(lines[3])
    forward_alone, batch_alone = _forward_and_batch_ms(back_to_back[3])
    assert lines[3].startswith("bare") and back_to_back[3].startswith("bare")
    assert any(line.startswith("stages: every forward between the pipeline's own") for line in lines)
    assert any(line.startswith("stages: forwards back to back") for line in back_to_back)
    # Letterboxing a photo of about a megapixel and running NMS take far longer than the bookkeeping around a bare
    # forward (printed to the hundredth of a millisecond): the time per batch outside the forward grows fivefold.
    assert batch - forward > 5 * max(batch_alone - forward_alone, 0.01)
