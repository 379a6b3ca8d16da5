from datasets.sources.selection import FrameSelector, selected_indices
from datasets.sources.settings import FrameSelection


def test_every_frame_by_default_and_every_stride_th_from_frame_0():
    assert selected_indices([i / 15 for i in range(7)], FrameSelection()) == [0, 1, 2, 3, 4, 5, 6]
    assert selected_indices([i / 15 for i in range(7)], FrameSelection(stride=3)) == [0, 3, 6]


def test_a_target_fps_keeps_the_first_frame_of_each_slot():
    # 30 fps to 10 fps: slots of 0.1 s from frame 0; frame 3 at 0.1 s opens the second slot (not lost to rounding).
    assert selected_indices([i / 30 for i in range(10)], FrameSelection(fps=10)) == [0, 3, 6, 9]
    # 15 fps to 4 fps: slots of 0.25 s: frames at 0, 0.2667 (4), 0.5333 (8), 0.8 (12), 1.0 (15)
    assert selected_indices([i / 15 for i in range(16)], FrameSelection(fps=4)) == [0, 4, 8, 12, 15]


def test_a_target_above_the_source_rate_keeps_every_frame():
    assert selected_indices([i / 15 for i in range(5)], FrameSelection(fps=100)) == [0, 1, 2, 3, 4]


def test_a_variable_frame_rate_is_selected_by_its_own_timestamps():
    # A burst and a pause: at 2 fps the slots are 0-0.5, 0.5-1.0, ...; the pause skips slots.
    times = [10.0, 10.05, 10.1, 10.6, 12.2, 12.3]
    assert selected_indices(times, FrameSelection(fps=2)) == [0, 3, 4]


def test_a_frame_without_a_timestamp_is_kept_under_fps_and_the_stride_counts_indices():
    assert selected_indices([None, None, None], FrameSelection(fps=1)) == [0, 1, 2]
    selector = FrameSelector(FrameSelection(stride=2))
    assert [selector.keep(index, None) for index in range(4)] == [True, False, True, False]
