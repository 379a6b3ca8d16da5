"""Where decoded frames wait for a detector, and what a camera does with a new frame while it is busy.

Each camera keeps its pending frames, oldest first, under one of three rules:
- `drop` keeps only the newest: a frame arriving while one waits replaces it, and the older one is dropped (as
  Frigate's frame manager does: a detector never works on a stale frame while a fresher one waits);
- `queue` keeps up to `frames`: a frame arriving when they are all taken is dropped, the waiting ones kept;
- `wait` (a file not played in real time) keeps up to `frames` and makes its reader wait for room: nothing is
  dropped, the file is read as fast as the detector takes its frames. Its reader decodes a frame only while a
  detector asks for one, so decoding runs between the detector's batches, as in a plain read-then-infer loop
  (benchmarks/peers/streams_limit.py), not beside its forward: a file has no pace to keep, and on a machine whose
  cores the forward's threads fill, a decoder beside them takes its time from theirs.

A detector takes a batch from the cameras it serves: the first waiting frame (the earliest arrival), then
whatever else waits, in order of arrival, up to the batch size, without waiting for more (Frigate and DeepStream
batch so). Cameras that all wait fill the batch first, unless each of them has ended or is full. The pure part
(PendingFrames, take_batch, batch_is_ready) knows nothing of threads; FrameBoard puts it behind one lock.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Generic, Optional, Protocol, Sequence, TypeVar

DROP, QUEUE, WAIT = "drop", "queue", "wait"


class Arriving(Protocol):
    arrival_s: float  # time.monotonic() when the frame arrived


Frame = TypeVar("Frame", bound=Arriving)


@dataclass(frozen=True)
class BusyPolicy:
    mode: str  # DROP, QUEUE or WAIT
    frames: int = 1  # the frames a camera keeps waiting (DROP keeps 1)

    def __post_init__(self) -> None:
        if self.mode not in (DROP, QUEUE, WAIT):
            raise ValueError(f"mode must be one of {DROP}, {QUEUE}, {WAIT}, got {self.mode!r}")
        if self.frames < 1 or (self.mode == DROP and self.frames != 1):
            raise ValueError(f"{self.mode} keeps at least 1 frame (drop exactly 1), got {self.frames}")


class PendingFrames(Generic[Frame]):
    """One camera's frames waiting for a detector, oldest first."""

    def __init__(self, policy: BusyPolicy):
        self.policy = policy
        self.frames: deque[Frame] = deque()

    def has_room(self) -> bool:
        return len(self.frames) < self.policy.frames

    def offer(self, frame: Frame) -> Optional[Frame]:
        """Keeps `frame` by the policy; returns the frame dropped for it (the older one under drop, the new one
        under a full queue), or None. Under wait the caller waits for room first."""
        if self.has_room():
            self.frames.append(frame)
            return None
        if self.policy.mode == DROP:
            dropped = self.frames.popleft()
            self.frames.append(frame)
            return dropped
        if self.policy.mode == QUEUE:
            return frame
        raise RuntimeError("a waiting camera offered a frame without room for it")

    def __len__(self) -> int:
        return len(self.frames)


def take_batch(pending: Sequence[PendingFrames[Frame]], batch_size: int) -> list[tuple[int, Frame]]:
    """(camera, frame) for the first waiting frame of any of `pending`, then the others waiting, by arrival, up to
    `batch_size`; empty when none waits."""
    batch: list[tuple[int, Frame]] = []
    while len(batch) < batch_size:
        waiting = [(frames.frames[0].arrival_s, camera) for camera, frames in enumerate(pending) if frames.frames]
        if not waiting:
            break
        _, camera = min(waiting)
        batch.append((camera, pending[camera].frames.popleft()))
    return batch


