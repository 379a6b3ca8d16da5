"""Live cameras on loopback, started and stopped by the test that uses them: the tests' own MJPEG-over-HTTP
server (tests/support/mjpeg_server.py, a process a test may kill mid-stream) and a real RTSP server, Debian's
rtsp-server-perl relaying what Debian's ffmpeg pushes to it (.ci/run installs both; without them the RTSP tests
skip and say why), and a plain HTTP server of a folder for HLS playlists. Every process is killed and reaped, every
server shut down, when its block ends."""
from __future__ import annotations

import contextlib
import functools
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.paths import ROOT

START_TIMEOUT_S = 10.0


@dataclass
class Camera:
    url: str
    process: subprocess.Popen

    def kill(self) -> None:
        """The server dies at once (SIGKILL), as a camera that loses power."""
        self.process.kill()
        self.process.wait(timeout=START_TIMEOUT_S)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=START_TIMEOUT_S)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def mjpeg_camera(*args: str) -> Iterator[Camera]:
    """tests/support/mjpeg_server.py with `args` (--fps, --frames, --stall-after, --width, --height)."""
    process = subprocess.Popen([sys.executable, "-m", "tests.support.mjpeg_server", *args], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT_S)
        line = process.stdout.readline().decode() if ready else ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"the MJPEG server did not start within {START_TIMEOUT_S} s: {line!r}")
        yield Camera(f"http://127.0.0.1:{int(line.split()[1])}/", process)
    finally:
        _stop(process)


def _listening(port: int, deadline: float) -> bool:
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


def _described(url: str, port: int, deadline: float) -> bool:
    """Whether the relay answers a DESCRIBE of `url` with 200 before `deadline`: it answers 404 until the push's
    ANNOUNCE is in, which a loaded machine delays past any fixed wait (a client then fails at once)."""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0) as connection:
                connection.sendall(f"DESCRIBE {url} RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n\r\n".encode())
                if connection.recv(64).startswith(b"RTSP/1.0 200"):
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


@contextlib.contextmanager
def rtsp_camera(clip: Path, name: str = "cam") -> Iterator[Camera]:
    """`clip` pushed in a loop at its own rate by ffmpeg to rtsp-server-perl, which serves it to clients (over
    UDP: this relay offers no TCP transport). Camera.process is the relay: killing it kills the stream."""
    missing = [tool for tool in ("ffmpeg", "rtsp-server-perl") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"no RTSP server here: {' and '.join(missing)} missing (apt-get install ffmpeg rtsp-server-perl)")
    client_port, source_port = free_port(), free_port()
    relay = subprocess.Popen(["rtsp-server-perl", "--clientport", str(client_port), "--serverport", str(source_port),
                              "--rtp_start_port", str(20000 + client_port % 20000), "--loglevel", "0"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pusher = None
    try:
        if not _listening(source_port, time.monotonic() + START_TIMEOUT_S):
            raise RuntimeError(f"rtsp-server-perl did not listen on port {source_port} within {START_TIMEOUT_S} s")
        pusher = subprocess.Popen(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-re", "-stream_loop",
                                   "-1", "-i", str(clip), "-c", "copy", "-f", "rtsp",
                                   f"rtsp://127.0.0.1:{source_port}/{name}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"rtsp://127.0.0.1:{client_port}/{name}"
        if not _described(url, client_port, time.monotonic() + START_TIMEOUT_S):
            pushed = pusher.poll()
            state = "still going" if pushed is None else f"ended with {pushed}"
            raise RuntimeError(f"rtsp-server-perl did not serve {url} within {START_TIMEOUT_S} s "
                               f"(ffmpeg's push {state})")
        yield Camera(url, relay)
    finally:
        if pusher is not None:
            _stop(pusher)
        _stop(relay)


class _QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass


@contextlib.contextmanager
def http_folder(folder: Path) -> Iterator[str]:
    """`folder` served over HTTP on loopback from a thread of the test (an HLS playlist and its segments): the
    base URL, ending in /."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietFiles, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=START_TIMEOUT_S)
