"""A process that pins a runtime's threads and keeps running forwards, for tests/pipelines/runtimes/test_pinning.py to read
its threads from /proc/<pid>/task/*/status: prints the runtime's settings as one JSON line, then runs forwards
of yolov7-tiny at 256 until its stdin closes.

    python tests/support/pinning_child.py BACKEND THREADS CACHE_DIR
"""
import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from pipelines.runtimes.registry import build_runtime  # noqa: E402
from pipelines.yolo import family as yolo  # noqa: E402
from tests.support.forward_inputs import as_taken  # noqa: E402

if __name__ == "__main__":
    backend, threads, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    options = {} if backend == "torch" else {"cache_dir": cache}
    runtime = build_runtime(backend, threads=threads, pinning=True, **options)
    example = torch.rand(1, 3, 256, 256)
    forward = runtime.prepare(yolo.load_network("yolov7-tiny", None, 0), example)
    batch = as_taken(forward, example)
    forward(batch)
    print(json.dumps(runtime.settings(), default=str), flush=True)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    while not stop.is_set():
        forward(batch)