def batch_is_ready(pending: Sequence[PendingFrames], ended: Sequence[bool], batch_size: int) -> bool:
    """Whether a detector takes a batch from `pending` now: a frame waits, and either a camera does not wait (its
    frames are live), the waiting frames fill the batch, or no camera can add one (each has ended or is full)."""
    waiting = sum(len(frames) for frames in pending)
    if not waiting:
        return False
    if any(frames.policy.mode != WAIT for frames in pending) or waiting >= batch_size:
        return True
    return all(done or not frames.has_room() for frames, done in zip(pending, ended))


class BoardClosed(Exception):
    """The board takes no more frames: the window has ended, or the run is stopping."""


class FrameBoard(Generic[Frame]):
    """Every camera's PendingFrames behind one lock: readers offer from their threads, detectors take from theirs."""

    def __init__(self, policies: Sequence[BusyPolicy]):
        self._pending = [PendingFrames(policy) for policy in policies]
        self._asked = [0] * len(policies)  # detectors waiting in take() for each camera's frames
        self._ended = [False] * len(policies)  # the camera's reader offers no more frames
        self._changed = threading.Condition()
        self._closed = False

    def wait_for_demand(self, camera: int, stop: threading.Event) -> None:
        """Returns once a waiting camera may decode its next frame: a detector asks for one and it has room. Other
        cameras' frames come at their own pace: no wait. BoardClosed once the board is closed or `stop` is set."""
        with self._changed:
            pending = self._pending[camera]
            if pending.policy.mode != WAIT:
                return
            while not (pending.has_room() and self._asked[camera]) and not self._closed and not stop.is_set():
                self._changed.wait(0.05)
            if self._closed or stop.is_set():
                raise BoardClosed()

    def ended(self, camera: int) -> None:
        """The camera offers no more frames: a batch of waiting cameras need not wait for it."""
        with self._changed:
            self._ended[camera] = True
            self._changed.notify_all()

    def offer(self, camera: int, frame: Frame, stop: threading.Event) -> Optional[Frame]:
        """The frame dropped for this one (or None); a waiting camera waits for room first, in short waits so
        `stop` ends it. BoardClosed, the frame not kept, once the board is closed or a stopped wait found no room."""
        with self._changed:
            pending = self._pending[camera]
            waits = pending.policy.mode == WAIT
            while waits and not pending.has_room() and not self._closed and not stop.is_set():
                self._changed.wait(0.05)
            if self._closed or (waits and not pending.has_room()):
                raise BoardClosed()
            dropped = pending.offer(frame)
            self._changed.notify_all()
            return dropped

    def take(self, cameras: Sequence[int], batch_size: int, timeout_s: float) -> Optional[list[tuple[int, Frame]]]:
        """A batch from `cameras` (take_batch), waiting up to `timeout_s` for one frame; empty after the wait,
        None once the board is closed and these cameras have nothing left."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                pending = [self._pending[camera] for camera in cameras]
                if self._closed or batch_is_ready(pending, [self._ended[camera] for camera in cameras], batch_size):
                    taken = take_batch(pending, batch_size)
                    if taken:
                        self._changed.notify_all()  # room for a waiting reader
                        return [(cameras[index], frame) for index, frame in taken]
                if self._closed:
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    return []
                self._ask(cameras, left)

    def _ask(self, cameras: Sequence[int], timeout_s: float) -> None:
        """Waits up to `timeout_s` for a change, counted meanwhile as asking these cameras for frames."""
        for camera in cameras:
            self._asked[camera] += 1
        self._changed.notify_all()
        try:
            self._changed.wait(timeout_s)
        finally:
            for camera in cameras:
                self._asked[camera] -= 1

    def close(self) -> None:
        """No frame is offered any more; what waits is still taken."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def clear(self) -> list[tuple[int, Frame]]:
        """Every frame still waiting, taken off the board (a stop: no detector will take them)."""
        with self._changed:
            left = [(camera, frame) for camera, pending in enumerate(self._pending) for frame in pending.frames]
            for pending in self._pending:
                pending.frames.clear()
            self._changed.notify_all()
            return left
