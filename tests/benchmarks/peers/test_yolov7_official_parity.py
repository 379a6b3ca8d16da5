"""benchmarks/peers/yolov7_official_parity.py: its command line and pure helpers. Nothing here downloads the official
code or runs a model: the script's --help and argument errors end before any setup, and the helpers are plain
functions."""
import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.peers.yolov7_official import command as parity_command
from benchmarks.peers.yolov7_official import results as parity_results
from benchmarks.peers.yolov7_official import rounds as parity_rounds
from benchmarks.peers.yolov7_official import specs as parity_specs
from tests.support.paths import ROOT
from utils.core.errors import ExitStatus

SCRIPT = ROOT / "benchmarks" / "peers" / "yolov7_official_parity.py"


def run_script(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["XDG_CACHE_HOME"] = str(cache)
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          cwd=str(ROOT), timeout=60)


@pytest.mark.slow
def test_help_documents_the_peer_the_rounds_and_the_goals(tmp_path):
    result = run_script("--help", cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    for expected in ("yolov7-wky-package==2024.9.23.1", "GPL-3.0", "--rounds", "--runtime", "--threads",
                     "--cache-dir", "--wheel", "--output-dir", "--detbench-set", "not available", ">= 1.0x",
                     ">= 1.5x", ">= 3x", "detections.csv", "times.json", "annotate_save", "BatchNorm", "bisection"):
        assert expected in text, expected
    assert not (tmp_path / "cache").exists()  # --help prepares nothing


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--runtime", "onnxruntime"], "backend:precision"),
    (["--runtime", "torch:bf16:fast"], "flags"),
    (["--rounds", "0"], "--rounds"),
    (["--threads", "two"], "--threads"),
    (["--img-size", "100"], "multiple of 32"),
    (["--config", "absent.yaml"], "--config"),
    (["--images", "absent"], "dataset.path"),
])
def test_argument_mistakes_end_with_status_2_before_any_setup(tmp_path, args, message):
    result = run_script(*args, "--output-dir", str(tmp_path / "out"), cache=tmp_path / "cache")
    assert result.returncode == ExitStatus.USAGE
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_an_output_dir_that_holds_files_is_refused_with_status_2(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "kept.txt").write_text("x")
    result = run_script("--output-dir", str(tmp_path / "out"), cache=tmp_path / "cache")
    assert result.returncode == ExitStatus.USAGE and "exists and is not empty" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "cache").exists()


def test_runtime_specs_parse_and_label():
    spec = parity_specs.parse_runtime_spec("openvino:bf16")
    assert (spec.backend, spec.precision, spec.flags) == ("openvino", "bf16", ())
    assert spec.label == "openvino:bf16" and spec.run_name == "openvino_bf16"
    assert spec.overrides() == ["runtime.backend=openvino", "runtime.precision=bf16"]
    flagged = parity_specs.parse_runtime_spec("torch:bf16:compile,channels_last")
    assert flagged.flags == ("channels_last", "compile")
    assert flagged.overrides()[2:] == ["runtime.channels_last=true", "runtime.compile=true"]
    for bad in ("", "torch", "torch:", ":fp32", "Torch:fp32", "torch:fp32:channels_last,channels_last",
                "torch:fp32:nhwc", "torch:fp32:"):
        with pytest.raises(argparse.ArgumentTypeError):
            parity_specs.parse_runtime_spec(bad)


def test_configurations_start_with_torch_fp32_and_keep_order_without_duplicates():
    specs = [parity_specs.parse_runtime_spec(text) for text in ("openvino:bf16", "torch:fp32", "onnxruntime:fp32",
                                                          "openvino:bf16")]
    assert [spec.label for spec in parity_specs.configurations(specs)] == [
        "torch:fp32", "openvino:bf16", "onnxruntime:fp32"]


def test_detbench_command_carries_the_brief_settings_and_the_runtime(tmp_path):
    spec = parity_specs.parse_runtime_spec("onnxruntime:fp32")
    command = parity_specs.detbench_command("python", "configs/samples.yaml", tmp_path / "w.pt", tmp_path / "runs",
                                      "r2-onnxruntime_fp32", spec, 2, "datasets/samples", 640, 1, 2, "yolov7",
                                      ["benchmark.memory.enabled=false"])
    assert command[:4] == ["python", str(ROOT / "benchmark.py"), "--config", "configs/samples.yaml"]
    sets = [command[i + 1] for i, item in enumerate(command) if item == "--set"]
    assert len(sets) * 2 + 4 == len(command)
    for expected in (f"model.weights={tmp_path / 'w.pt'}", "preprocess.rect=true", "dataset.batch_size=1",
                     "runtime.threads=2", "benchmark.layer_timing=false", "benchmark.profiler=false",
                     f"run.output_dir={tmp_path / 'runs'}", "run.id=r2-onnxruntime_fp32", "model.arch=yolov7",
                     "dataset.path=datasets/samples", "preprocess.img_size=640", "postprocess.conf_thres=0.25",
                     "postprocess.iou_thres=0.45", "benchmark.warmup=1", "benchmark.repeats=2",
                     "runtime.backend=onnxruntime", "runtime.precision=fp32"):
        assert expected in sets, expected
    assert sets[-1] == "benchmark.memory.enabled=false"  # extra sets come last, so they win


