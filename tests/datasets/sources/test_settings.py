import pytest

from datasets.sources.settings import DecodeSettings, FrameSelection, StreamSettings


@pytest.mark.parametrize("make, words", [
    (lambda: FrameSelection(stride=0), "stride must be a whole number"),
    (lambda: FrameSelection(stride=True), "stride must be a whole number"),
    (lambda: FrameSelection(fps=0.0), "fps must be a number above 0"),
    (lambda: FrameSelection(fps=float("nan")), "fps must be a number above 0"),
    (lambda: FrameSelection(stride=2, fps=5.0), "not both"),
    (lambda: DecodeSettings(threads=-1), "threads must be a whole number of at least 0"),
    (lambda: StreamSettings(connect_timeout_s=0), "connect_timeout_s must be a number of seconds above 0"),
    (lambda: StreamSettings(read_timeout_s=float("inf")), "read_timeout_s must be"),
    (lambda: StreamSettings(reconnects=-1), "reconnects must be a whole number"),
    (lambda: StreamSettings(reconnect_delay_s=-1.0), "reconnect_delay_s must be"),
    (lambda: StreamSettings(rtsp_transport="http"), "rtsp_transport must be one of tcp, udp"),
])
def test_values_no_source_could_use_are_refused_by_name(make, words):
    with pytest.raises(ValueError, match=words):
        make()


def test_defaults_one_decoder_thread_every_frame_bounded_streams():
    decode, stream = DecodeSettings(), StreamSettings()
    assert (decode.threads, decode.selection, decode.max_pixels) == (1, FrameSelection(1, None), None)
    assert (stream.connect_timeout_s, stream.read_timeout_s, stream.reconnects, stream.rtsp_transport) == \
        (10.0, 5.0, 3, "tcp")
