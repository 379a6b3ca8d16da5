"""runtime.streams and runtime.pinning: the split of cores (pure), each runtime's read-back, refusals, and a
LoadGen scenario answered by several workers."""
import json
import os
import threading
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
import torch

from benchmark import main
from pipelines.runtimes.base import PreparedForward, RuntimeNotSupported
from pipelines.runtimes.concurrency import cores_to_pin, ort_intra_op_affinities, stream_cores, threads_per_stream
from pipelines.runtimes.registry import build_runtime
from tests.support.forward_inputs import as_taken
from tests.support.paths import ROOT
from utils.config.schema import ConfigError, load_config
from utils.checks.reference import with_the_runs_threads

CONFIG = ROOT / "configs" / "samples_tiny.yaml"


def test_threads_split_between_streams_and_each_stream_needs_one():
    assert threads_per_stream(8, 2) == 4 and threads_per_stream(5, 2) == 2 and threads_per_stream(2, 2) == 1
    with pytest.raises(RuntimeNotSupported, match="runtime.streams 3 with 2 thread"):
        threads_per_stream(2, 3)


def test_pinning_takes_the_first_usable_cores_or_says_why_it_cannot():
    assert cores_to_pin([2, 5, 7, 9], 3) == [2, 5, 7]
    with pytest.raises(RuntimeNotSupported, match="4 compute thread"):
        cores_to_pin([0, 1], 4)
    with pytest.raises(RuntimeNotSupported, match="sched_setaffinity"):
        cores_to_pin(None, 1)
    assert stream_cores([0, 1, 2, 3, 4], 2) == [[0, 1], [2, 3]]


def test_onnxruntime_affinities_skip_the_calling_thread_and_count_from_one():
    assert ort_intra_op_affinities([4, 5, 6]) == "6;7"
    assert ort_intra_op_affinities([0]) == ""


def test_streams_in_single_stream_are_refused_with_the_key_named():
    with pytest.raises(ConfigError, match="runtime.streams 2 needs requests to keep in flight"):
        load_config(CONFIG, ["runtime.streams=2"])
    assert load_config(CONFIG, ["runtime.streams=2", "benchmark.scenario=offline"]).runtime.streams == 2


