"""A camera's reader on a real clip: a file in real time loops with its frames numbered on and its timestamps
carried on, its decode CPU counted, and the frames a busy detector's rule let go handed to their sink."""
import threading
import time

from datasets.sources.counts import SourceCounts
from tests.support.clips import moving_shapes, write_clip
from utils.config.schema import config_for
from utils.scenarios.cameras.board import QUEUE, BusyPolicy, FrameBoard
from utils.scenarios.cameras.reader import CameraReader, FrameSinks, Window, added
from utils.scenarios.cameras.settings import camera_settings
from utils.scenarios.cameras.sources import build_cameras


def _reader(path, board_policy=None, **cameras):
    config = config_for("yolov7-tiny", benchmark={"scenario": "cameras"},
                        cameras={"sources": [str(path)], **cameras})
    settings = camera_settings(config.cameras, config.dataset, config.benchmark)
    camera, = build_cameras(settings)
    board = FrameBoard([board_policy or settings.policy(camera.arrives)])
    ended = {"dropped": [], "not_decoded": [], "unfinished": []}
    sinks = FrameSinks(lambda frame, at: ended["dropped"].append(frame), ended["not_decoded"].append,
                       ended["unfinished"].append)
    return CameraReader(camera, board, Window(start_s=0.0), sinks), board, ended


def test_a_file_in_real_time_loops_with_its_frames_numbered_on(tmp_path):
    path = write_clip(tmp_path / "short.mp4", moving_shapes(96, 64, 5, photo=None), fps=50)
    reader, board, ended = _reader(path, BusyPolicy(QUEUE, 64))
    reader.go.set()
    thread = threading.Thread(target=reader.run, daemon=True)
    started = time.monotonic()
    thread.start()
    taken = []
    while len(taken) < 12 and time.monotonic() - started < 10:
        taken += [frame for _, frame in board.take([0], 64, 0.05) or []]
    reader.stop()
    assert reader.ended.wait(5)
    reader.released.set()
    thread.join(5)
    frames = [frame.item.frame for frame in taken[:12]]
    assert frames == list(range(12))
    assert [round(frame.item.pts_s, 3) for frame in taken[:11:5]] == [0.0, 0.1, 0.2]  # 5 frames of 20 ms a loop
    assert all(frame.item.path == "cam0/short.mp4" and frame.record.measured for frame in taken)
    arrivals = [frame.arrival_s for frame in taken[:12]]
    assert arrivals[-1] - arrivals[0] >= 0.15  # paced: 11 frames of 20 ms, not read at once
    counts = reader.counts()
    assert counts.decoded >= 12 and counts.arrived >= 12 and reader.decode_cpu_s() > 0
    assert ended == {"dropped": [], "not_decoded": [], "unfinished": []}


def test_counts_of_plays_one_after_another_add_up():
    first = SourceCounts(arrived=5, decoded=5, delivered=5, connections=1, ended="end of file")
    second = SourceCounts(arrived=2, decoded=1, delivered=1, corrupt_packets=1, ended="stopped")
    total = added([first, second])
    assert (total.arrived, total.decoded, total.delivered, total.corrupt_packets, total.connections) == (7, 6, 6, 1, 1)
    assert total.ended == "stopped" and added([]) == SourceCounts()
