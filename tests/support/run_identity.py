"""A run's identity as the tests of the measurements make it: yolov7-tiny on torch fp32, random weights."""
from utils.record.run_record import RunIdentity


def identity(threads: int = 2) -> RunIdentity:
    return RunIdentity(run_id="m", config_file="x.yaml", family="yolo", arch="yolov7-tiny",
                       weights="random (seed 0)", random_weights=True, seed=0, img_size=160, batch_size=2,
                       runtime={"backend": "torch", "precision": "fp32", "threads": threads},
                       step_order=("pipeline", "load", "forward"))
