"""A quiet console: dependencies' log lines go to outputs/<run_id>/logs/, their warnings reach the console as
one line naming that file, and everything is put back as it was when the run ends."""
from __future__ import annotations

import io
import logging
import subprocess
import sys

import pytest

from tests.support.paths import ROOT, SHAPES
from utils.assembly.dependency_logs import DependencyLogs
from utils.storage import layout


def test_dependency_lines_go_to_the_file_and_warnings_to_one_console_line(tmp_path):
    printed = io.StringIO()
    noisy = logging.getLogger("onnxruntime.hostile_test")  # as a dependency does: a stdout handler of its own
    noisy.addHandler(logging.StreamHandler(printed))
    noisy.setLevel(logging.INFO)
    console: list[str] = []
    log_file = tmp_path / "run" / layout.DEPENDENCY_LOG
    logs = DependencyLogs(console.append, log_file)
    logs.start()
    try:
        noisy.info("calibrating 1 of 300")
        noisy.warning("a node is left in float\nwith details on a second line")
        logging.getLogger().warning("own line")  # the root logger, from this file: left to the root's handlers
        assert not log_file.exists()  # no run directory yet: kept until there is one
        logs.open()
        noisy.error("late")
    finally:
        logs.stop()
    text = log_file.read_text()
    assert "INFO onnxruntime.hostile_test: calibrating 1 of 300" in text and "second line" in text
    assert "ERROR onnxruntime.hostile_test: late" in text
    assert printed.getvalue() == ""
    assert console == [f"onnxruntime warning: a node is left in float (full log: {log_file})",
                       f"onnxruntime error: late (full log: {log_file})"]
    assert "own line" not in text
    noisy.info("after the run")
    assert printed.getvalue() == "after the run\n" and noisy.propagate
    noisy.handlers.clear()


@pytest.mark.slow
def test_a_real_int8_run_keeps_nncf_off_the_console(tmp_path):
    """openvino int8 on yolov7-tiny at 96 pixels, 4 calibration images: NNCF logs dozens of INFO lines."""
    command = [sys.executable, str(ROOT / "benchmark.py"), "--config", str(ROOT / "configs" / "samples_tiny.yaml"),
               "--set", f"dataset.path={SHAPES / 'images'}", "--set", f"model.weights={SHAPES / 'yolov7-tiny-shapes.pt'}",
               "--set", "dataset.limit=4", "--set", "preprocess.img_size=96", "--set", "runtime.backend=openvino",
               "--set", "runtime.precision=int8", "--set", "runtime.calibration.images=4",
               "--set", f"runtime.cache_dir={tmp_path / 'cache'}", "--set", "benchmark.repeats=1",
               "--set", "benchmark.layer_timing=false", "--set", "benchmark.agreement.enabled=false",
               "--set", "benchmark.accuracy.enabled=false", "--set", "outputs.plots=false",
               "--set", "outputs.save_images=false", "--set", "outputs.report=false",
               "--set", f"run.output_dir={tmp_path / 'out'}", "--set", "run.id=r"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    console = result.stdout + result.stderr
    assert "INFO:nncf" not in console and "nncf:" not in console
    log = (tmp_path / "out" / "r" / layout.DEPENDENCY_LOG).read_text()
    assert "INFO nncf: " in log
