"""What a camera does with a new frame while the detector is busy, and how a detector batches across cameras:
hand-made frames with hand-set arrival times."""
import threading
from dataclasses import dataclass

import pytest

from utils.scenarios.cameras.board import (
    DROP,
    QUEUE,
    WAIT,
    BoardClosed,
    BusyPolicy,
    FrameBoard,
    PendingFrames,
    batch_is_ready,
    take_batch,
)


@dataclass
class Frame:
    name: str
    arrival_s: float


def test_drop_keeps_only_the_newest_pending_frame():
    pending = PendingFrames(BusyPolicy(DROP))
    assert pending.offer(Frame("a", 1.0)) is None
    dropped = pending.offer(Frame("b", 2.0))
    assert dropped.name == "a" and [frame.name for frame in pending.frames] == ["b"]
    assert pending.offer(Frame("c", 3.0)).name == "b" and len(pending) == 1


def test_a_full_queue_drops_the_frame_that_arrives_and_keeps_the_waiting_ones():
    pending = PendingFrames(BusyPolicy(QUEUE, 2))
    assert pending.offer(Frame("a", 1.0)) is None and pending.offer(Frame("b", 2.0)) is None
    assert pending.offer(Frame("c", 3.0)).name == "c"
    assert [frame.name for frame in pending.frames] == ["a", "b"]


def test_a_waiting_camera_never_offers_without_room():
    pending = PendingFrames(BusyPolicy(WAIT, 1))
    pending.offer(Frame("a", 1.0))
    assert not pending.has_room()
    with pytest.raises(RuntimeError):
        pending.offer(Frame("b", 2.0))


@pytest.mark.parametrize("policy", [dict(mode="late"), dict(mode=DROP, frames=2), dict(mode=QUEUE, frames=0)])
def test_a_policy_no_camera_could_follow_is_refused(policy):
    with pytest.raises(ValueError):
        BusyPolicy(**policy)


def test_a_batch_starts_with_the_earliest_frame_and_takes_what_else_waits_by_arrival():
    cameras = [PendingFrames(BusyPolicy(QUEUE, 4)) for _ in range(3)]
    for camera, arrivals in enumerate([(0.30, 0.50), (0.10,), (0.20, 0.40, 0.60)]):
        for arrival in arrivals:
            cameras[camera].offer(Frame(f"{camera}@{arrival}", arrival))
    batch = take_batch(cameras, 4)
    assert [(camera, frame.arrival_s) for camera, frame in batch] == [(1, 0.10), (2, 0.20), (0, 0.30), (2, 0.40)]
    assert [(camera, frame.arrival_s) for camera, frame in take_batch(cameras, 4)] == [(0, 0.50), (2, 0.60)]
    assert take_batch(cameras, 4) == []


def test_a_batch_takes_what_waits_without_waiting_for_more():
    cameras = [PendingFrames(BusyPolicy(DROP)) for _ in range(2)]
    cameras[1].offer(Frame("only", 1.0))
    assert [frame.name for _, frame in take_batch(cameras, 8)] == ["only"]


def test_the_board_takes_from_the_cameras_a_detector_serves_and_ends_once_closed_and_empty():
    board = FrameBoard([BusyPolicy(DROP), BusyPolicy(DROP)])
    never = threading.Event()
    board.offer(0, Frame("a", 1.0), never)
    board.offer(1, Frame("b", 0.5), never)
    assert [(camera, frame.name) for camera, frame in board.take([0], 2, 0.01)] == [(0, "a")]
    assert board.take([0], 2, 0.01) == []  # nothing for camera 0 after the wait
    board.close()
    with pytest.raises(BoardClosed):
        board.offer(0, Frame("late", 2.0), never)
    assert [frame.name for _, frame in board.take([1], 2, 0.01)] == ["b"]  # what waited is still taken
    assert board.take([0, 1], 2, 0.01) is None