@pytest.fixture
def restored_affinity():
    """Pinning in this process ties the test process's threads (torch's pool too) to cores: every thread gets
    the process's mask back afterwards."""
    before = os.sched_getaffinity(0)
    yield
    for task in Path("/proc/self/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), before)
        except OSError:  # the thread ended meanwhile
            pass


def _concurrent_outputs(forward, batches):
    outputs = [None] * len(batches)

    def work(index):
        outputs[index] = forward(batches[index])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outputs


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_exported_runtimes_read_back_their_streams_and_answer_concurrent_requests_alike(backend, network, tmp_path,
                                                                                      restored_affinity):
    example = torch.rand(1, 3, 64, 64)
    runtime = build_runtime(backend, threads=2, streams=2, pinning=backend == "openvino", cache_dir=tmp_path)
    torch_threads, opencv_threads = torch.get_num_threads(), cv2.getNumThreads()
    try:
        forward = runtime.prepare(network, example)
        # Each stream's worker runs its letterbox and NMS in a team of its own: its share of the threads.
        assert torch.get_num_threads() == 1 and cv2.getNumThreads() == 1
    finally:
        torch.set_num_threads(torch_threads)
        cv2.setNumThreads(opencv_threads)
    settings = runtime.settings()
    assert settings["torch_threads_per_stream"] == 1 and settings["opencv_threads_per_stream"] == 1
    assert settings["streams"] == 2 and settings["threads"] == 2
    if backend == "openvino":
        assert settings["num_streams"] == 2 and settings["pinning"] is True
    else:
        assert settings["threads_per_stream"] == 1 and len(settings["intra_op_thread_affinities"]) == 2
    batches = [as_taken(forward, torch.rand(1, 3, 64, 64)) for _ in range(3)]
    alone = [forward(batch).clone() for batch in batches]  # an output holds until this thread's next forward
    together = _concurrent_outputs(forward, batches)
    for a, b in zip(alone, together):
        assert np.allclose(a.numpy(), b.numpy(), atol=1e-4)


def test_torch_streams_give_each_workers_torch_and_opencv_their_share_and_one_stream_leaves_opencv_alone(network):
    torch_threads, opencv_threads = torch.get_num_threads(), cv2.getNumThreads()
    try:
        cv2.setNumThreads(2)
        one = build_runtime("torch", threads=2)
        one.prepare(network, torch.rand(1, 3, 64, 64))
        assert cv2.getNumThreads() == 2 and one.settings()["opencv_threads_per_stream"] == 2
        two = build_runtime("torch", threads=2, streams=2)
        two.prepare(network, torch.rand(1, 3, 64, 64))
        assert two.settings()["threads_per_stream"] == 1 and two.settings()["opencv_threads_per_stream"] == 1
        assert cv2.getNumThreads() == 1
    finally:
        torch.set_num_threads(torch_threads)
        cv2.setNumThreads(opencv_threads)


@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_another_runtime_keeps_torch_to_one_thread_while_it_runs_and_gives_the_count_back(backend, network,
                                                                                         tmp_path):
    # torch's team of 2 spinning at its barrier beside the runtime's pool slowed the forward by half on 2 cores.
    torch.set_num_threads(2)
    runtime = build_runtime(backend, threads=2, cache_dir=tmp_path)
    runtime.prepare(network, torch.rand(1, 3, 64, 64))
    assert torch.get_num_threads() == 1
    settings = runtime.settings()
    assert settings["torch_threads_per_stream"] == 1 and settings["threads"] == 2
    runtime.close()
    assert torch.get_num_threads() == 2


def test_the_reference_forward_runs_on_the_runs_threads_and_leaves_torch_on_its_share():
    seen = []
    module = torch.nn.Identity()
    forward = with_the_runs_threads(PreparedForward(lambda batch: seen.append(torch.get_num_threads()), module), 2)
    torch.set_num_threads(1)
    forward(torch.zeros(1))
    assert seen == [2] and torch.get_num_threads() == 1


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no process affinity on this OS")
def test_torch_pinning_sets_the_process_affinity_and_reads_it_back(network, restored_affinity):
    before = os.sched_getaffinity(0)
    threads = torch.get_num_threads()
    try:
        runtime = build_runtime("torch", threads=1, pinning=True)
        runtime.prepare(network, torch.rand(1, 3, 64, 64))
        pinned = sorted(before)[:1]
        assert runtime.settings()["process_affinity"] == pinned == sorted(os.sched_getaffinity(0))
        assert runtime.settings()["pinning"] is True
        assert runtime.settings()["pinned_threads"] == [
            {"stream": 0, "openmp_thread": 0, "tid": threading.get_native_id(), "core": pinned[0]}]
        runtime.close()  # a next run in this process starts on every core again
        assert os.sched_getaffinity(0) == before
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable cores")
def test_a_pinned_run_leaves_the_next_run_of_its_process_every_core(tmp_path):
    """tune's runs of one way share a process: a pinned run's threads get their cores back as it ends, so a
    second pinned run with as many threads is not refused for a process left on one core."""
    import subprocess
    import sys

    common = ["--config", str(CONFIG), "--set", "preprocess.img_size=64", "--set", "runtime.threads=2",
              "--set", "runtime.pinning=true", "--set", "benchmark.accuracy.enabled=false",
              "--set", f"run.output_dir={tmp_path}"]
    runs = [[name, common + ["--set", f"run.id={name}", "--set", f"dataset.batch_size={batch}"]]
            for name, batch in (("first", 1), ("second", 2))]
    done = subprocess.run([sys.executable, str(ROOT / "benchmark.py"), "runs", json.dumps(runs)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("first", "second"):
        runtime = json.loads((tmp_path / name / "summary.json").read_text())["runtime"]
        assert len(runtime["pinned_threads"]) == 2 and runtime["pinning"] is True, name


def test_pinning_more_threads_than_cores_exits_2(tmp_path, capsys):
    cores = len(os.sched_getaffinity(0))
    code = main(["--config", str(CONFIG), "--set", "runtime.pinning=true", "--set", f"runtime.threads={cores + 1}",
                 "--set", f"run.output_dir={tmp_path}"])
    assert code == 2 and "runtime.pinning" in capsys.readouterr().err


@pytest.mark.slow
def test_an_offline_scenario_with_two_streams_keeps_every_workers_steps(tmp_path, capsys):
    code = main(["--config", str(CONFIG), "--set", "preprocess.img_size=64", "--set", "dataset.limit=4",
                 "--set", "benchmark.layer_timing=false", "--set", "outputs.plots=false",
                 "--set", "outputs.save_images=false", "--set", "outputs.report=false",
                 "--set", "benchmark.scenario=offline", "--set", "benchmark.loadgen.min_duration_s=0.3",
                 "--set", "runtime.backend=onnxruntime", "--set", "runtime.threads=2", "--set", "runtime.streams=2",
                 "--set", "dataset.batch_size=1", "--set", f"run.output_dir={tmp_path}", "--set", "run.id=two",
                 "--set", f"runtime.cache_dir={tmp_path / 'cache'}"])
    assert code == 0
    run_dir = tmp_path / "two"
    summary = json.loads((run_dir / "summary.json").read_text())
    env = json.loads((run_dir / "env.json").read_text())
    assert summary["scenario"]["streams"] == 2
    assert summary["runtime"]["streams"] == env["runtime"]["streams"] == 2
    # Both streams ran the warm-up batches on their own worker thread before LoadGen started.
    warmed = summary["scenario"]["streams_warmed"]
    assert [entry["stream"] for entry in warmed] == [0, 1]
    assert len({entry["thread_id"] for entry in warmed}) == 2
    assert all(entry["batches"] == summary["warmup"]["loadgen"]["batches_per_stream"] and entry["ms"] > 0
               for entry in warmed)
    # Started before the test's bracket opens: the CPU counters count both workers, which ran every batch.
    counters = pd.read_csv(run_dir / "cpu_counters.csv")
    workers = counters[counters["tid"].isin([entry["thread_id"] for entry in warmed])]
    assert len(workers) == 2 and (workers["cpu_ms"] > 0).all()
    assert (workers["cpu_source"] == "perf task-clock").all()  # attached when the bracket opened
    assert sorted(workers["thread"]) == ["loadgen-sut-0", "loadgen-sut-1"]  # named, not "python" like the rest
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    pipeline = steps[(steps["pass_kind"] == "timed") & (steps["step"] == "pipeline")]
    assert pipeline["images"].sum() == summary["scenario"]["samples_answered"]
    assert sorted(pipeline["batch"]) == list(range(summary["scenario"]["batches_answered"]))
    # Each worker's per-image time is its stream's: the run's rate is LoadGen's, and the bound is both streams'.
    latency = summary["pipeline_latency"]
    assert latency["streams"] == 2 and "one stream's rate" in latency["definition"]
    forward = steps[(steps["pass_kind"] == "timed") & (steps["step"] == "forward")]
    bound = summary["scenario"]["forward_bound"]
    ms_per_image = pipeline["ms"].sum() / pipeline["images"].sum()
    assert bound["pipeline_samples_per_s"] == pytest.approx(2 * 1000 / ms_per_image)
    assert bound["forward_samples_per_s"] == pytest.approx(2 * 1000 * forward["images"].sum() / forward["ms"].sum())
    assert 0 < bound["outside_forward_share"] < 1
    out = capsys.readouterr().out
    assert f"offline {summary['scenario']['result']['samples_per_s']:.2f} samples/s (LoadGen); each of 2 streams" in out
    assert "the forward alone" in out
