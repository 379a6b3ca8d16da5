"""LoadGen's settings bounded before LoadGen starts: the schedule it would build in memory, durations its
64-bit nanosecond counts cannot hold, tests that would outlast their bound; a legal test prints its plan."""
import json
import subprocess
import sys
import time

import pytest

from tests.support.paths import ROOT, SAMPLES
from utils.config.schema import LoadgenSection
from utils.scenarios.loadgen.bounds import (BYTES_PER_QUERY, BYTES_PER_SAMPLE, DEFAULT_LIMIT_S, LoadgenRefused,
                                          check_integers, check_plan, plan)
from utils.scenarios.loadgen.test import EXPECTED_RATE_MARGIN, ScenarioSettings

GiB = 2**30
IMAGE = 3 * 480 * 640


def settings(scenario, **changes) -> ScenarioSettings:
    loadgen = LoadgenSection(**{key: value for key, value in changes.items() if key != "mode"})
    return ScenarioSettings(scenario, changes.get("mode", "performance"), loadgen.min_duration_s,
                            loadgen.max_duration_s, loadgen.min_query_count, loadgen.target_qps,
                            loadgen.target_latency_ms, loadgen.target_latency_percentile, loadgen.samples_per_query,
                            loadgen.find_peak, loadgen.seed)


def test_server_queries_by_hand():
    planned = plan(settings("server", target_qps=2.0, target_latency_ms=100, min_duration_s=10), 6, [IMAGE] * 6)
    assert (planned.queries, planned.samples) == (64, 64)  # min_query_count 64 above 2 x 10
    assert planned.schedule_bytes == 64 * (BYTES_PER_QUERY + BYTES_PER_SAMPLE)
    assert planned.images_bytes == 6 * IMAGE
    assert planned.seconds == 32.0  # 64 queries at 2 per second


def test_server_at_1e9_qps_is_refused_by_memory_naming_the_keys():
    server = settings("server", target_qps=1e9, target_latency_ms=100)
    planned = plan(server, 6, [IMAGE] * 6)
    assert planned.queries == 10**10
    with pytest.raises(LoadgenRefused) as info:
        check_plan(server, planned, 24 * GiB, "available on this machine")
    message = str(info.value)
    assert "10,000,000,000 queries" in message and "more than the 24.0 GiB available on this machine" in message
    assert "benchmark.loadgen.target_qps 1e+09 x benchmark.loadgen.min_duration_s 10" in message


def test_offline_samples_follow_the_expected_rate():
    offline = settings("offline", min_duration_s=10)
    assert plan(offline, 6, [IMAGE] * 6).samples == 64  # no rate measured yet: min_query_count
    planned = plan(offline, 6, [IMAGE] * 6, expected_per_s=30.0)
    assert planned.samples == 330  # 1.1 x 10 s x 30/s
    assert planned.seconds == pytest.approx(330 / (30.0 / EXPECTED_RATE_MARGIN))


def test_multi_stream_of_100000_samples_on_6_images_is_refused_with_its_estimate():
    multi = settings("multi_stream", samples_per_query=100_000)
    planned = plan(multi, 6, [IMAGE] * 6, expected_per_s=300.0)  # 200 images/s measured
    assert planned.seconds == pytest.approx(64 * 100_000 / 200.0)  # 8.9 h
    with pytest.raises(LoadgenRefused) as info:
        check_plan(multi, planned, 24 * GiB, "available")
    message = str(info.value)
    assert "about 8.9 h" in message and f"the {DEFAULT_LIMIT_S / 3600:.1f} h a LoadGen test may take" in message
    assert "benchmark.loadgen.samples_per_query 100,000 x benchmark.loadgen.min_query_count 64" in message
    bounded = settings("multi_stream", samples_per_query=100_000, max_duration_s=60)
    with pytest.raises(LoadgenRefused, match="past benchmark.loadgen.max_duration_s 60"):
        check_plan(bounded, plan(bounded, 6, [IMAGE] * 6, expected_per_s=300.0), 24 * GiB, "available")


@pytest.mark.parametrize("key, value", [("min_duration_s", 1e12), ("max_duration_s", 1e12),
                                        ("target_latency_ms", 1e13), ("seed", 2**64)])
def test_values_loadgen_cannot_hold_are_refused_naming_the_key(key, value):
    values = {"target_qps": 1.0, "target_latency_ms": 10, "min_duration_s": 1.0, key: value}
    with pytest.raises(LoadgenRefused, match=f"benchmark.loadgen.{key} .* is more than LoadGen can hold"):
        check_integers(settings("server", **values))


def test_a_slow_server_rate_is_refused_by_its_length():
    server = settings("server", target_qps=1e-6, target_latency_ms=10)
    with pytest.raises(LoadgenRefused, match="64 queries of 64 samples in all, about 740.7 days"):
        check_plan(server, plan(server, 6, [IMAGE] * 6), 24 * GiB, "available")


QUICK = [sys.executable, str(ROOT / "benchmark.py"), "--config", str(ROOT / "configs" / "samples_tiny.yaml"),
         "--set", "preprocess.img_size=64", "--set", "benchmark.layer_timing=false", "--set", "outputs.plots=false",
         "--set", "outputs.save_images=false", "--set", "outputs.report=false", "--set", f"dataset.path={SAMPLES}",
         "--set", "run.id=r"]


def cli(tmp_path, *overrides):
    command = QUICK + ["--set", f"run.output_dir={tmp_path}"]
    for override in overrides:
        command += ["--set", override]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    return result, time.perf_counter() - started


@pytest.mark.slow
@pytest.mark.parametrize("overrides, says", [
    (("benchmark.scenario=server", "benchmark.loadgen.target_qps=1e9", "benchmark.loadgen.target_latency_ms=100"),
     "benchmark.loadgen.target_qps 1e+09"),
    (("benchmark.scenario=offline", "benchmark.loadgen.min_duration_s=1e12"),
     "benchmark.loadgen.min_duration_s 1e+12 is more than LoadGen can hold"),
])
def test_cli_refuses_before_loadgen_starts(tmp_path, overrides, says):
    result, seconds = cli(tmp_path, *overrides)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.startswith("error: ") and says in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "r").exists() and seconds < 120


@pytest.mark.slow
def test_cli_refuses_a_multi_stream_test_of_hours_once_the_rate_is_measured(tmp_path):
    result, seconds = cli(tmp_path, "benchmark.scenario=multi_stream", "benchmark.loadgen.samples_per_query=100000")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "benchmark.loadgen.samples_per_query 100,000" in result.stderr and "Traceback" not in result.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["status"] == "failed" and "LoadGen would need" in summary["stop_reason"]
    assert seconds < 120


@pytest.mark.slow
def test_a_legal_test_prints_its_plan_first(tmp_path):
    result, _ = cli(tmp_path, "benchmark.scenario=offline", "benchmark.loadgen.min_duration_s=0.3",
                    "benchmark.loadgen.min_query_count=4", "dataset.limit=4")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "LoadGen plan: 1 queries of " in result.stdout and "of memory for the schedule" in result.stdout