def test_failure_notes_name_the_cause():
    refused = "loading...\nerror: runtime.backend: 'tensorrt' is not one of torch, onnxruntime, openvino\n"
    assert parity_specs.failure_note(2, refused) == (
        "not available: error: runtime.backend: 'tensorrt' is not one of torch, onnxruntime, openvino")
    crashed = "Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'onnxruntime'\n"
    assert parity_specs.failure_note(1, crashed) == "failed (exit 1): KeyError: 'onnxruntime'"
    assert parity_specs.failure_note(-9, "") == "failed (signal 9): (no message)"
    assert len(parity_specs.failure_note(2, "error: " + "x" * 500)) < 260


def write_csv(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_detections_of_both_sides_are_read_and_matched(tmp_path):
    official = parity_results.read_detections_csv(write_csv(tmp_path / "official.csv", "image,class,score,x1,y1,x2,y2", [
        "a.jpg,0,0.900000,10.000,10.000,110.000,110.000",
        "a.jpg,16,0.500000,200.000,200.000,300.000,260.000",
        "b.jpg,2,0.400000,0.000,0.000,50.000,50.000",
    ]))
    assert official["a.jpg"][1] == (16, 0.5, 200.0, 200.0, 300.0, 260.0)
    same = parity_results.read_detections_csv(write_csv(
        tmp_path / "same.csv", "image,class_id,class_name,score,x1,y1,x2,y2", [
            "a.jpg,0,person,0.90000,10.00,10.00,110.00,110.00",
            "a.jpg,16,dog,0.50000,200.00,200.00,300.00,260.00",
            "b.jpg,2,car,0.40000,0.00,0.00,50.00,50.00",
        ]))
    counts = parity_results.agreement_counts(official, same, ["a.jpg", "b.jpg", "c.jpg"])
    assert (counts.reference, counts.candidate, counts.loose, counts.strict) == (3, 3, 3, 3)
    assert parity_results.verdict_against_official(counts) == "equal"

    # one box moved (IoU 0.67: loose, not strict), one score off by 0.05 (not strict), one image missing
    moved = parity_results.read_detections_csv(write_csv(
        tmp_path / "moved.csv", "image,class_id,class_name,score,x1,y1,x2,y2", [
            "a.jpg,0,person,0.90000,30.00,10.00,130.00,110.00",
            "a.jpg,16,dog,0.55000,200.00,200.00,300.00,260.00",
        ]))
    counts = parity_results.agreement_counts(official, moved, ["a.jpg", "b.jpg"])
    assert (counts.reference, counts.candidate, counts.loose, counts.strict) == (3, 2, 2, 0)
    assert counts.loose_recall == pytest.approx(2 / 3) and counts.loose_precision == 1.0
    assert parity_results.verdict_against_official(counts) == "different"


def summary(label, ratio, verdict, own=(), images_per_s=1.0):
    return parity_results.ConfigurationSummary(label, 3, 3, images_per_s, ratio, 100.0, 90.0, 0.05, None, verdict, own)


def test_goals_pick_the_fastest_equal_and_the_fastest_overall():
    rows = [summary("official", 1.0, None), summary("torch:fp32", 1.1, "equal"),
            summary("onnxruntime:fp32", 1.6, "equal", ("equal",)), summary("openvino:bf16", 3.2, "different",
                                                                           ("different",)),
            parity_results.ConfigurationSummary("tensorrt:fp16", 0, 3, None, None, None, None, None,
                                        note="not available: error: ...")]
    eager, equal, fastest = parity_results.evaluate_goals(rows)
    assert eager.status == "met" and "torch:fp32 at 1.10x" in eager.detail
    assert equal.status == "met" and "onnxruntime:fp32 at 1.60x" in equal.detail
    assert fastest.status == "met" and "openvino:bf16 at 3.20x" in fastest.detail
    assert "vs official: different" in fastest.detail and "detbench agreement: different" in fastest.detail
    text = parity_results.format_goals([eager, equal, fastest])
    assert text.count("[met]") == 3

    slow = parity_results.evaluate_goals([summary("official", 1.0, None), summary("torch:fp32", 0.85, "close")])
    assert [goal.status for goal in slow] == ["missed", "unknown", "missed"]
    assert "no configuration has equal detections" in slow[1].detail
    assert parity_results.evaluate_goals([summary("official", 1.0, None)])[0].status == "unknown"


def test_a_goal_whose_rounds_straddle_it_is_not_resolved():
    """Five rounds at 0.95-1.04 against the eager goal of 1.0: the median (0.99) alone would say not met."""
    official = [parity_results.RoundResult(1.0, 1000, 900, 40) for _ in range(5)]
    rounds = [parity_results.RoundResult(speed, 1000 / speed, 900, 40, "equal") for speed in (0.95, 0.99, 1.04, 0.97,
                                                                                            1.01)]
    row = parity_results.summarize("torch:fp32", rounds, official)
    assert row.ratio == pytest.approx(0.99) and row.ratio_interval == pytest.approx((0.95, 1.04))
    eager = parity_results.evaluate_goals([summary("official", 1.0, None), row])[0]
    assert eager.status == "not resolved" and "rounds' 90% interval 0.95-1.04x" in eager.detail
    assert parity_results.format_goals([eager]).startswith("[not resolved] torch eager fp32")
    faster = parity_results.summarize("torch:fp32", [parity_results.RoundResult(speed + 0.06, 900, 800, 40)
                                                     for speed in (0.95, 0.99, 1.04, 0.97, 1.01)], official)
    assert parity_results.evaluate_goals([summary("official", 1.0, None), faster])[0].status == "met"


def test_summaries_pair_rounds_with_the_official_loop_and_keep_notes():
    official = [parity_results.RoundResult(2.0, 500, 450, 40), parity_results.RoundResult(1.0, 1000, 900, 40),
                parity_results.RoundResult(2.0, 500, 450, 40)]
    rounds = [parity_results.RoundResult(3.0, 330, 300, 40, "equal"), parity_results.RoundResult(1.2, 830, 800, 40, "equal"),
              parity_results.RoundResult(note="failed (exit 1): boom")]
    row = parity_results.summarize("onnxruntime:fp32", rounds, official)
    assert row.rounds_ok == 2 and row.rounds_tried == 3
    assert row.ratio == pytest.approx((1.5 + 1.2) / 2)
    assert row.images_per_s == pytest.approx(2.1) and row.spread == pytest.approx(1.8 / 2.1)
    assert row.detbench_verdicts == ("equal",) and row.note is None
    missing = parity_results.summarize("openvino:bf16", [parity_results.RoundResult(note="not available: error: x")] * 3, official)
    assert missing.rounds_ok == 0 and missing.ratio is None and missing.note == "not available: error: x"
    table = parity_results.format_table([parity_results.summarize("official", official, official), row, missing])
    assert "openvino:bf16" in table and "not available: error: x" in table and "1.35" in table


def test_page_faults_per_image_are_summed_over_the_passes_and_shown_as_a_median():
    summary = {"images_timed": 12, "cpu_counters": {"passes": [{"minor_faults": 200_000.0},
                                                               {"minor_faults": 160_000.0}]}}
    assert parity_rounds.detbench_faults_per_image(summary) == pytest.approx(30_000.0)
    assert parity_rounds.detbench_faults_per_image({"images_timed": 12, "cpu_counters": {
        "status": "unavailable"}}) is None
    assert parity_rounds.detbench_faults_per_image({"images_timed": 12, "cpu_counters": {
        "passes": [{"minor_faults": None}]}}) is None
    rounds = [parity_results.RoundResult(2.0, 500, 450, 40, faults_per_image=faults) for faults in (10.0, 70.0, 30.0)]
    row = parity_results.summarize("official", rounds, rounds)
    assert row.faults_per_image == pytest.approx(30.0)
    table = parity_results.format_table([row]).splitlines()
    assert "faults/img" in table[0]
    assert table[1][table[0].index("faults/img"):].split()[0] == "30"


def test_the_warm_up_is_auto_by_default_on_both_sides_and_a_count_still_works(tmp_path):
    assert parity_command.parse_args([]).warmup == "auto" and parity_command.parse_args(["--warmup", "3"]).warmup == 3
    with pytest.raises(SystemExit):
        parity_command.parse_args(["--warmup", "soon"])
    spec = parity_specs.parse_runtime_spec("torch:fp32")
    command = parity_specs.detbench_command("python", "configs/samples.yaml", tmp_path / "w.pt", tmp_path, "r0", spec, 2,
                               "datasets/samples", 640, "auto", 2, "yolov7")
    assert "benchmark.warmup=auto" in command


def test_every_other_round_runs_the_sides_in_reverse_order():
    labels = ["official", "torch:fp32", "onnxruntime:fp32"]
    assert parity_rounds.round_order(labels, 1) == labels
    assert parity_rounds.round_order(labels, 2) == ["onnxruntime:fp32", "torch:fp32", "official"]
    assert parity_rounds.round_order(labels, 3) == labels
    assert labels == ["official", "torch:fp32", "onnxruntime:fp32"]  # the caller's list is left as it was


def test_the_report_names_the_malloc_settings_both_sides_inherit():
    assert "defaults" in parity_command.allocator_environment({"PATH": "/bin"})
    named = parity_command.allocator_environment({"GLIBC_TUNABLES": "glibc.malloc.mmap_max=0", "MALLOC_ARENA_MAX": "2",
                                                  "HOME": "/root"})
    assert named == "GLIBC_TUNABLES=glibc.malloc.mmap_max=0, MALLOC_ARENA_MAX=2"
