"""Refused before allocating: the memory a batch needs, class ids the model lacks, threads beyond the CPUs."""
import json
import time

import pytest
import torch
from torch import nn

from pipelines.yolo import family as yolo
from tests.support.cgroup_trees import fake_tree
from tests.support.helpers import run_benchmark
from tests.support.paths import CONFIGS
from utils.preflight.cpu_budget import usable_cpus
from utils.preflight.memory_fit import (INPUT_BYTES_PER_PIXEL, MARGIN, MemoryFit, MemoryRefused, cgroup_room,
                                      check_fits, fit_line, largest_batch, largest_side, live_peak_bytes,
                                      measure_fit)
from utils.preflight.start_refusals import StartRefused, check_class_ids

MiB = 2**20


def test_fit_line_through_two_points():
    fit = fit_line((4096, 5000 + 4096 * 10), (16384, 5000 + 16384 * 10))
    assert fit == MemoryFit(5000.0, 10.0)
    assert fit_line((100, 900), (400, 600)) == MemoryFit(900.0, 0.0)  # shrinking: no per-pixel part
    assert fit_line((100, 0), (400, 3000)) == MemoryFit(0.0, 10.0)


def test_batch_bytes_largest_batch_and_side_by_hand():
    fit = MemoryFit(0.0, 100.0)
    per_image = MARGIN * 100 * 640 * 640 + INPUT_BYTES_PER_PIXEL * 640 * 640  # 66,355,200
    assert fit.batch_bytes(640 * 640, 3) == 3 * per_image
    assert largest_batch(fit, 640 * 640, 10 * per_image + 1) == 10
    assert largest_batch(fit, 640 * 640, per_image - 1) == 0
    # per pixel 162 bytes: 1024x1024 at batch 2 needs 339,738,624; 1056 would need 361,304,064
    assert largest_side(fit, 2, 350_000_000) == 1024
    assert largest_side(MemoryFit(10**9, 1.0), 1, 10**8) == 0


def test_live_peak_of_a_tiny_network_by_hand():
    net = nn.Sequential(nn.Conv2d(3, 4, 1), nn.ReLU(), nn.Conv2d(4, 2, 1)).eval()
    # conv out (4x8x8 floats, 1024 B) is still held when the ReLU's 1024 B appear; then 1024 + 512
    assert live_peak_bytes(net, torch.zeros(1, 3, 8, 8)) == 2048


@pytest.mark.slow
def test_measured_fit_predicts_a_larger_size():
    network = yolo.load_network("yolov7-tiny", None, 0).module
    fit = measure_fit(network)
    measured = live_peak_bytes(network, torch.zeros(1, 3, 256, 256))
    predicted = fit.fixed_bytes + fit.bytes_per_pixel * 256 * 256
    assert abs(predicted - measured) / measured < 0.05


def test_refusal_names_estimate_memory_and_what_fits():
    fit = MemoryFit(0.0, 100.0)
    with pytest.raises(MemoryRefused) as info:
        check_fits(fit, {"preprocess.img_size": 65536}, 65536**2, 2, 512 * MiB, "available on this machine")
    message = str(info.value)
    assert "preprocess.img_size 65536 with batches of 2 image(s) needs about 1,296.0 GiB" in message
    assert "but 512.0 MiB is available on this machine" in message
    # 162 bytes per pixel and image: 1280^2 x 2 x 162 = 530,841,600 fits 536,870,912; 1312 would not
    assert "preprocess.img_size 1280 at dataset.batch_size 2" in message
    assert "no batch size at this size (not even one image)" in message
    check_fits(fit, {"preprocess.img_size": 640}, 640**2, 2, 512 * MiB, "available")  # fits: no error


