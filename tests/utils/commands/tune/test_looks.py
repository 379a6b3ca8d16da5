"""How long each run of the race is (utils/commands/tune/looks.py): a first look's few batches and verdict images, a
full run's cost worked out from a first look, and how the lengths are said."""
import pytest

from utils.commands.tune.looks import (FIRST_LOOK, FULL, FULL_RUN, Look, check_overrides, describe, first_look,
                                       full_run_seconds, images_timed, look_batches, look_floor_seconds, looks_text,
                                       preparation_seconds, verdict_images)
from utils.record.statistics import median_confidence_interval


def test_a_first_look_times_the_fewest_batches_whose_median_interval_leaves_out_two_batches_each_side():
    assert look_batches() == 12
    # By hand: P(Binomial(12, 1/2) < 3) = (1 + 12 + 66) / 4096 = 0.019 <= 0.025, so the interval is (x_3, x_10);
    # with 11 batches (1 + 11 + 55) / 2048 = 0.033 > 0.025 and it widens to (x_2, x_10).
    assert median_confidence_interval(range(12)) == (2, 9)
    assert median_confidence_interval(range(11)) == (1, 9)
    assert look_batches(kept_out=0) == 6  # the extremes: the fewest batches with any 95% interval of the median


def test_a_first_looks_verdict_scores_the_fewest_images_that_decide_or_fewer_where_the_config_asks():
    assert verdict_images(None, 30) == 30
    assert verdict_images(200, 30) == 30
    assert verdict_images(10, 30) == 10


def test_a_first_look_covers_the_verdicts_images_at_least_twelve_batches_at_most_the_folder():
    assert first_look(1, 30, 200, timed_by_passes=True) == Look(FIRST_LOOK, 30)
    assert first_look(2, 30, 200, timed_by_passes=True) == Look(FIRST_LOOK, 15)
    assert first_look(4, 30, 200, timed_by_passes=True) == Look(FIRST_LOOK, 12)  # 48 images: 12 batches at least
    assert first_look(2, 30, 6, timed_by_passes=True) == Look(FIRST_LOOK, 3)  # the folder's 3 batches
    # Under LoadGen the test times its own queries: only the check is shortened.
    assert first_look(1, 30, 200, timed_by_passes=False) == Look(FIRST_LOOK, None)


def test_a_first_look_is_one_timed_pass_of_its_batches_and_a_full_run_keeps_the_configs_passes():
    assert Look(FIRST_LOOK, 30).overrides == ["benchmark.repeats=1", "benchmark.timed_batches=30",
                                              "benchmark.min_time_s=0", "benchmark.target_ci=null"]
    assert FULL_RUN.overrides == [] and Look(FIRST_LOOK).overrides == []
    assert check_overrides(30, 30) == ["benchmark.accuracy.images=30", "benchmark.accuracy.max_images=30"]
    assert check_overrides(64) == ["benchmark.accuracy.images=64"]


def test_the_images_a_run_timed_are_the_folders_first_ones():
    assert images_timed(30, 1, 200) == 30 and images_timed(12, 4, 200) == 48 and images_timed(30, 1, 6) == 6
    assert images_timed(None, 2, 200) == 200


def test_a_full_runs_cost_from_a_first_look():
    # A 20 s look timed 30 images at 50 ms (1.5 s): 18.5 s besides; 3 passes over 200 images at 50 ms add 30 s.
    assert full_run_seconds(20.0, 30, 50.0, 200, 3) == pytest.approx(48.5)
    # A look shorter than its timed batches at their median (they were faster than it): no negative remainder.
    assert full_run_seconds(1.0, 30, 50.0, 30, 1) == pytest.approx(1.5)


def test_what_a_run_spent_preparing_its_model_counts_only_where_the_cache_did_not_have_it():
    assert preparation_seconds({"export_s": 8.0, "cache_hit": False, "quantize_s": 32.0,
                                "accuracy_control": {"search_s": 37.0}}) == pytest.approx(77.0)
    assert preparation_seconds({"export_s": 0.01, "cache_hit": True, "quantize_s": 0.0}) == 0.0
    assert preparation_seconds({}) == 0.0


def test_a_rounds_length_in_words():
    assert describe(FIRST_LOOK, [30], 1, 200, [30]) == ("first looks: 1 timed pass of 30 batch(es), verdicts on 30 "
                                                        "images")
    assert describe(FIRST_LOOK, [15, 30], 1, 200, []) == "first looks: 1 timed pass of 15-30 batch(es)"
    assert describe(FULL, [], 3, 200, [30, 64]) == ("full runs: every batch (200 images) in 3 timed pass(es), verdicts "
                                                    "on 30-64 images")
    assert describe(FIRST_LOOK, [], None, 200, [30]) == "first looks: LoadGen's own timing, verdicts on 30 images"


def test_which_rounds_of_a_candidate_were_first_looks():
    assert looks_text({1: FIRST_LOOK, 2: FULL, 3: FULL}) == "first look (round 1); full (rounds 2, 3)"
    assert looks_text({2: FULL}) == "full (round 2)" and looks_text({}) == ""


def test_a_looks_floor_leaves_out_what_only_that_look_paid():
    # 40 s with a 5 s start: 10 s preparing its model and 90 images (30 timed, 30 + 30 in its check) at 100 ms.
    assert look_floor_seconds(40.0, 5.0, 10.0, 90, 100.0) == pytest.approx(5.0 + 21.0)
    assert look_floor_seconds(5.0, 5.0, 0.0, 90, 100.0) == pytest.approx(5.0)  # never below its process's start
