"""tune's space (utils/commands/tune/space.py): from the CPU's flags and the runtimes installed, pruned by facts, fixed
and narrowed by the user."""
import pytest

from pipelines.runtimes.registry import SPECS
from utils.commands.tune.space import (BACKEND, BATCH, PINNING, PRECISION, STREAMS, THREADS, Machine, SpaceError,
                              build_space, doubling)

ALL = tuple(SPECS)
BF16 = frozenset({"avx2", "avx512f", "avx512_bf16", "avx512_vnni"})


def never(_overrides):
    return None


def space(machine=Machine(BF16, 2, ALL), streams=False, images=6, fixed=None, narrowed=(), refuse=never):
    return build_space(machine, streams, images, fixed or {}, list(narrowed), refuse)


def test_doubling_ends_at_the_limit():
    assert doubling(1) == ("1",)
    assert doubling(6) == ("1", "2", "4", "6")
    assert doubling(8) == ("1", "2", "4", "8")
    assert doubling(6, with_limit=False) == ("1", "2", "4")


def test_bf16_only_where_the_cpu_runs_it_natively():
    without = space(Machine(frozenset({"avx2"}), 2, ALL))
    assert "bf16" not in without.axes[PRECISION]
    assert any("bf16" in line and "avx512_bf16" in line for line in without.refusals)
    assert "bf16" in space().axes[PRECISION]


def test_a_runtime_not_installed_is_left_out_with_its_package():
    only = space(Machine(BF16, 2, (ALL[0],)))
    assert only.axes[BACKEND] == (ALL[0],)
    missing = [name for name in ALL[1:]]
    assert all(any(name in line and "not installed" in line for line in only.refusals) for name in missing)


def test_precisions_follow_the_runtimes_left():
    fixed = space(fixed={BACKEND: ALL[0]})
    assert set(fixed.axes[PRECISION]) <= set(SPECS[ALL[0]].precisions)


def test_single_stream_races_no_streams_and_says_why():
    latency = space()
    assert STREAMS not in latency.axes
    assert any(line.startswith(STREAMS) for line in latency.refusals)
    assert space(streams=True).axes[STREAMS] == ("1", "2")


def test_batch_sizes_double_up_to_the_images_there_are():
    assert space(images=3).axes[BATCH] == ("1", "2")
    assert space(images=100).axes[BATCH] == ("1", "2", "4", "8")


def test_pinning_needs_two_threads_and_more_streams_than_threads_never_run():
    raced = space(streams=True)
    for candidate in raced.candidates:
        values = candidate.values
        assert int(values[STREAMS]) <= int(values[THREADS])
        assert not (values[PINNING] == "true" and values[THREADS] == "1")
    assert any("pinning at 1 thread" in line for line in raced.refusals)


def test_set_fixes_an_axis_and_sweep_narrows_one():
    narrowed = space(fixed={THREADS: "1"}, narrowed=["dataset.batch_size=1,4"])
    assert narrowed.axes[THREADS] == ("1",) and narrowed.axes[BATCH] == ("1", "4")
    assert {candidate.values[BATCH] for candidate in narrowed.candidates} == {"1", "4"}


def test_a_way_the_config_refuses_is_left_out_with_its_reason():
    def refuse(overrides):
        return "cannot run this model" if f"{BACKEND}={ALL[-1]}" in overrides else None

    raced = space(refuse=refuse)
    assert all(candidate.values[BACKEND] != ALL[-1] for candidate in raced.candidates)
    assert any("cannot run this model" in line for line in raced.refusals)


def test_an_axis_the_cpu_cannot_run_is_refused_by_name():
    with pytest.raises(SpaceError, match="runtime.precision=bf16"):
        space(Machine(frozenset({"avx2"}), 2, ALL), fixed={PRECISION: "bf16"})
    with pytest.raises(SpaceError, match="runtime.threads=8.*at most 2"):
        space(narrowed=["runtime.threads=1,8"])


def test_more_than_ten_thousand_candidates_are_refused_before_expanding():
    values = ",".join(str(value) for value in range(1, 5001))
    with pytest.raises(SpaceError, match="more than 10,000"):
        space(narrowed=[f"dataset.limit={values}"])


def test_a_way_is_everything_but_the_scheduling():
    candidate = space(fixed={BACKEND: ALL[0]}).candidates[0]
    assert dict(candidate.way) == {BACKEND: ALL[0], PRECISION: candidate.values[PRECISION]}
