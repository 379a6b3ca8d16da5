"""detbench's threads carry their names into the kernel, where /proc, perf and cpu_counters.csv read them."""
import threading
from pathlib import Path

from utils.core.native_thread import NAME_BYTES, name_this_thread
from utils.measure.memory.recorder import SAMPLER_NAME, MemorySampler


def _kernel_name(tid: int) -> str:
    return Path(f"/proc/self/task/{tid}/comm").read_text().strip()


def test_a_thread_named_reads_back_from_proc_cut_to_the_kernels_length():
    seen = {}

    def run(name):
        seen[name] = (name_this_thread(name), threading.get_native_id())
        seen[name] += (_kernel_name(seen[name][1]),)

    for name in ("loadgen-sut-0", "a-name-longer-than-fifteen-bytes"):
        thread = threading.Thread(target=run, args=(name,))
        thread.start()
        thread.join()
    assert seen["loadgen-sut-0"][0] and seen["loadgen-sut-0"][2] == "loadgen-sut-0"
    assert seen["a-name-longer-than-fifteen-bytes"][2] == "a-name-longer-than-fifteen-bytes"[:NAME_BYTES]
    assert _kernel_name(threading.get_native_id()) != "loadgen-sut-0"  # the caller's own name is untouched


def test_the_memory_samplers_thread_is_named_in_the_kernel():
    with MemorySampler(interval_s=0.01) as sampler:
        tid = sampler._thread.native_id
        for _ in range(200):  # the thread names itself as it starts
            if _kernel_name(tid) == SAMPLER_NAME:
                break
            threading.Event().wait(0.005)
        assert _kernel_name(tid) == SAMPLER_NAME


def test_naming_a_thread_starts_no_process(monkeypatch):
    """A subprocess started from a sampler's thread hung runs whose DataLoader forked meanwhile."""
    import subprocess

    import utils.core.native_thread as native_thread

    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(native_thread, "_libc", None)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    assert name_this_thread("no-subprocess")
