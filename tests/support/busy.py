"""Work measured in CPU time, not wall time: a shared machine stretches the one, not the other."""
import time


def busy(seconds):
    """Busy for `seconds` of this thread's own CPU time (the machine may be shared)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
