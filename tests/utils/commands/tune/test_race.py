"""The race's decisions (utils/commands/tune/race.py), on hand-computed cases."""
import pytest

from utils.commands.tune.race import Interval, Standing, cap, eliminate, interleaved, interval, leader, next_field


def test_interval_of_two_samples_is_their_range_and_of_one_is_none():
    assert interval([3.0, 1.0]) == Interval(1.0, 3.0)
    assert interval([2.0]) is None


def test_interval_of_equal_samples_is_that_value():
    assert interval([5.0] * 10) == Interval(5.0, 5.0)


def test_leader_is_the_fastest_that_can_lead():
    fast_but_barred = Standing("a", {1: 5.0}, (5.0,), can_lead=False)
    slower = Standing("b", {1: 7.0}, (7.0,))
    slowest = Standing("c", {1: 9.0}, (9.0,))
    assert leader([fast_but_barred, slowest, slower]) is slower


def test_a_candidate_wholly_slower_in_two_rounds_is_dropped():
    best = Standing("best", {1: 10.0, 2: 10.2}, (10.0, 10.1, 10.2, 10.0, 10.1, 10.2))
    slow = Standing("slow", {1: 12.0, 2: 12.2}, (12.0, 12.1, 12.2, 12.0, 12.1, 12.2))
    drops = eliminate([best, slow], 2)
    assert [drop.name for drop in drops] == ["slow"]
    assert drops[0].round == 2 and "2 rounds" in drops[0].reason


def test_never_dropped_on_one_round():
    best = Standing("best", {1: 10.0}, (10.0, 10.1, 10.2))
    slow = Standing("slow", {1: 20.0}, (20.0, 20.1, 20.2))
    assert eliminate([best, slow], 1) == []


def test_not_dropped_when_faster_in_one_shared_round():
    best = Standing("best", {1: 10.0, 2: 10.0, 3: 10.0}, (10.0,) * 6)
    other = Standing("other", {1: 9.0, 2: 30.0, 3: 30.0}, (30.0,) * 6)
    # Its median (30) is slower, but in round 1 it beat the leader: the drift may be the machine's.
    assert eliminate([best, other], 3) == []


def test_not_dropped_when_the_intervals_overlap():
    best = Standing("best", {1: 10.0, 2: 11.0}, (9.0, 10.0, 11.0, 12.0))
    close = Standing("close", {1: 10.5, 2: 11.5}, (11.5, 12.0, 12.5, 13.0))
    assert eliminate([best, close], 2) == []


def test_the_field_keeps_the_leader_then_the_best_cases():
    best = Standing("best", {1: 10.0}, (10.0,))
    hopeless = Standing("hopeless", {1: 30.0}, (30.0,))
    maybe = Standing("maybe", {1: 12.0}, (12.0,))
    chosen, left_out = next_field([hopeless, maybe, best], 2)
    assert [s.name for s in chosen] == ["best", "maybe"]
    assert [s.name for s in left_out] == ["hopeless"]


def test_cap_counts_the_runs_the_time_left_pays_for():
    assert cap(100.0, 30.0) == 3
    assert cap(10.0, 30.0) == 0
    with pytest.raises(ValueError):
        cap(10.0, 0.0)


def test_every_other_round_is_reversed():
    assert interleaved(["a", "b", "c"], 1) == ["a", "b", "c"]
    assert interleaved(["a", "b", "c"], 2) == ["c", "b", "a"]
    assert interleaved(["a", "b", "c"], 3) == ["a", "b", "c"]


def test_a_candidate_not_measured_yet_comes_right_after_the_leader():
    best = Standing("best", {1: 10.0}, (10.0,))
    unmeasured = Standing("new")
    maybe = Standing("maybe", {1: 12.0}, (12.0,))
    chosen, _ = next_field([maybe, unmeasured, best], 3)
    assert [s.name for s in chosen] == ["best", "new", "maybe"]


def test_a_candidate_not_yet_run_ranks_at_its_prior():
    best = Standing("best", {1: 10.0}, (10.0, 10.0, 10.0))
    measured = Standing("measured", {1: 12.0}, (12.0, 12.0, 12.0))
    fresh_fast, fresh_slow = Standing("fresh_fast"), Standing("fresh_slow")
    chosen, left = next_field([best, measured, fresh_slow, fresh_fast], 3, priors={"fresh_fast": 10.5,
                                                                                  "fresh_slow": 20.0})
    assert [s.name for s in chosen] == ["best", "fresh_fast", "measured"] and [s.name for s in left] == ["fresh_slow"]
    # Without a prior, one not yet run goes first (anything is possible).
    chosen, _ = next_field([best, measured, fresh_slow], 2)
    assert [s.name for s in chosen] == ["best", "fresh_slow"]
