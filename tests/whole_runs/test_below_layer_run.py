"""Runs with profiling.*: the sampled stacks, counters and kernels reach the run directory, summary.json, the
console, report.html and trace.json; a run whose sampler is missing still finishes and says why."""
import json

import pandas as pd
import pytest

from benchmark import main
from tests.support.helpers import quick_args, section_shape_errors
from tests.support.paths import ROOT
from utils.record.sections import CpuCountersSection, KernelsSection, NativeTimeSection
from utils.measure.below_layer import sampler as sampler_module

BASE = quick_args(96, "dataset.limit=2", "dataset.batch_size=1", "benchmark.repeats=1",
                  "benchmark.agreement.enabled=false", "outputs.plots=false")


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    outputs = tmp_path_factory.mktemp("outputs")
    # At 96 px the forward's kernels are so short that the model's own Python (module calls) took 2-20% of it,
    # and at 50 Hz the forward got 15-26 samples: its oneDNN share read 0.55-0.98 run to run. At 160 px and
    # 100 Hz it gets 60-100 samples and the Python share is 5-14%.
    settings = [a.replace("img_size=96", "img_size=160") for a in BASE]
    code = main(settings + ["--set", f"run.output_dir={outputs}", "--set", "run.id=below",
                            "--set", "profiling.sampler=py-spy", "--set", "profiling.rate=100",
                            # Timed passes long enough that the forward gets samples however the clock falls.
                            "--set", "benchmark.min_time_s=1.5",
                            "--set", "profiling.itt=true", "--set", "benchmark.profiler=true"])
    return code, outputs / "below"


@pytest.mark.slow
@pytest.mark.skipif(sampler_module.find_py_spy() is None, reason="py-spy is not installed")
def test_sampled_run_writes_every_part(sampled):
    code, run_dir = sampled
    assert code == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    native = summary["native_time"]
    assert native["status"] == "measured", native.get("reason")
    assert "forward" in native["steps"] and any(line.startswith("forward: ") for line in native["lines"])
    shares = pd.read_csv(run_dir / "native_time.csv").set_index("step")
    share_columns = [c for c in shares.columns if c.endswith("_share") and c != "gil_share"]
    assert shares.loc["forward", share_columns].sum() == pytest.approx(1.0)
    # torch eager's forward runs in torch's libraries and oneDNN's generated kernels; with the clock fitted to
    # the steps' frames no neighbouring step's stacks land in it (it read 44% Python when they did).
    assert "fitted to the steps' own frames" in native["placement"]
    assert shares.loc["forward", "torch_onednn_share"] > 0.6, shares.loc["forward"].to_dict()
    speedscope = json.loads((run_dir / "samples.speedscope.json").read_text())
    assert speedscope["profiles"][0]["type"] == "evented" and speedscope["shared"]["frames"]
    counters = summary["cpu_counters"]
    assert counters["status"] == "measured" and counters["passes"][0]["voluntary_switches"] >= 0
    assert "task_clock_ns" in counters["counting"]
    table = pd.read_csv(run_dir / "cpu_counters.csv")
    assert (table["thread"] == "all threads").sum() == len(counters["passes"])  # one total row per timed pass
    kernels = summary["kernels"]
    assert kernels["status"] == "measured" and kernels["convolution_kernels"]
    layers = pd.read_csv(run_dir / "layer_timer.csv").set_index("path")
    assert layers.loc["model.0.conv", "kernel"]  # every convolution row names its kernel
    assert (run_dir / "onednn_verbose.txt").read_text().count("onednn_verbose") > 10
    assert summary["itt"]["balanced"] and summary["itt"]["tasks"] > 0
    for name, shape in (("native_time", NativeTimeSection), ("cpu_counters", CpuCountersSection),
                        ("kernels", KernelsSection)):
        assert not section_shape_errors(summary[name], shape), name
    trace = json.loads((run_dir / "trace.json").read_text())
    processes = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert {"detbench steps (timed passes)", "py-spy stacks (native frames)",
            "CPU counters (per batch, all threads)"} <= processes
    assert any(e.get("cat") == "cpu_op" or str(e.get("name", "")).startswith("aten::")
               for e in trace["traceEvents"])  # the profiled batch's own trace is kept
    report = (run_dir / "report.html").read_text()
    assert "Below the layer" in report and "forward: " in report


@pytest.mark.slow
def test_missing_sampler_finishes_the_run(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(sampler_module.sysconfig, "get_path", lambda name: str(empty))
    code = main(BASE + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=missing",
                        "--set", "profiling.sampler=py-spy", "--set", "benchmark.layer_timing=false"])
    assert code == 0
    summary = json.loads((tmp_path / "missing" / "summary.json").read_text())
    assert summary["status"] == "complete"
    assert summary["native_time"]["status"] == "unavailable"
    assert "pip install py-spy" in summary["native_time"]["reason"]
    assert any("sampler is missing" in warning for warning in summary["warnings"])
    out = capsys.readouterr().out
    assert "native time: unavailable" in out and "Traceback" not in out
    assert not (tmp_path / "missing" / "native_time.csv").exists()


def test_bad_profiling_settings_are_refused_by_name():
    from utils.config.schema import ConfigError, load_config
    config = ROOT / "configs" / "samples_tiny.yaml"
    assert load_config(config).profiling.sampler is None  # off by default
    with pytest.raises(ConfigError, match="profiling.sampler"):
        load_config(config, ["profiling.sampler=gprof"])
    with pytest.raises(ConfigError, match="profiling.rate"):
        load_config(config, ["profiling.rate=0"])
