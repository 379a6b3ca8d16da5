"""utils.commands.compare.command: `benchmark.py compare RUN_A RUN_B`: the console report of what differs between two runs,
compare.csv and compare.html, and with --fail-above the regression gate's exit status.

Tested on tiny hand-written run directories (summary.json, config.yaml, steps_timer.csv): the exit statuses
(0 passed, 1 regressed, 2 a user's mistake with a message naming the option or folder and the fix), the
report's sections and clipping, and the default output folder's name."""
import json
from types import SimpleNamespace

import pandas as pd
import pytest

from utils.commands.compare.command import compare_main, default_folder, report
from utils.commands.compare.comparison import Comparison
from utils.storage import layout

HEADER = "step,parent,pass_kind,pass_index,batch,images,ms,warmup,start_s,end_s,cold_shape\n"
STEADY = (10.0, 10.2, 9.8, 10.1, 9.9, 10.0)


def write_run(folder, pipeline_ms=STEADY, threads=2):
    """A run directory with two timed steps per batch (pipeline and forward, 80% of it) for 1 image each."""
    folder.mkdir()
    (folder / layout.SUMMARY).write_text(json.dumps({"model": "yolov7-tiny", "threads": threads}))
    (folder / layout.CONFIG).write_text("run:\n  id: x\ndataset:\n  batch_size: 1\n")
    rows = [f"{step},run,timed,0,{batch},1,{ms * share},False,0,0,False\n"
            for batch, ms in enumerate(pipeline_ms) for step, share in (("pipeline", 1.0), ("forward", 0.8))]
    (folder / layout.STEPS_TIMER).write_text(HEADER + "".join(rows))
    return str(folder)


@pytest.fixture
def runs(tmp_path):
    return (write_run(tmp_path / "base"), write_run(tmp_path / "slower", [2 * ms for ms in STEADY], threads=4),
            tmp_path / "out")


def test_compare_reports_what_differs_and_writes_its_files(runs, capsys):
    base, slower, out = runs
    assert compare_main([base, slower, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    # 8 summary keys and config.dataset.batch_size (config.run.id is left out); only summary.threads differs
    assert "Environment: 1 field(s) differ, 8 are the same" in printed
    assert "summary.threads" in printed
    assert "no layer_types.csv in base and slower (layer timing off or skipped)" in printed
    table = pd.read_csv(out / layout.COMPARE_CSV)
    assert table.loc[table["section"] == "environment", "name"].tolist() == ["summary.threads"]
    pipeline = table[(table["section"] == "step") & (table["name"] == "pipeline")].iloc[0]
    assert pipeline["ratio"] == pytest.approx(2.0)
    assert (out / layout.COMPARE_HTML).is_file()


def test_the_gate_fails_a_run_twice_as_slow(runs, capsys):
    base, slower, out = runs
    assert compare_main([base, slower, "--out", str(out), "--fail-above", "5"]) == 1
    assert capsys.readouterr().out.rstrip().endswith("gate: FAILED on latency")


def test_the_gate_passes_a_run_against_itself(runs, capsys):
    base, _, out = runs
    assert compare_main([base, base, "--out", str(out), "--fail-above", "5", "--metric", "throughput"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("gate: passed")


@pytest.mark.parametrize("options, message", [
    (["--metric", "latency"], "error: compare: --metric chooses what the gate judges: add --fail-above PCT"),
    (["--fail-above", "fast"], "error: compare: --fail-above 'fast' is not a number; give a percentage such as 5"),
    (["--fail-above", "-1"], "error: compare: --fail-above -1 must be a finite number of at least 0"),
])
def test_a_wrong_gate_option_is_a_usage_error_naming_it(runs, capsys, options, message):
    base, slower, out = runs
    assert compare_main([base, slower, "--out", str(out), *options]) == 2
    assert capsys.readouterr().err.startswith(message)
    assert not out.exists()


def test_a_folder_that_is_no_run_is_a_usage_error_with_the_fix(runs, tmp_path, capsys):
    base, _, out = runs
    assert compare_main([base, str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "missing is not a folder; pass a run directory such as outputs/<run_id>" in capsys.readouterr().err


def test_default_folder_replaces_unsafe_characters():
    a, b = SimpleNamespace(name="run one"), SimpleNamespace(name="b/../x")
    assert str(default_folder(a, b)) == "outputs/compare_run_one_vs_b_.._x"


def test_report_clips_long_values_and_marks_absent_fields():
    a, b = SimpleNamespace(path="A", killed=False), SimpleNamespace(path="B", killed=False)
    environment = [{"field": "env.torch_build_config", "a": "x" * 100, "b": None}]
    text = report(a, b, Comparison(environment, 3, [], [], []))
    assert "Environment: 1 field(s) differ, 3 are the same" in text
    assert "x" * 60 + " " in text and "x" * 61 not in text
    assert "(absent)" in text


def test_report_names_a_killed_run_and_where_it_holds():
    killed = SimpleNamespace(path="B", killed=True, killed_note=lambda: "B was killed ...: up to the timed pass 2, batch 3")
    lines = report(SimpleNamespace(path="A", killed=False), killed, Comparison([], 0, [], [], [])).splitlines()
    assert lines[2] == "note: B: B was killed ...: up to the timed pass 2, batch 3; compared on those batches"
    assert not [line for line in lines if line.startswith("note: A")]


def test_report_names_each_step_verdict():
    a, b = SimpleNamespace(path="A", killed=False), SimpleNamespace(path="B", killed=False)
    steps = [{"name": "pipeline", "a": 1.0, "b": 2.0, "ratio": 2.0, "significant": True},
             {"name": "load", "a": 1.0, "b": 1.0, "ratio": 1.0, "significant": False},
             {"name": "nms", "a": 1.0, "b": None, "significant": None}]
    lines = report(a, b, Comparison([], 0, steps, [], [])).splitlines()
    verdicts = {line.split()[0]: line for line in lines if line.strip().startswith(("pipeline", "load", "nms"))}
    assert "significant" in verdicts["pipeline"] and "noise" in verdicts["load"]
    assert "significant" not in verdicts["nms"] and "noise" not in verdicts["nms"]
