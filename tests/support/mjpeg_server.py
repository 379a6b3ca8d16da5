"""A camera on loopback for the tests: an HTTP server sending a moving-shapes scene as MJPEG
(multipart/x-mixed-replace, as IP cameras and ESP32 boards do) at its frame rate, to every client.

Run as a process (`python -m tests.support.mjpeg_server --fps 15`): it prints `PORT <n>` once it listens, and
a test kills it to make the stream die. `--frames N` ends each response after N frames (the server closes the
connection); `--stall-after N` stops sending after N frames but keeps the connection open (a stalled camera).
"""
from __future__ import annotations

import argparse
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cv2

from tests.support.clips import moving_shapes

BOUNDARY = "detbenchframe"


def _jpegs(width: int, height: int, frames: int) -> list[bytes]:
    scene = moving_shapes(width, height, frames, photo=None)
    return [cv2.imencode(".jpg", scene.image(index), [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
            for index in range(frames)]


def serve(port: int, fps: float, width: int, height: int, frames: int, stall_after: int) -> None:
    pictures = _jpegs(width, height, 30)

    class Camera(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Type", f"multipart/x-mixed-replace; boundary={BOUNDARY}")
            self.end_headers()
            sent, start = 0, time.monotonic()
            try:
                while frames == 0 or sent < frames:
                    if stall_after and sent >= stall_after:
                        time.sleep(3600)
                    picture = pictures[sent % len(pictures)]
                    self.wfile.write(f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(picture)}"
                                     "\r\n\r\n".encode() + picture + b"\r\n")
                    self.wfile.flush()
                    sent += 1
                    time.sleep(max(0.0, start + sent / fps - time.monotonic()))
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Camera)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fps", type=float, default=15.0)
    parser.add_argument("--width", type=int, default=160)
    parser.add_argument("--height", type=int, default=120)
    parser.add_argument("--frames", type=int, default=0)
    parser.add_argument("--stall-after", type=int, default=0)
    args = parser.parse_args()
    serve(args.port, args.fps, args.width, args.height, args.frames, args.stall_after)


if __name__ == "__main__":
    sys.exit(main())
