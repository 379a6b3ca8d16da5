"""Below the layer: the harness's side of profiling.* (the sampler, the CPU counters, the kernels batch and the
ITT tasks). It starts and stops each from outside the pipeline and turns what they recorded into the run
record's plain data (utils.measure.below_layer.record). Every part that fails is reported, never raised."""
from __future__ import annotations

import os
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from pipelines.runtimes.registry import SPECS
from pipelines.runtimes.spec import quantizes
from utils.measure.below_layer import counter_rows as counter_math
from utils.measure.below_layer import kernels as kernel_math
from utils.measure.below_layer import native_time
from utils.measure.below_layer import page_faults
from utils.measure.below_layer import sampled_stacks
from utils.measure.below_layer.record import BelowLayer, SamplerResult
from utils.record.layers import KIND_LAYER
from utils.record.run_record import RunRecord, Table
from utils.record.steps import PIPELINE_STEP, PassKind
from utils.measure.below_layer.cpu_counters import CpuCounters
from utils.measure.below_layer.itt_tasks import IttTasks, itt_status
from utils.measure.below_layer.sampler import MARK_FUNCTION, PySpySampler
from utils.measure.steps.step_timer import StepTimer
from utils.record.sections import MEASURED, UNAVAILABLE, KernelsSection, NativeTimeSection


