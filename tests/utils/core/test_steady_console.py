"""stdout and stderr whose reader went away: writes are dropped, never raised (whole runs whose console closes
are in test_run_record_stops.py)."""
import io
import os
import sys

from utils.core.steady_console import SteadyStream, steady_console


def test_a_closed_pipe_drops_the_line_and_points_the_descriptor_at_dev_null():
    read_end, write_end = os.pipe()
    stream = SteadyStream(io.TextIOWrapper(io.FileIO(write_end, "w"), line_buffering=True))
    stream.write("seen\n")
    assert os.read(read_end, 100) == b"seen\n" and not stream.lost
    os.close(read_end)  # the reader went away: the next write meets EPIPE
    assert stream.write("lost line\n") == len("lost line\n")
    stream.flush()
    assert stream.lost
    assert os.readlink(f"/proc/self/fd/{write_end}") == os.devnull
    stream.stream.write("a write past the wrapper, as a logging handler's\n")
    stream.stream.flush()  # no error: the descriptor now leads to /dev/null
    stream.stream.close()


def test_a_stream_closed_under_it_is_a_lost_console_too():
    inner = io.StringIO()
    stream = SteadyStream(inner)
    inner.close()
    stream.write("after close\n")
    stream.flush()
    assert stream.lost


def test_the_console_is_wrapped_inside_and_put_back_after():
    before = sys.stdout, sys.stderr
    with steady_console():
        assert isinstance(sys.stdout, SteadyStream) and sys.stdout.stream is before[0]
        with steady_console():  # nested (the command line's main inside its own entry point): wrapped once
            assert sys.stdout.stream is before[0]
    assert (sys.stdout, sys.stderr) == before
