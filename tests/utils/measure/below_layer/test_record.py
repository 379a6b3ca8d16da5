"""What lies below the layer as plain data (utils/measure/below_layer/record.py): trace.json shows the sampled stacks
with the steps where there are any, and counters alone leave it to the profiler."""
from utils.measure.below_layer.record import BatchCounters, BelowLayer, SamplerResult


def test_sampled_stacks_join_the_trace_and_counters_alone_do_not():
    counted = BelowLayer(unix_minus_perf_ns=5, counter_batches=[BatchCounters(0, 10, {1: {"task_clock_ns": 8.0}})])
    assert not counted.joins_trace and counted.kernel_by_path == {} and counted.native_time is None
    sampled = BelowLayer(unix_minus_perf_ns=5, sample_events=[{"ph": "X", "name": "run", "ts": 0.0, "dur": 1.0}])
    assert sampled.joins_trace
    assert SamplerResult("unavailable", "py-spy is not installed").events == []
