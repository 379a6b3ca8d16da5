"""The search over N on hand cases: monotone outcomes give the threshold exactly with doubling then bisection, noisy
ones near the threshold are run again and land within one of it, a floor starts a later candidate above the best
so far, and points that disagree with N's order are named."""
import random

import pytest

from utils.commands.capacity.search import (MAX_RUNS, RunJudgement, answer, bracket, next_count, point_verdict,
                                            verdicts_of)

SURE_YES, SURE_NO = RunJudgement(True, True), RunJudgement(False, True)
MAYBE_YES, MAYBE_NO = RunJudgement(True, False), RunJudgement(False, False)


def search(judge, floor=0, limit=256):
    """Runs the search against `judge(count, attempt)`; returns its answer and the counts in the order run."""
    runs, order = {}, []
    while (count := next_count(verdicts_of(runs), floor, limit)) is not None:
        order.append(count)
        runs.setdefault(count, []).append(judge(count, len(runs.get(count, ()))))
        assert len(order) < 100
    return answer(verdicts_of(runs), floor, limit), order


def threshold(largest):
    return lambda count, attempt: SURE_YES if count <= largest else SURE_NO


def test_one_sure_run_decides_a_point_and_disagreeing_sure_runs_go_to_the_majority():
    assert point_verdict([SURE_YES]) is True
    assert point_verdict([SURE_NO]) is False
    assert point_verdict([MAYBE_YES]) is None
    assert point_verdict([MAYBE_NO, SURE_YES]) is True
    assert point_verdict([SURE_YES, SURE_NO]) is None
    assert point_verdict([SURE_YES, SURE_NO, MAYBE_YES]) is True
    assert point_verdict([MAYBE_YES, MAYBE_NO, MAYBE_NO]) is False
    assert point_verdict([MAYBE_YES, MAYBE_NO], max_runs=2) is False  # a tie is not served


def test_monotone_outcomes_double_then_bisect_to_the_threshold():
    found, order = search(threshold(5))
    assert order == [1, 2, 4, 8, 6, 5]
    assert (found.largest, found.first_not_served, found.settled, found.disagreeing) == (5, 6, True, ())


@pytest.mark.parametrize("largest", range(0, 70))
def test_every_threshold_is_found_exactly_in_about_two_log2_points(largest):
    found, order = search(threshold(largest))
    assert (found.largest, found.first_not_served) == (largest, largest + 1)
    assert len(order) == len(set(order)) <= 2 * max(1, largest + 1).bit_length() + 1


def test_one_camera_not_served_ends_the_search_at_once():
    found, order = search(threshold(0))
    assert order == [1] and found.largest == 0 and found.first_not_served == 1 and found.settled


def test_a_floor_starts_above_the_best_answer_so_far():
    found, order = search(threshold(9), floor=6)
    assert order == [7, 8, 10, 9]  # floor + 1, floor + 2, floor + 4, then bisection
    assert found.largest == 9
    beaten, order = search(threshold(6), floor=6)
    assert order == [7] and beaten.largest == 6 and beaten.first_not_served == 7


def test_the_limit_served_says_at_least():
    found, order = search(threshold(1000), limit=12)
    assert order == [1, 2, 4, 8, 12]
    assert found.largest == 12 and found.at_least
    assert not search(threshold(11), limit=12)[0].at_least


def test_unsure_points_run_again_up_to_the_limit_of_runs():
    def judge(count, attempt):
        if count == 4:
            return [MAYBE_YES, MAYBE_NO, MAYBE_YES][attempt]
        return SURE_YES if count < 4 else SURE_NO
    found, order = search(judge)
    assert order.count(4) == MAX_RUNS
    assert found.largest == 4 and found.first_not_served == 5


@pytest.mark.parametrize("seed", range(40))
def test_noisy_outcomes_near_the_threshold_land_within_one_of_it(seed):
    """Two counts either side of the true threshold are a coin toss that knows it (never sure); the rest are sure."""
    generator = random.Random(seed)
    largest = generator.randint(2, 40)

    def judge(count, attempt):
        if abs(count - (largest + 0.5)) <= 1.0:
            return RunJudgement(generator.random() < (0.7 if count <= largest else 0.3), False)
        return SURE_YES if count <= largest else SURE_NO
    found, _ = search(judge)
    assert abs(found.largest - largest) <= 1
    assert found.first_not_served == found.largest + 1


def test_points_that_disagree_with_the_order_of_n_are_named():
    verdicts = {1: True, 2: True, 4: False, 3: True, 8: True}  # 8 served above 4 not served: noise
    assert bracket(verdicts) == (3, 4)
    found = answer(verdicts)
    assert found.largest == 3 and found.disagreeing == (8,) and found.settled


def test_an_unfinished_search_is_not_settled():
    found = answer({1: True, 2: True, 4: False})
    assert (found.largest, found.first_not_served, found.settled) == (2, 4, False)
    assert next_count({1: True, 2: True, 4: False}) == 3
