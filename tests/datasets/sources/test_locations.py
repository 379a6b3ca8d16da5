from pathlib import Path

from datasets.sources.locations import is_stream_url, is_video_file, shown_location


def test_a_urls_password_is_never_shown_and_its_user_is():
    assert shown_location("rtsp://admin:s3cret@10.0.0.5:554/stream1") == "rtsp://admin:***@10.0.0.5:554/stream1"
    assert shown_location("http://viewer@cam.local/mjpg") == "http://viewer@cam.local/mjpg"
    assert shown_location("rtsp://10.0.0.5/a@b") == "rtsp://10.0.0.5/a@b"  # an @ past the host is no credential
    assert shown_location(Path("clips/a:b@c.mp4")) == "clips/a:b@c.mp4"


def test_streams_by_scheme_and_videos_by_suffix():
    assert is_stream_url("RTSP://cam/1") and is_stream_url("https://host/live.m3u8")
    assert not is_stream_url("clips/a.mp4") and not is_stream_url("file:///x.mp4")
    assert is_video_file(Path("a.MKV")) and is_video_file(Path("x/b.webm")) and not is_video_file(Path("c.jpg"))
