"""`benchmark.py tune` end to end (utils/commands/tune/driver.py): a small race on yolov7-tiny at 128 stopped by Ctrl-C,
resumed, and its files; a budget too short for one round; first looks shorter than the full runs after them, on
labelled scenes; a throughput race under LoadGen."""
import html
import json
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from tests.support.helpers import quick_args
from tests.support.paths import ROOT, SHAPES

pytestmark = pytest.mark.slow

# Two candidates of one runtime: torch fp32 is the reference, so no accuracy check is paid.
# Every run skips the memory fit's probe forwards (benchmark.memory.check): no test here is about it.
NO_FIT = "benchmark.memory.check=false"
SMALL = ["--set", "runtime.backend=torch", "--set", "runtime.precision=fp32", "--set", "runtime.threads=1",
         "--sweep", "dataset.batch_size=1,2"]


def tune(output_dir, *arguments, run_id="race"):
    command = [sys.executable, str(ROOT / "benchmark.py"), "tune", *quick_args(128, "benchmark.repeats=2", NO_FIT),
               "--set", f"run.output_dir={output_dir}", "--set", f"run.id={run_id}", *SMALL, *arguments]
    return command


def finish(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout, done.stderr


def test_a_budget_too_short_for_one_round_says_what_fits(tmp_path):
    status, _, stderr = finish(tune(tmp_path, "--minutes", "0.01"))
    assert status == 2
    # One way (torch fp32 at batch 1 and 2): its first look is the floor.
    assert ("is too short: a short first look at each of the 1 ways of computing (first looks: 1 timed pass of 6 "
            "batch(es)) takes at least") in stderr
    assert "(1 process(es): the first look took" in stderr and "Give --minutes 1 or more" in stderr
    assert "--resume" in stderr and "Traceback" not in stderr


def test_a_stopped_race_keeps_what_it_measured_resumes_and_writes_its_answer(tmp_path, spawn):
    folder = tmp_path / "race"
    # spawn: Ctrl-C live in the child even where the suite runs as a background job, and no race left going.
    child = spawn(tune(tmp_path, "--minutes", "5"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    state = folder / "tune.json"
    while time.monotonic() < deadline:  # stop it once the first run is in
        if state.is_file() and '"status": "complete"' in state.read_text():
            break
        time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=300)
    assert child.returncode == 130, stderr
    kept = json.loads(state.read_text())
    assert kept["status"] == "stopped"
    assert json.loads((folder / "sweep.json").read_text())["follow_up"] is None  # no winner to follow up yet
    measured = [run["run_dir"] for entry in kept["entries"] for run in entry["runs"] if run["status"] == "complete"]
    assert measured
    # A short budget on resuming: what the test needs is the stopped round finished, not a long race.
    resumed = subprocess.run([sys.executable, str(ROOT / "benchmark.py"), "tune", "--resume", str(folder),
                              "--minutes", "1", "--rounds", "2"], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads(state.read_text())
    assert final["status"] == "complete" and len(final["rounds"]) <= 2 and final["request"]["rounds"] == 2
    assert final["rounds"][0]["field"] and final["spent_s"] > 0
    runs = {run["run_dir"]: run["status"] for entry in final["entries"] for run in entry["runs"]}
    assert all(runs[name] == "complete" for name in measured)  # the earlier runs count, not run again
    # Every round but the last ran something: once the time runs out in a round, the race ends with it.
    ran = {run["round"] for entry in final["entries"] for run in entry["runs"] if run["status"] == "complete"}
    assert {number for number in range(1, len(final["rounds"]))} <= ran
    # The race's files: a sweep directory with its answer, as a sweep's.
    document = json.loads((folder / "sweep.json").read_text())
    answer = document["answer"]
    assert document["status"] == "complete" and document["kind"] == "tune"
    assert answer["winner"]["verdict"] == "reference"
    assert answer["set_line"].startswith("--set benchmark.scenario=single_stream")
    assert answer["set_line"] in resumed.stdout
    # The allocator was left as it was: the last line races it under the winner.
    follow_up = resumed.stdout.strip().splitlines()[-1]
    assert follow_up.startswith("not raced: runtime.allocator") and answer["set_line"] in follow_up
    assert follow_up.endswith("--sweep runtime.allocator=inherit,keep_heap --minutes 5")
    assert document["follow_up"] == follow_up and html.escape(follow_up) in (folder / "report.html").read_text()
    # The one way's first look ran batch 1 alone; batch 2 joined from round 2; the console says how far it got.
    assert final["rounds"][0]["field"] == [name for name in final["rounds"][0]["field"] if "batch_size=1" in name]
    assert document["ways"][0].startswith("torch fp32: 2 of 2 schedule(s) run")
    assert "how far each way got:" in resumed.stdout
    table = pd.read_csv(folder / "sweep.csv")
    assert len(table) == 2 and set(table["status"]) == {"complete"}
    for row in document["rows"]:
        assert (folder / row["run_dir"] / "summary.json").is_file()
    assert (folder / "race.png").is_file() and "The race" in (folder / "report.html").read_text()


def test_first_looks_time_a_few_batches_and_judge_on_the_verdicts_images_then_full_runs_time_every_image(tmp_path):
    # The first 16 of the labelled scenes: a few more than the verdict's 12 (benchmark.accuracy.images), so a full
    # run times more than a first look does; torch fp32 (the reference) and ONNX Runtime fp32 (judged against it),
    # one schedule each.
    command = [sys.executable, str(ROOT / "benchmark.py"), "tune", *quick_args(128, "benchmark.repeats=2", NO_FIT),
               "--set", f"dataset.path={SHAPES / 'images'}", "--set", f"dataset.labels={SHAPES / 'labels'}",
               "--set", "dataset.limit=16", "--set", "benchmark.accuracy.images=12",
               "--set", f"model.weights={SHAPES / 'yolov7-tiny-shapes.pt'}",
               "--set", f"run.output_dir={tmp_path}", "--set", "run.id=race",
               "--sweep", "runtime.backend=torch,onnxruntime",
               "--set", "runtime.precision=fp32",
               "--set", "dataset.batch_size=1", "--set", "runtime.threads=1", "--set", "runtime.pinning=false",
               "--minutes", "8", "--rounds", "2"]
    status, stdout, stderr = finish(command)
    assert status == 0, stderr
    folder = tmp_path / "race"
    state = json.loads((folder / "tune.json").read_text())
    runs = {(run["candidate"].split(",")[0], run["round"]): run for entry in state["entries"] for run in entry["runs"]}
    summaries = {key: json.loads((folder / run["run_dir"] / "summary.json").read_text()) for key, run in runs.items()
                 if run["status"] == "complete"}
    assert ("runtime.backend=onnxruntime", 1) in summaries and ("runtime.backend=onnxruntime", 2) in summaries
    for backend in ("runtime.backend=torch", "runtime.backend=onnxruntime"):
        look = summaries[backend, 1]
        # One timed pass over the first 12 images (12 batches of 1), against every image twice after it.
        assert look["timed_passes"] == 1 and look["images_processed"] == 12 and runs[backend, 1]["look"] == "first look"
        if (backend, 2) in summaries:
            assert summaries[backend, 2]["timed_passes"] == 2 and summaries[backend, 2]["images_processed"] == 16
            assert runs[backend, 2]["look"] == "full"
    # The ONNX Runtime look judged itself on 12 images; its full run reused that verdict (detections equal on them).
    judged = summaries["runtime.backend=onnxruntime", 1]
    assert judged["accuracy"]["images"] == 12 and judged["agreement"]["images"] == 12
    assert "agreement" not in summaries["runtime.backend=onnxruntime", 2]
    document = json.loads((folder / "sweep.json").read_text())
    assert document["answer"]["rounds"][0]["look"]["text"] == ("first looks: 1 timed pass of 12 batch(es), verdicts "
                                                               "on 12 images")
    assert "round 1 (first looks: 1 timed pass of 12 batch(es), verdicts on 12 images)" in stdout
    rows = {row["point"].split(",")[0]: row for row in document["rows"]}
    assert rows["runtime.backend=onnxruntime"]["looks"] == "first look (round 1); full (round 2)"
    assert rows["runtime.backend=onnxruntime"]["verdict_images"] == 12


def test_a_throughput_race_runs_loadgen_offline_and_answers_in_samples_per_second(tmp_path):
    # Two streams against one, each run its own process under LoadGen; short LoadGen tests keep it small.
    command = [sys.executable, str(ROOT / "benchmark.py"), "tune", "--goal", "throughput",
               *quick_args(128, "benchmark.loadgen.min_duration_s=0.5", "benchmark.repeats=1", NO_FIT),
               "--set", f"run.output_dir={tmp_path}", "--set", "run.id=race", "--set", "runtime.backend=torch",
               "--set", "runtime.precision=fp32", "--set", "dataset.batch_size=1", "--set", "runtime.threads=2",
               "--set", "runtime.pinning=false", "--sweep", "runtime.streams=1,2", "--minutes", "0.75", "--rounds", "1"]
    status, stdout, stderr = finish(command)
    assert status == 0, stderr
    document = json.loads((tmp_path / "race" / "sweep.json").read_text())
    assert document["kind"] == "tune" and document["answer"]["winner"] is not None
    assert "--set benchmark.scenario=offline" in document["answer"]["set_line"]
    assert "samples/s" in stdout
    assert "--sweep runtime.allocator=inherit,keep_heap --goal throughput --minutes 5" in stdout
    # Each run's own process too: its start is told apart from the run's own time, as in shared processes.
    state = json.loads((tmp_path / "race" / "tune.json").read_text())
    ran = [run for entry in state["entries"] for run in entry["runs"] if run["status"] == "complete"]
    assert ran and all(run["start_s"] > 0 and run["seconds"] > 0 for run in ran)
    assert len(state["rounds"]) == 1  # --rounds 1: one run of each, the answer from it
    for row in document["rows"]:
        if row["status"] == "complete":
            summary = json.loads((tmp_path / "race" / row["run_dir"] / "summary.json").read_text())
            assert summary["scenario"]["name"] == "offline"
