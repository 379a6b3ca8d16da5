"""FFmpeg's failures as reasons a person can act on (datasets/sources/failures.py): a timeout, however FFmpeg words
it, a refused or reset connection, and anything else in FFmpeg's own words without PyAV's location."""
import av

from datasets.sources.failures import ffmpeg_words, stream_failure


def test_a_read_the_timeout_ended_is_the_timeout_however_ffmpeg_words_it():
    interrupted = av.error.ExitError(1414092869, "Immediate exit requested")
    assert stream_failure(interrupted, 0.2, 5.0, "for data") == "no answer for data within 5 s"
    invalid = av.error.InvalidDataError(1094995529, "Invalid data found when processing input")
    assert stream_failure(invalid, 4.6, 5.0, "to connect") == "no answer to connect within 5 s"  # 90% of it
    assert stream_failure(invalid, 1.0, 5.0, "to connect") == "FFmpeg: Invalid data found when processing input"


def test_refused_and_reset_connections_say_what_happened():
    refused = av.error.ConnectionRefusedError(111, "Connection refused")
    assert "nothing listens at that host and port" in stream_failure(refused, 0.01, 5.0, "to connect")
    reset = av.error.ConnectionResetError(104, "Connection reset by peer")
    assert stream_failure(reset, 0.01, 5.0, "for data") == "the server reset the connection"


def test_ffmpegs_own_words_are_kept_short_and_without_the_location():
    error = av.error.HTTPNotFoundError(-875574520, "Server returned 404 Not Found", "http://camera/stream")
    assert ffmpeg_words(error) == "Server returned 404 Not Found"
    assert ffmpeg_words(ValueError("x" * 500)) == "x" * 200
