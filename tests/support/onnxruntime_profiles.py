"""ONNX Runtime's profile as its trace reader (pipelines/runtimes/onnxruntime/trace.py) reads it: session set-up, a
warm-up run, then the pass's run, ts from the session's start."""


def ort_profile() -> list[dict]:
    """ONNX Runtime's profile shape: session set-up, a warm-up run, then the pass's run; ts from the start."""
    def event(cat, name, ts, dur, **args):
        return {"cat": cat, "pid": 9, "tid": 9, "ph": "X", "name": name, "ts": ts, "dur": dur, "args": args}
    return [
        event("Session", "session_initialization", 0, 100),
        event("Session", "model_run", 200, 50),
        event("Node", "/model.0/conv/Conv_kernel_time", 210, 20, op_name="Conv"),
        event("Session", "model_run", 300, 40),
        event("Session", "SequentialExecutor::Execute", 301, 38),
        event("Node", "/model.0/act/LeakyRelu_output_0_nchwc_kernel_time", 305, 20, op_name="Conv"),
        event("Node", "/model.77/Sigmoid_kernel_time", 326, 3, op_name="Sigmoid"),
        event("Node", "ReorderOutput_token_1_kernel_time", 330, 2, op_name="ReorderOutput"),
    ]
