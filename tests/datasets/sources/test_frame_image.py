"""A decoded frame as the image every source yields (datasets/sources/frame_image.py): BGR turned upright by its
display matrix, its size once turned, its timestamp in seconds, and frames refused above dataset.max_pixels."""
from fractions import Fraction

import av
import numpy as np

from datasets.sources.frame_image import frame_seconds, packet_seconds, pixels_refusal, upright_bgr, upright_size


def test_a_frame_is_bgr_and_turned_as_players_turn_it(tmp_path):
    image = np.zeros((32, 48, 3), np.uint8)
    image[:8, :8] = (255, 255, 255)  # a white corner at the stored top-left
    plain = av.VideoFrame.from_ndarray(image, format="bgr24")
    assert np.array_equal(upright_bgr(plain), image)
    path = tmp_path / "portrait.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=15)
        stream.width, stream.height, stream.pix_fmt = 48, 32, "yuv420p"
        stream.set_display_rotation(90)
        for packet in [*stream.encode(plain), *stream.encode()]:
            container.mux(packet)
    with av.open(str(path)) as container:
        frame = next(container.decode(video=0))
    turned = upright_bgr(frame)
    # 90 degrees counter-clockwise: the stored top-left corner is now bottom-left
    assert turned.shape == (48, 32, 3) and turned.flags["C_CONTIGUOUS"]
    assert turned[-4:, :4].mean() > 200 and turned[:4, :4].mean() < 50


def test_sizes_once_turned():
    assert upright_size(640, 480, 0) == (640, 480) and upright_size(640, 480, 90) == (480, 640)
    assert upright_size(640, 480, -90) == (480, 640) and upright_size(640, 480, 180) == (640, 480)


def test_timestamps_in_seconds_from_the_frames_or_the_streams_time_base():
    frame = av.VideoFrame(16, 16, "rgb24")
    assert frame_seconds(frame, Fraction(1, 15)) is None  # no pts
    frame.pts = 30
    assert frame_seconds(frame, Fraction(1, 15)) == 2.0  # a flushed decoder's frame: the stream's time base
    assert frame_seconds(frame, None) is None
    frame.time_base = Fraction(1, 1000)
    assert frame_seconds(frame, Fraction(1, 15)) == 0.03
    packet = av.Packet(b"")
    assert packet_seconds(packet) is None
    packet.pts, packet.time_base = 45, Fraction(1, 15)
    assert packet_seconds(packet) == 3.0


def test_frames_above_max_pixels_are_refused_with_the_way_out():
    assert pixels_refusal(640, 480, None) is None and pixels_refusal(640, 480, 640 * 480) is None
    refusal = pixels_refusal(3840, 2160, 2_000_000)
    assert "3840x2160, 8,294,400 pixels, above dataset.max_pixels 2,000,000" in refusal
    assert "raise dataset.max_pixels, or set it to null" in refusal
