"""The pass schedule: order, progress total, and the time and precision stops."""
import pytest

from tests.support.paths import CONFIGS
from utils.config.schema import ConfigError, load_config
from utils.scenarios.pass_plan import PassPlan, PassSchedule, WarmupBatches
from utils.record.steps import PassKind


def kinds(plan, seconds=0.1, per_image=lambda index: [10.0]):
    seen = []
    for planned in plan.passes():
        seen.append((planned.kind.value, planned.index))
        if planned.kind is PassKind.TIMED:
            plan.add_measured(seconds, per_image(planned.index))
    return seen


def test_instrumented_passes_sit_between_timed_passes():
    plan = PassPlan(PassSchedule(repeats=2, layer_timing=True, layer_timing_batches=2, profiler=True), (1,) * 3,
                    WarmupBatches(count=1))
    assert plan.total_batches == 1 + 2 * 3 + 2 + 1
    assert kinds(plan) == [("warmup", 0), ("timed", 0), ("layers", 0), ("profiler", 0), ("timed", 1)]


def test_min_time_adds_passes_and_grows_the_total():
    plan = PassPlan(PassSchedule(min_time_s=0.35), (1,) * 2)
    assert [k for k in kinds(plan) if k[0] == "timed"] == [("timed", i) for i in range(4)]
    assert plan.total_batches == 4 * 2


def test_target_ci_stops_once_the_median_is_precise():
    plan = PassPlan(PassSchedule(target_ci=0.02, max_time_s=100), (1,) * 4)
    # Four samples give no 95% interval at all; eight from two passes of +-1.5% give one narrow enough.
    timed = kinds(plan, per_image=lambda index: [98.5, 99.5, 100.5, 101.5])
    assert len(timed) == 2 and plan.ci_half_width <= 0.02


def test_target_ci_is_bounded_by_max_time():
    plan = PassPlan(PassSchedule(target_ci=0.001, max_time_s=0.5), (1,))
    noisy = kinds(plan, seconds=0.1, per_image=lambda index: [50.0 if index % 2 else 150.0])
    assert len(noisy) == 5 and plan.ci_half_width is None  # 0.5 s allowed 5 samples: too few for an interval
    plan = PassPlan(PassSchedule(target_ci=0.001, max_time_s=0.95), (1,))
    assert len(kinds(plan, per_image=lambda index: [50.0 if index % 2 else 150.0])) == 10
    assert plan.ci_half_width == 0.5


def test_the_schedule_reads_each_benchmark_key_into_its_own_field():
    config = load_config(CONFIGS / "samples_tiny.yaml", [
        "benchmark.repeats=4", "benchmark.timed_batches=5", "benchmark.min_time_s=2.5", "benchmark.target_ci=0.03",
        "benchmark.max_time_s=60",
        "benchmark.layer_timing=true", "benchmark.layer_timing_batches=2", "benchmark.profiler=true"])
    assert PassSchedule.of(config.benchmark) == PassSchedule(repeats=4, timed_batches=5, min_time_s=2.5, target_ci=0.03,
                                                            max_time_s=60, layer_timing=True,
                                                            layer_timing_batches=2, profiler=True)


def test_the_progress_total_counts_files_of_uneven_batches():
    # batches of 4, 4 and 2 files; the warm-up runs the last batch only (its shape), the layer pass the first
    plan = PassPlan(PassSchedule(repeats=2, layer_timing=True, layer_timing_batches=1), (4, 4, 2),
                    WarmupBatches(indices=(2,)))
    assert plan.total_images == 2 + 2 * 10 + 4


def test_timed_batches_times_the_first_batches_of_each_pass_and_the_layer_pass_takes_as_many():
    plan = PassPlan(PassSchedule(repeats=2, timed_batches=2, layer_timing=True), (4, 4, 2), WarmupBatches(count=1))
    timed = [planned for planned in plan.passes() if planned.kind is PassKind.TIMED]
    assert [plan.batches_in(planned) for planned in timed] == [2, 2]
    assert plan.layer_batches == 2
    assert plan.total_batches == 1 + 2 * 2 + 2 and plan.total_images == 4 + 2 * 8 + 8
    # More than the data holds: every batch, as without the key.
    whole = PassPlan(PassSchedule(timed_batches=10), (1,) * 3)
    assert [planned.max_batches for planned in whole.passes()] == [None]


def test_timed_batches_is_refused_under_loadgen_which_times_its_own_queries():
    assert load_config(CONFIGS / "samples_tiny.yaml", ["benchmark.timed_batches=3"]).benchmark.timed_batches == 3
    with pytest.raises(ConfigError, match="benchmark.timed_batches applies to benchmark.scenario single_stream"):
        load_config(CONFIGS / "samples_tiny.yaml", ["benchmark.timed_batches=3", "benchmark.scenario=offline"])
