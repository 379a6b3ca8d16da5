"""benchmarks/common/detbench_runs.py: a detbench run's command line and a figure read from its summary."""
import sys

import pytest

from benchmarks.common.detbench_runs import ROOT, as_sets, benchmark_command, undecoded_ms_per_image


def test_the_command_line_names_the_checkout_the_config_and_every_set_in_order(tmp_path):
    assert benchmark_command("configs/x.yaml", ["a=1", "b=2"]) == [
        sys.executable, str(ROOT / "benchmark.py"), "--config", "configs/x.yaml", "--set", "a=1", "--set", "b=2"]
    assert (ROOT / "benchmark.py").is_file()
    tuned = benchmark_command(tmp_path / "c.yaml", ["a=1"], root=tmp_path, command=("tune", "--goal", "latency"),
                              python="python")
    assert tuned == ["python", str(tmp_path / "benchmark.py"), "tune", "--goal", "latency", "--config",
                     str(tmp_path / "c.yaml"), "--set", "a=1"]
    assert as_sets([]) == []


def test_the_pipeline_without_decoding_leaves_the_load_step_out():
    summary = {"steps": {"pipeline": {"total_ms": 1000.0}, "load": {"total_ms": 200.0}}, "images_timed": 40}
    assert undecoded_ms_per_image(summary) == pytest.approx(20.0)
