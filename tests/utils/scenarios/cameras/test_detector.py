"""The detectors' pieces that hold no pipeline: which group a stage's CPU goes to, the gate the window opens at,
a thread's CPU per stage group, and the input shapes run."""
import threading
import time

from pipelines.contract import Stage
from utils.measure.steps.step_timer import StepTimer
from utils.scenarios.cameras.detector import BatchGate, ShapeBook, StageCpu, stage_groups


class Pipeline:
    def stages(self):
        return (Stage("preprocess", None), Stage("forward", None), Stage("nms", None, "postprocess"),
                Stage("scale_boxes", None, "postprocess"))


def test_stages_before_the_forward_are_preprocess_and_after_it_postprocess():
    assert stage_groups(Pipeline()) == {"preprocess": "preprocess", "forward": "forward", "nms": "postprocess",
                                        "scale_boxes": "postprocess"}


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_stage_cpu_counts_its_own_thread_only():
    cpu = StageCpu({"forward": "forward", "nms": "postprocess"})
    timer = StepTimer([cpu])
    cpu.begin()
    with timer.step("forward"):
        _spin(0.02)
    with timer.step("nms"):
        pass
    other = threading.Thread(target=lambda: cpu.step_started("forward") or cpu.step_ended("forward"))
    other.start()
    other.join()
    assert cpu.batch["forward"] >= 0.02 and set(cpu.batch) == {"forward", "postprocess"}
    with timer.step("run"):  # no stage: not counted
        pass
    assert set(cpu.batch) == {"forward", "postprocess"}


def test_the_gate_holds_once_every_detector_stands_at_it():
    gate = BatchGate(2)
    passed, left = [], threading.Event()

    def detector(name: str) -> None:
        for _ in range(50):
            gate.checkpoint()
            passed.append(name)
            time.sleep(0.002)
        gate.leave()
        left.set()

    threads = [threading.Thread(target=detector, args=(name,)) for name in "ab"]
    for thread in threads:
        thread.start()
    with gate.held():
        held_at = len(passed)
        time.sleep(0.05)
        assert len(passed) == held_at  # both stand still while it is held
    for thread in threads:
        thread.join(10)
    assert len(passed) == 100
    with gate.held():  # every detector has left: holding it does not wait
        pass


def test_a_shape_first_run_inside_the_window_is_cold():
    shapes = ShapeBook()
    assert not shapes.ran((1, 3, 192, 320), -1, timed=False)  # warmed before the window
    assert not shapes.ran((1, 3, 192, 320), 4, timed=True)
    assert shapes.ran((2, 3, 192, 320), 5, timed=True)
    assert not shapes.ran((2, 3, 192, 320), 6, timed=True)
    assert shapes.cold == [{"batch": 5, "shape": [2, 3, 192, 320]}]
