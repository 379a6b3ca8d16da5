"""py-spy's timed stacks as the tests of utils/measure/below_layer/ make them: frames of each kind of code, and B/E
events of spans that nest."""
from utils.measure.below_layer.native_time import Frame


PY = Frame("run", "/app/pipeline.py")
TORCH = Frame("at::native::conv", "/venv/torch/lib/libtorch_cpu.so")
LIBC = Frame("0x7f00", "/usr/lib/x86_64-linux-gnu/libc.so.6")
CV = Frame("cv::resize", "/venv/cv2/libopencv_imgproc.so")
OV = Frame("ov::infer", "/venv/openvino/libs/libopenvino_intel_cpu_plugin.so")
ORT = Frame("onnxruntime::Run", "/venv/onnxruntime/capi/onnxruntime_pybind11_state.so")
FUTEX = Frame("__futex_abstimed_wait_common", "/usr/lib/x86_64-linux-gnu/libc.so.6")
GC = Frame("gc_collect_main", "/usr/lib/libpython3.11.so.1.0")


def nested_events(tid, spans):
    """B/E events for (start, end, frame) spans that nest."""
    events = []
    for start, end, frame in spans:
        events.append({"ph": "B", "ts": start, "tid": tid, "name": frame.name, "args": {"filename": frame.filename}})
        events.append({"ph": "E", "ts": end, "tid": tid, "name": frame.name, "args": {"filename": frame.filename}})
    return sorted(events, key=lambda e: (e["ts"], e["ph"] == "B"))
