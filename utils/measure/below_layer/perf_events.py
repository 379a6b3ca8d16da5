"""A small ctypes binding of Linux's perf_event_open(2): counting (not sampling) counters of one thread.

Only what counting needs: open a counter for a thread on any CPU, enable, read (value, time enabled, time
running) and close. Where the kernel refuses a counter the errno is kept, so the run can say why
("not supported" on a VM without a virtual PMU, "not permitted" under perf_event_paranoid). The perf CLI is
not needed.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import struct
from dataclasses import dataclass
from typing import Optional

# perf_event_open's syscall number per machine (asm/unistd.h).
SYSCALL_NUMBERS = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331, "riscv64": 241}

TYPE_HARDWARE, TYPE_SOFTWARE, TYPE_HW_CACHE = 0, 1, 3
# (type, config) of each counting event, under the perf CLI's names.
EVENTS = {
    "cycles": (TYPE_HARDWARE, 0),
    "instructions": (TYPE_HARDWARE, 1),
    "llc_misses": (TYPE_HARDWARE, 3),  # PERF_COUNT_HW_CACHE_MISSES: usually the last-level cache
    "task_clock_ns": (TYPE_SOFTWARE, 1),
    "context_switches": (TYPE_SOFTWARE, 3),
    "cpu_migrations": (TYPE_SOFTWARE, 4),
    "minor_faults": (TYPE_SOFTWARE, 5),
    "major_faults": (TYPE_SOFTWARE, 6),
}
# What detbench's CPU counters open. Not the page faults: the kernel counts each thread's faults in /proc for
# nothing, while an open fault counter adds to every fault the thread takes (measured by
# benchmarks/overhead/fault_counter_tax.py), and yolov7 at 640 faults tens of thousands of times a forward.
COUNTERS = tuple(name for name in EVENTS if name not in ("minor_faults", "major_faults"))
HARDWARE_COUNTERS = ("cycles", "instructions", "llc_misses")

FORMAT_TOTAL_TIME_ENABLED, FORMAT_TOTAL_TIME_RUNNING = 1, 2
FLAG_DISABLED, FLAG_EXCLUDE_KERNEL, FLAG_EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6
IOC_ENABLE, IOC_DISABLE = 0x2400, 0x2401
ATTR_SIZE = 112  # PERF_ATTR_SIZE_VER5; the kernel accepts any size it knows


class PerfAttr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
                ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64),
                ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64), ("config2", ctypes.c_uint64),
                ("branch_sample_type", ctypes.c_uint64), ("sample_regs_user", ctypes.c_uint64),
                ("sample_stack_user", ctypes.c_uint32), ("clockid", ctypes.c_int32),
                ("sample_regs_intr", ctypes.c_uint64), ("aux_watermark", ctypes.c_uint32),
                ("sample_max_stack", ctypes.c_uint16), ("reserved", ctypes.c_uint16)]


assert ctypes.sizeof(PerfAttr) == ATTR_SIZE


class PerfRefused(OSError):
    """The kernel refused a counter; str() says why in words."""


def errno_meaning(number: int) -> str:
    """What a refusal's errno means for perf_event_open (its man page's reasons), with the errno's name."""
    reasons = {
        errno.ENOENT: "not supported by this CPU or its virtual machine (the event does not exist here)",
        errno.EOPNOTSUPP: "not supported (no hardware performance-monitoring unit available, as on many VMs)",
        errno.ENODEV: "not supported by this CPU",
        errno.EACCES: "not permitted (perf_event_paranoid forbids it; lower /proc/sys/kernel/perf_event_paranoid "
                      "or grant CAP_PERFMON)",
        errno.EPERM: "not permitted (perf_event_paranoid, a seccomp filter or a container forbids it)",
        errno.ENOSYS: "the kernel has no perf_event_open (built without CONFIG_PERF_EVENTS)",
        errno.EINVAL: "the kernel rejected the counter's settings",
        errno.EMFILE: "too many open files",
        errno.ESRCH: "the thread ended",
    }
    name = errno.errorcode.get(number, str(number))
    return f"{reasons.get(number, os.strerror(number))} [{name}]"


_libc: Optional[ctypes.CDLL] = None


def _syscall():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc.syscall


def open_counter(name: str, tid: int, exclude_kernel: bool = False) -> int:
    """A disabled counter of `name` (an EVENTS key) for thread `tid` on any CPU; its file descriptor."""
    number = SYSCALL_NUMBERS.get(platform.machine())
    if number is None:
        raise PerfRefused(errno.ENOSYS, f"perf_event_open's syscall number is not known for {platform.machine()}")
    kind, config = EVENTS[name]
    attr = PerfAttr(type=kind, size=ATTR_SIZE, config=config,
                    read_format=FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING,
                    flags=FLAG_DISABLED | ((FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV) if exclude_kernel else 0))
    syscall = _syscall()
    syscall.restype = ctypes.c_long
    fd = syscall(ctypes.c_long(number), ctypes.byref(attr), ctypes.c_int(tid), ctypes.c_int(-1), ctypes.c_int(-1),
                 ctypes.c_ulong(0))
    if fd < 0:
        code = ctypes.get_errno()
        raise PerfRefused(code, errno_meaning(code))
    return fd


def enable(fd: int) -> None:
    fcntl.ioctl(fd, IOC_ENABLE, 0)


@dataclass(frozen=True)
class Reading:
    value: int
    enabled_ns: int
    running_ns: int

    def scaled(self) -> float:
        return scaled(self.value, self.enabled_ns, self.running_ns)


def scaled(value: int, enabled_ns: int, running_ns: int) -> float:
    """The count scaled for multiplexing (the counter ran `running` of `enabled` nanoseconds)."""
    return value * enabled_ns / running_ns if running_ns else float(value)


_READ_FORMAT = struct.Struct("QQQ")  # value, time enabled, time running


def read_counter(fd: int) -> Reading:
    return Reading(*_READ_FORMAT.unpack(os.read(fd, _READ_FORMAT.size)))


def read_scaled(fd: int) -> float:
    """read_counter(fd).scaled() without the Reading: a recorder reads this inside timed batches."""
    return scaled(*_READ_FORMAT.unpack(os.read(fd, _READ_FORMAT.size)))


def probe(name: str) -> Optional[str]:
    """None when this thread can count `name`, else the refusal in words."""
    try:
        fd = open_counter(name, 0)
    except PerfRefused as refused:
        return str(refused.strerror)
    os.close(fd)
    return None
