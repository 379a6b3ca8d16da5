"""Page faults per image and the kernel time beside them: what the allocator costs the timed passes.

A detector's activations at 640 are tens of megabytes each. glibc's malloc serves blocks that large with fresh
mmaps, unmapped again on free, and hands free memory at the top of its heap back to the kernel; every forward
then touches those pages anew, and each one faults and is zeroed (microseconds a fault, measured by
benchmarks/overhead/fault_counter_tax.py; docs/measurement.md says what faults do to yolov7's forward). How often it happens
depends on the process's allocation history, so it differs between runs of the same configuration. With the
heap kept (GLIBC_TUNABLES below, or jemalloc or tcmalloc preloaded) the same forward faults almost never.

Pure functions over the `cpu_counters` passes (their images, minor faults, CPU and system milliseconds) and a
description of the allocator that the harness reads from the environment.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

# Below either, faults cost too little to be worth a line: 1,000 faults at microseconds each are a few
# milliseconds an image (benchmarks/overhead/fault_counter_tax.py measures a fault). The kernel's time is set against the
# wall time an image took, not the CPU time: while one compute thread faults, the rest of its team spins at the
# next barrier, in user time. KERNEL_SHARE lies between the kernel's share in a yolov7 run at glibc's defaults
# and in the same run with runtime.allocator: keep_heap, which measures what the faults cost (figures:
# benchmarks/RESULTS.md).
FAULTS_PER_IMAGE = 1000
KERNEL_SHARE = 0.05
KEEP_HEAP_TUNABLES = "GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"
KEPT_BY_SETTING = "glibc with its heap kept (runtime.allocator: keep_heap)"
PRELOADED_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")


@dataclass(frozen=True)
class Allocator:
    name: str
    default_glibc: bool  # glibc's malloc with its default settings: the one the advice is for


def preloaded_allocator(environ: Mapping[str, str], maps: Optional[str] = None) -> Optional[str]:
    """The allocator LD_PRELOAD names (jemalloc, tcmalloc, mimalloc), or None. Given the process's
    /proc/self/maps, only one the loader actually mapped counts: ld.so skips a preload it cannot open."""
    for entry in environ.get("LD_PRELOAD", "").replace(":", " ").split():
        library = entry.rsplit("/", 1)[-1]
        for name in PRELOADED_ALLOCATORS:
            if name in library and (maps is None or f"/{library}" in maps):
                return name
    return None


def allocator_of(environ: Mapping[str, str], libc: str, keep_heap: bool = False,
                 maps: Optional[str] = None) -> Allocator:
    """Which malloc the process runs with: a preloaded one, glibc's (tuned or not), or the C library's.
    `keep_heap`: runtime.allocator keep_heap was applied, which overrides glibc's environment settings.
    `maps`: /proc/self/maps, to tell a preload that loaded from one that did not."""
    preloaded = preloaded_allocator(environ, maps)
    if preloaded is not None:
        return Allocator(f"{preloaded} (LD_PRELOAD)", False)
    if libc != "glibc":
        return Allocator(f"{libc or 'the C library'}'s malloc", False)
    if keep_heap:
        return Allocator(KEPT_BY_SETTING, False)
    tunables = [part for part in environ.get("GLIBC_TUNABLES", "").split(":") if part.startswith("glibc.malloc.")]
    if tunables:
        return Allocator(f"glibc with GLIBC_TUNABLES={':'.join(tunables)}", False)
    # glibc's older spelling of the same settings, still honoured: MALLOC_TRIM_THRESHOLD_ and its kin.
    legacy = sorted(name for name in environ if name.startswith("MALLOC_") and name.endswith("_"))
    if legacy:
        return Allocator(f"glibc with {', '.join(f'{name}={environ[name]}' for name in legacy)}", False)
    return Allocator("glibc's defaults", True)


def page_fault_summary(passes: Sequence[Mapping[str, Any]], allocator: Allocator) -> Optional[dict[str, Any]]:
    """summary.json `cpu_counters.page_faults`, or None when the passes hold no images or no fault counts."""
    counted = [p for p in passes if p.get("images") and p.get("minor_faults") is not None]
    if not counted:
        return None
    images = sum(p["images"] for p in counted)
    faults = sum(p["minor_faults"] for p in counted)
    timed = [p for p in counted if p.get("system_ms") is not None and p.get("cpu_ms") and p.get("wall_ms")]
    system_ms, cpu_ms = sum(p["system_ms"] for p in timed), sum(p["cpu_ms"] for p in timed)
    wall_ms, timed_images = sum(p["wall_ms"] for p in timed), sum(p["images"] for p in timed)
    against_wall = system_ms / wall_ms if timed else None
    heavy = faults / images >= FAULTS_PER_IMAGE and against_wall is not None and against_wall >= KERNEL_SHARE
    return {
        "minor_faults_per_image": faults / images,
        "per_pass_faults_per_image": [p["minor_faults"] / p["images"] for p in counted],
        "kernel_ms_per_image": system_ms / timed_images if timed else None,
        "wall_ms_per_image": wall_ms / timed_images if timed else None,
        "kernel_against_wall": against_wall,
        "kernel_share_of_cpu": system_ms / cpu_ms if timed else None,
        "allocator": allocator.name,
        "heavy": heavy,
        "advice": _advice(allocator) if heavy else None,
    }


def _advice(allocator: Allocator) -> str:
    if allocator.default_glibc:
        return (f"glibc hands freed memory back to the kernel between forwards, and the kernel maps, faults in and "
                f"zeroes it again each time; to keep it, --set runtime.allocator=keep_heap here (sweep it to see "
                f"what it saves) and {KEEP_HEAP_TUNABLES} in the deployment (or preload jemalloc or tcmalloc); by "
                f"default detbench leaves the allocator as the deployment has it")
    return (f"{allocator.name} still returns memory to the kernel between forwards; its settings, not the "
            f"model, hold this time")


def page_fault_line(summary: Mapping[str, Any]) -> Optional[str]:
    """The console's and report's sentence when faults cost the run; None when they do not."""
    if not summary.get("heavy"):
        return None
    per_pass = summary["per_pass_faults_per_image"]
    spread = (f" ({min(per_pass):,.0f}-{max(per_pass):,.0f} over the passes: the same forward faults more or less "
              f"with the process's heap history)" if len(per_pass) > 1 and max(per_pass) > 1.5 * min(per_pass)
              else "")
    return (f"page faults: {summary['minor_faults_per_image']:,.0f} minor faults per image{spread}, and "
            f"{summary['kernel_ms_per_image']:.1f} ms of kernel time per image, {summary['kernel_against_wall']:.0%} "
            f"of the {summary['wall_ms_per_image']:.0f} ms an image took: {summary['advice']} "
            f"(docs/below-the-layer.md)")