class BelowTheLayer:
    LISTENS_IN = frozenset({PassKind.TIMED})  # the passes its sampler, counters and ITT tasks cover

    def __init__(self, settings: Any, model: Any, console: Callable[[str], None] = print,
                 search_path: Optional[str] = None, counters_around: str = PIPELINE_STEP, *,
                 allocator: page_faults.Allocator):
        """`counters_around`: the step the CPU counters bracket (RUN_STEP under LoadGen: a whole test).
        `allocator`: the malloc the run has (utils.preflight.heap_setting.apply_allocator)."""
        self.settings = settings
        self.allocator = allocator
        self.console = console
        self.data = BelowLayer(time.time_ns() - time.perf_counter_ns())
        self._scratch = tempfile.TemporaryDirectory(prefix="detbench-below-")
        self.sampler = (PySpySampler(settings.rate, Path(self._scratch.name), search_path=search_path)
                        if settings.sampler == "py-spy" else None)
        self._sampler_started = False
        self.counters = CpuCounters(around=counters_around) if settings.counters else None
        self.itt = IttTasks(model) if settings.itt else None
        if self.itt is not None:
            self.data.itt = dict(itt_status(), emitted="steps and layers of the timed passes")

    @contextmanager
    def timed_pass(self, timer: StepTimer) -> Iterator[None]:
        """Around each timed pass: the sampler starts before the first, counters and ITT tasks listen."""
        if self.sampler is not None and not self._sampler_started:
            self._sampler_started = True
            self.console(f"Sampling the timed passes with py-spy at {self.settings.rate} Hz (native frames)...")
            failed = self.sampler.start()
            if failed is not None:
                self.console(f"WARNING: sampler unavailable: {failed.reason}")
        listeners = [listener for listener in (self.counters, self.itt) if listener is not None]
        with ExitStack() as stack:
            if self.itt is not None:
                stack.enter_context(self.itt)
            timer.listeners.extend(listeners)
            stack.callback(lambda: [timer.listeners.remove(listener) for listener in listeners])
            yield

    def stop(self) -> None:
        """After the passes, also when they were cut short: py-spy writes its samples as it stops."""
        if self.sampler is not None and self._sampler_started:
            self.sampler.stop()
        if self.counters is not None:
            self.counters.close()

    def kernels_batch(self, run_batch: Callable[[], Any], model: Any, runtime: Any) -> None:
        """torch: one extra batch, not timed, with oneDNN's verbose output captured; other runtimes say what
        they can."""
        flags = kernel_math.cpu_flags(_read("/proc/cpuinfo"))
        settings = runtime.settings()
        backend = settings.get("backend", runtime.name)
        document: KernelsSection = {"backend": backend, "precision": settings.get("precision"),
                                    "cpu_flags": kernel_math.deciding_flags(flags)}
        source = SPECS[backend].kernels
        if source.onednn_verbose and model is not None:
            from utils.measure.below_layer.onednn_verbose import capture_onednn_verbose
            try:
                text = capture_onednn_verbose(run_batch, model, Path(self._scratch.name) / "onednn_verbose.txt")
            except OSError as error:
                document.update(status=UNAVAILABLE, reason=f"capturing oneDNN's output failed ({error})")
            else:
                lines = text.splitlines()
                by_layer = kernel_math.convolution_kernels(lines)
                self.data.verbose_text = text
                self.data.kernel_by_path = kernel_math.kernel_by_path(by_layer)
                document.update(status=source.status, source=source.source, onednn=kernel_math.onednn_info(lines),
                                convolution_kernels=kernel_math.kernel_counts(by_layer),
                                convolution_layers=len(by_layer))
        elif source.onednn_verbose or source.status == UNAVAILABLE:
            document.update(status=UNAVAILABLE, reason=source.reason)
        else:
            document.update(status=source.status, source=source.source)
        self.data.kernels = document

    def runtime_kernels(self, record: RunRecord) -> None:
        """OpenVINO's layer rows already name their kernels; int8 runs say which instructions ran."""
        kernels = self.data.kernels
        if kernels is None:
            return
        spec = SPECS.get(kernels["backend"])
        if spec is not None and spec.kernels.from_layers and record.layer_timing is not None:
            self.data.kernel_by_path = {r.path: r.name for r in record.layer_timing.records if r.kind == KIND_LAYER}
        names = list(self.data.kernel_by_path.values())
        if quantizes(kernels.get("precision", "")):
            flags = kernel_math.cpu_flags(_read("/proc/cpuinfo"))
            kernels["int8"] = kernel_math.int8_instructions(
                [part for name in names for part in name.split("+")], flags, kernels["backend"])

    def collect(self, record: RunRecord) -> None:
        """Turns what the recorders hold into the record's plain data."""
        data = self.data
        if self.sampler is not None:
            result = self.sampler.result or SamplerResult(
                "unavailable", "no timed pass of detbench's own ran, so nothing was sampled (a benchmark.scenario "
                "other than single_stream runs under LoadGen, which the sampler does not cover)",
                rate=self.settings.rate)
            self._collect_samples(record, result)
        if self.counters is not None:
            around = self.counters.around
            rows = counter_math.counter_rows(self.counters.batches, record.steps, self.counters.names,
                                             1000 / os.sysconf("SC_CLK_TCK"), around)
            data.counter_batches = list(self.counters.batches)
            data.counter_table = Table(rows, counter_math.COUNTER_COLUMNS)
            data.cpu_counters = counter_math.counters_summary(rows, self.counters.counting, self.counters.refused,
                                                              self.counters.exclude_kernel, around)
            faults = page_faults.page_fault_summary(data.cpu_counters["passes"], self.allocator)
            if faults is not None:
                data.cpu_counters["page_faults"] = faults
        if self.itt is not None:
            data.itt["tasks"] = self.itt.tasks
            data.itt["balanced"] = self.itt.depth == 0
        record.below = data
        self._scratch.cleanup()

    def _collect_samples(self, record: RunRecord, result: SamplerResult) -> None:
        data = self.data
        document: NativeTimeSection = {"status": result.status, "sampler": "py-spy", "rate_hz": result.rate,
                                    "command": " ".join(result.command) or None}
        if result.status != MEASURED:
            document["reason"] = result.reason
            data.native_time = document
            record.warn(f"native time: the sampler is missing from this run: {result.reason}")
            return
        segments = native_time.thread_segments(result.events)
        jit = native_time.jit_ranges(_read("/proc/self/maps"))
        main = native_time.with_jit_frames(segments.get(result.main_thread, []), jit,
                                           record.identity.runtime.get("backend", ""))
        offset = native_time.clock_offset_us(main, result.marks_ns, MARK_FUNCTION, result.rate)
        document.update(samples=result.samples, errors=result.errors, behind_s=result.behind_s,
                        gil=native_time.GIL_NOTE)
        if offset is None:
            document.update(status=UNAVAILABLE, reason="py-spy never saw the main thread in the clock mark, "
                                                         "so its samples cannot be placed on the steps' clock")
            data.native_time = document
            record.warn(f"native time: {document['reason']}")
            return
        # The marks place a sample only to within py-spy's sampling interval, often longer than a step: the
        # offset is fitted to the step frames in the stacks, within that interval of the marks' estimate.
        fitted = native_time.fitted_offset_us(main, record.steps, offset, 1e6 / result.rate)
        if fitted is not None:
            offset, tolerance, source = fitted, 0.0, "fitted to the steps' own frames in the stacks"
        else:
            bounds = native_time.offset_bounds_us(main, result.marks_ns, MARK_FUNCTION)
            tolerance = min(max(bounds) - min(bounds), 1e6 / result.rate)
            source = "from marks at start and stop (unbiased for py-spy's exponential intervals)"
        rows = native_time.step_shares(record.steps, main, offset, record.identity.step_order, tolerance)
        document.update(placement=f"each stack in the step where py-spy first saw it, up to the step's end; the "
                                  f"clock offset {source}", offset_uncertainty_ms=tolerance / 1e3,
                        steps={row["step"]: {key: row[key] for key in native_time.SHARE_COLUMNS if key != "step"}
                               for row in rows},
                        lines=[native_time.where_time_went(row) for row in rows])
        if result.behind_s:
            record.warn(f"py-spy fell up to {result.behind_s:g} s behind its sampling rate: the run "
                                   "was held still meanwhile; lower profiling.rate")
        data.native_time = document
        data.native_shares = Table(rows, native_time.SHARE_COLUMNS)
        data.speedscope = sampled_stacks.speedscope_document(result.events, offset, record.steps_origin_ns,
                                                             result.main_thread, f"detbench {record.identity.run_id}")
        data.sample_events = sampled_stacks.complete_events(result.events, offset)
        data.sample_threads = {tid: sampled_stacks.thread_title(tid, result.main_thread) for tid in segments}


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""
