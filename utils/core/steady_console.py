"""stdout and stderr that a console going away cannot break.

A run whose reader went away (a closed pipe: `| head`, an orchestrator that died) or whose terminal closed (an
ssh session dropped) gets EPIPE or EIO on its next print, log line or progress bar. That is not an error of the
run: the line is dropped, the stream's file descriptor is pointed at /dev/null so that nothing later (a buffer
flushed at exit, a logging handler holding the stream, a child process) meets the error again, and the run
goes on or stops as asked.

Standard library only: the command line installs it before it parses its arguments.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import IO, Iterator


class SteadyStream:
    """A text stream whose writes and flushes never raise for a lost console; anything else is the stream's."""

    def __init__(self, stream: IO[str]):
        self.stream = stream
        self.lost = False

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except (OSError, ValueError):  # ValueError: the stream was closed under us
            self._lose()
            return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            self._lose()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)

    def _lose(self) -> None:
        self.lost = True
        try:
            descriptor = self.stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
        except (OSError, ValueError, AttributeError):  # no descriptor of its own (an in-memory stream)
            return
        try:
            os.dup2(null, descriptor)
        finally:
            os.close(null)
        try:
            self.stream.flush()  # what the buffer still held goes to /dev/null, not to the next flush's error
        except (OSError, ValueError):
            pass


@contextmanager
def steady_console() -> Iterator[None]:
    """sys.stdout and sys.stderr as SteadyStreams inside; flushed on leaving, then put back."""
    previous = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (stream if isinstance(stream, SteadyStream) or stream is None else SteadyStream(stream)
                              for stream in previous)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        sys.stdout, sys.stderr = previous