def test_a_waiting_reader_waits_for_the_detector_and_a_stop_ends_its_wait():
    board = FrameBoard([BusyPolicy(WAIT, 1)])
    never, stop = threading.Event(), threading.Event()
    board.offer(0, Frame("a", 1.0), never)
    offered = []
    reader = threading.Thread(target=lambda: offered.append(board.offer(0, Frame("b", 2.0), never)))
    reader.start()
    reader.join(0.2)
    assert reader.is_alive()  # no room: the file waits, nothing is dropped
    assert [frame.name for _, frame in board.take([0], 1, 1.0)] == ["a"]
    reader.join(5)
    assert offered == [None] and [frame.name for _, frame in board.take([0], 1, 1.0)] == ["b"]
    board.offer(0, Frame("c", 3.0), never)
    stop.set()
    with pytest.raises(BoardClosed):
        board.offer(0, Frame("d", 4.0), stop)


def test_clear_hands_back_every_waiting_frame():
    board = FrameBoard([BusyPolicy(QUEUE, 3), BusyPolicy(DROP)])
    never = threading.Event()
    for camera, name in ((0, "a"), (0, "b"), (1, "c")):
        board.offer(camera, Frame(name, 1.0), never)
    assert sorted(frame.name for _, frame in board.clear()) == ["a", "b", "c"]
    assert board.take([0, 1], 4, 0.01) == []


def _waiting(*names: str, frames: int = 4) -> PendingFrames:
    pending = PendingFrames(BusyPolicy(WAIT, frames))
    for index, name in enumerate(names):
        pending.offer(Frame(name, float(index)))
    return pending


def test_waiting_cameras_fill_the_batch_unless_none_can_add_a_frame():
    assert not batch_is_ready([_waiting(), _waiting()], [False, False], 4)  # nothing waits
    assert not batch_is_ready([_waiting("a"), _waiting("b")], [False, False], 4)  # both can still add
    assert batch_is_ready([_waiting("a", "b"), _waiting("c", "d")], [False, False], 4)  # the batch is full
    assert batch_is_ready([_waiting("a"), _waiting("b")], [True, True], 4)  # both have ended
    assert not batch_is_ready([_waiting("a"), _waiting("b")], [True, False], 4)  # the second can add
    assert batch_is_ready([_waiting("a"), _waiting("b", frames=1)], [True, False], 4)  # ended, and full


def test_a_live_camera_beside_waiting_ones_is_taken_at_once():
    live = PendingFrames(BusyPolicy(DROP))
    live.offer(Frame("live", 0.5))
    assert batch_is_ready([_waiting("a"), live], [False, False], 4)


def test_a_waiting_camera_decodes_only_while_a_detector_asks_and_a_stop_ends_its_wait():
    board = FrameBoard([BusyPolicy(WAIT, 1)])
    never, stop = threading.Event(), threading.Event()
    asked = threading.Event()

    def reader() -> None:
        board.wait_for_demand(0, never)
        asked.set()
        board.offer(0, Frame("a", 1.0), never)

    thread = threading.Thread(target=reader)
    thread.start()
    assert not asked.wait(0.2)  # no detector asks: the file is not decoded ahead
    assert [frame.name for _, frame in board.take([0], 1, 5.0)] == ["a"]
    thread.join(5)
    assert asked.is_set()
    stop.set()
    with pytest.raises(BoardClosed):
        board.wait_for_demand(0, stop)


def test_a_live_camera_never_waits_for_demand_and_an_ended_one_lets_a_part_batch_go():
    board = FrameBoard([BusyPolicy(DROP), BusyPolicy(WAIT, 4)])
    board.wait_for_demand(0, threading.Event())  # returns at once: a live camera keeps its own pace
    board.offer(1, Frame("last", 1.0), threading.Event())
    assert board.take([1], 4, 0.05) == []  # the batch waits for more of the file
    board.ended(1)
    assert [frame.name for _, frame in board.take([1], 4, 0.05)] == ["last"]