def test_cgroup_memory_limits_v2_and_v1(tmp_path):
    assert cgroup_room(fake_tree(tmp_path / "a", {"memory.max": "1073741824", "memory.current": "73741824"})) == 10**9
    assert cgroup_room(fake_tree(tmp_path / "b", {"memory.max": "max", "memory.current": "5"})) is None
    v1 = {"memory/memory.limit_in_bytes": "2000", "memory/memory.usage_in_bytes": "500"}
    assert cgroup_room(fake_tree(tmp_path / "c", v1)) == 1500
    unlimited = {"memory/memory.limit_in_bytes": "9223372036854771712", "memory/memory.usage_in_bytes": "5"}
    assert cgroup_room(fake_tree(tmp_path / "d", unlimited)) is None
    assert cgroup_room(tmp_path / "none") is None


def test_class_ids_beyond_the_model():
    names = [f"c{i}" for i in range(80)]
    check_class_ids([0, 79], names, "yolov7-tiny")
    check_class_ids(None, names, "yolov7-tiny")
    with pytest.raises(StartRefused) as info:
        check_class_ids([0, 9999, 80], names, "yolov7-tiny")
    assert "names class ids [80, 9999] that model.arch yolov7-tiny does not have" in str(info.value)
    assert "its 80 classes are ids 0-79" in str(info.value)


def cli(tmp_path, capsys, config: str, *overrides: str) -> tuple[int, str, str]:
    code, _ = run_benchmark(["--config", str(CONFIGS / config)], tmp_path, *overrides, run_id="r")
    captured = capsys.readouterr()
    return code, captured.err, captured.out


@pytest.mark.slow
@pytest.mark.parametrize("config, overrides, fragments", [
    ("samples_tiny.yaml", ["preprocess.img_size=65536"],
     ["preprocess.img_size 65536 with batches of 2 image(s) needs about", "The largest that fits: preprocess.img_size"]),
    ("samples_fasterrcnn.yaml", ["model.arch=fasterrcnn_mobilenet_v3_large_fpn", "preprocess.img_size=65536",
                                 "preprocess.max_size=65536"],
     ["preprocess.img_size 65536 and preprocess.max_size 65536 with batches of 1 image(s) needs about"]),
    ("samples_tiny.yaml", ["postprocess.classes=[0, 9999]"], ["postprocess.classes [0, 9999] names class ids [9999]"]),
])
def test_refused_at_start_with_exit_2(tmp_path, capsys, config, overrides, fragments):
    started = time.process_time()  # CPU time: other jobs on the cores do not stretch it
    code, err, _ = cli(tmp_path, capsys, config, *overrides)
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err
    assert time.process_time() - started < 60
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_threads_above_the_cpus_are_a_warning_in_summary_and_report(tmp_path, capsys):
    cpus, _ = usable_cpus()
    code, _, out = cli(tmp_path, capsys, "samples_tiny.yaml", f"runtime.threads={cpus + 1}", "preprocess.img_size=64",
                  "benchmark.repeats=1", "benchmark.layer_timing=false", "outputs.plots=false",
                  "dataset.limit=2", "outputs.save_images=false")
    assert code == 0
    expected = f"runtime.threads {cpus + 1} is more than the {cpus} CPU(s)"
    assert any(w.startswith(expected) for w in json.loads((tmp_path / "r" / "summary.json").read_text())["warnings"])
    assert expected in (tmp_path / "r" / "report.html").read_text()
    assert f"WARNING: {expected}" in out


@pytest.mark.slow
def test_rcnn_probe_runs_the_backbone_and_counts_the_heads():
    from pipelines.rcnn import family as rcnn
    from utils.config.schema import config_for

    network = rcnn.load_network("fasterrcnn_mobilenet_v3_large_fpn", None, 0)
    module, heads = rcnn.memory_probe(network, config_for("fasterrcnn_mobilenet_v3_large_fpn").postprocess)
    assert module is network.module.backbone
    # 1000 proposals x (pooled 256x7x7 twice + 1024-wide representation twice) x 4 bytes
    assert heads == 1000 * (2 * 256 * 49 + 2 * 1024) * 4
