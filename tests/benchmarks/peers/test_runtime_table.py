"""benchmarks/peers/runtime_table.py's pure part: the fidelity of a runtime's raw output to ONNX Runtime's, on
hand-made outputs (1 x (4 + classes) x candidates) whose differences are known."""
import numpy as np

from benchmarks.peers.runtime_table import fidelity


def outputs():
    reference = np.zeros((1, 6, 3), dtype=np.float32)  # 4 box rows, 2 classes, 3 candidates
    reference[0, :4] = [[10, 20, 30], [10, 20, 30], [5, 5, 5], [5, 5, 5]]
    reference[0, 4:] = [[0.9, 0.1, 0.2], [0.05, 0.6, 0.1]]  # candidate 2's best score 0.2 is below the cut
    return reference.copy(), reference


def test_the_largest_differences_and_the_classes_of_the_scored_candidates():
    ours, reference = outputs()
    ours[0, 1, 2] += 0.5  # a box coordinate
    ours[0, 4, 1] = 0.7  # candidate 1 now class 0 (0.7 against 0.6)
    ours[0, 5, 2] = 0.3  # candidate 2 changes class too, but the reference scores it below 0.25
    assert fidelity(ours, reference) == "boxes within 0.5 px, scores within 0.6, classes 1/2 equal"


def test_a_channels_last_runtimes_output_of_another_shape_is_read_in_the_references():
    ours, reference = outputs()
    assert fidelity(ours.reshape(6, 3), reference) == "boxes within 0 px, scores within 0, classes 2/2 equal"
