"""utils.measure.below_layer.control: BelowTheLayer starts and stops the recorders below the layer (py-spy sampler, CPU
counters, oneDNN's kernels batch, ITT tasks) from outside the pipeline and turns what they recorded into the run
record's plain data.

Tested with each part switched on alone, on hand-made runtimes, layer rows and sampler results: what the
summary's `kernels`, `native_time` and `itt` documents say, that a missing or blind sampler becomes a warning
and never an error, and that timed_pass takes its listeners off the step timer again."""
from types import SimpleNamespace

import torch
from torch import nn

from utils.measure.below_layer.control import BelowTheLayer
from utils.measure.below_layer.record import SamplerResult
from utils.measure.below_layer.kernels import MARKER
from utils.record.layers import KIND_LAYER, KIND_MODEL, LayerRecord, TimingSnapshot
from utils.measure.below_layer.page_faults import Allocator
from utils.record.run_record import RunIdentity, RunRecord
from utils.record.steps import PassKind
from utils.measure.steps.step_timer import StepTimer

ALLOCATOR = Allocator("glibc's malloc", True)


def below(tmp_path=None, sampler="off", itt=False, model=None, console=None):
    settings = SimpleNamespace(sampler=sampler, rate=97, counters=False, itt=itt)
    return BelowTheLayer(settings, model, console=console or (lambda line: None),
                         search_path=str(tmp_path) if tmp_path else None, allocator=ALLOCATOR)


def record(backend="torch") -> RunRecord:
    return RunRecord(RunIdentity(run_id="r", config_file="x.yaml", family="yolo", arch="yolov7-tiny",
                                 weights="random (seed 0)", random_weights=True, seed=0, img_size=64, batch_size=1,
                                 runtime={"backend": backend}, step_order=("pipeline", "forward")))


class Runtime:
    def __init__(self, backend, precision="fp32"):
        self.name = backend
        self.precision = precision

    def settings(self):
        return {"backend": self.name, "precision": self.precision}


def layer(path, name, kind=KIND_LAYER) -> LayerRecord:
    return LayerRecord(path=path, name=name, type="Convolution", kind=kind, depth=2, parent="Model", calls=1,
                       total_ns=1, self_ns=1, call_total_ns=(1,), call_self_ns=(1,), params=0, macs_total=0,
                       input_shapes=None, output_shapes=None)


def test_nothing_switched_on_records_empty_below_layer_data():
    parts = below()
    assert (parts.sampler, parts.counters, parts.itt) == (None, None, None)
    run = record()
    parts.collect(run)
    assert run.below is parts.data
    assert (run.below.native_time, run.below.cpu_counters, run.below.kernels, run.below.itt) == (None,) * 4
    assert run.warnings == []


def test_kernels_of_a_runtime_that_names_only_its_operators_are_partial():
    parts = below()
    parts.kernels_batch(lambda: None, None, Runtime("onnxruntime"))
    kernels = parts.data.kernels
    assert (kernels["backend"], kernels["precision"], kernels["status"]) == ("onnxruntime", "fp32", "partial")
    assert "MLAS" in kernels["source"]
    assert set(kernels["cpu_flags"]) >= {"avx512_vnni", "amx_int8"}


def test_torch_without_modules_to_mark_has_no_kernels_and_says_why():
    parts = below()
    parts.kernels_batch(lambda: None, None, Runtime("torch"))
    assert parts.data.kernels["status"] == "unavailable"
    assert "runtime.compile" in parts.data.kernels["reason"]


def test_torch_kernels_batch_names_each_convolution_kernel():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 4, 1)).eval()
    parts = below()
    with torch.no_grad():
        parts.kernels_batch(lambda: model(torch.zeros(1, 3, 8, 8)), model, Runtime("torch"))
    kernels = parts.data.kernels
    assert kernels["status"] == "measured" and kernels["convolution_layers"] == 2
    assert sum(kernels["convolution_kernels"].values()) == 2
    assert set(parts.data.kernel_by_path) == {"0", "2"}
    assert parts.data.verbose_text.count(f"{MARKER},begin,") == 2  # kept for onednn_verbose.txt


def test_openvino_kernels_come_from_its_layer_rows():
    parts = below()
    parts.kernels_batch(lambda: None, None, Runtime("openvino", precision="int8"))
    run = record("openvino")
    run.layer_timing = TimingSnapshot((layer("Model", "Model", KIND_MODEL), layer("conv1", "brgconv_avx512_I8"),
                                       layer("conv2", "jit_avx512_I8")), 1, 1, ())
    parts.runtime_kernels(run)
    assert parts.data.kernel_by_path == {"conv1": "brgconv_avx512_I8", "conv2": "jit_avx512_I8"}
    assert "AVX-512 int8 kernels" in parts.data.kernels["int8"]["instructions"]


def test_runtime_kernels_without_a_kernels_batch_changes_nothing():
    parts = below()
    parts.runtime_kernels(record("openvino"))
    assert parts.data.kernels is None and parts.data.kernel_by_path == {}


def test_a_sampler_that_never_ran_is_a_warning_naming_why():
    parts = below(sampler="py-spy")
    run = record()
    parts.collect(run)
    native = run.below.native_time
    assert (native["status"], native["sampler"], native["rate_hz"]) == ("unavailable", "py-spy", 97)
    assert "single_stream" in native["reason"]
    assert run.warnings == [f"native time: the sampler is missing from this run: {native['reason']}"]


def test_a_missing_py_spy_is_said_on_the_console_and_the_passes_go_on(tmp_path):
    lines = []
    parts = below(tmp_path, sampler="py-spy", console=lines.append)
    with parts.timed_pass(StepTimer()):
        pass
    parts.stop()
    assert lines[-1] == ("WARNING: sampler unavailable: py-spy is not installed (not on PATH nor beside this "
                         "Python): pip install py-spy")
    run = record()
    parts.collect(run)
    assert "pip install py-spy" in run.warnings[0]


def test_samples_that_never_saw_the_main_thread_cannot_be_placed():
    parts = below(sampler="py-spy")
    parts.sampler.result = SamplerResult("measured", command=["py-spy", "record"], samples=12, errors=0,
                                         marks_ns=[(0, 1000)], rate=97, main_thread=1)
    run = record()
    parts.collect(run)
    native = run.below.native_time
    assert native["status"] == "unavailable" and native["samples"] == 12
    assert native["command"] == "py-spy record"
    assert run.warnings == [f"native time: {native['reason']}"]
    assert "clock mark" in native["reason"]


def test_itt_tasks_listen_only_within_a_timed_pass_and_are_counted():
    model = nn.Sequential(nn.ReLU())
    parts = below(itt=True, model=model)
    timer = StepTimer()
    timer.set_batch(PassKind.TIMED, 0, 0)
    with parts.timed_pass(timer):
        assert parts.itt in timer.listeners
        with timer.step("forward"):
            model(torch.zeros(1))
    assert timer.listeners == []
    run = record()
    parts.collect(run)
    assert run.below.itt["tasks"] == 3  # the step, the Sequential and its ReLU
    assert run.below.itt["balanced"] is True
    assert run.below.itt["emitted"] == "steps and layers of the timed passes"
