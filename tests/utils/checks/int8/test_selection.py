"""The judge of accuracy-aware int8 (utils/checks/int8/selection.py) on fake forwards over tiny drawn images:
which images judge (undecodable ones left out with their labels, at most MAX_SELECTION_IMAGES), what stands in
for the truth (the labels, the float model's detections on mirror views, or its own detections), the drop it
reads against hand-computed mAPs, and the control it hands the quantizer (its digest, its timed inputs)."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from pydantic import BaseModel

from datasets.image_folder import DatasetBatches
from pipelines.cache_keys import parts_digest
from pipelines.contract import Detections, Stage
from pipelines.runtimes.quantization import Calibration
from utils.checks.int8 import selection as int8_selection
from utils.checks.int8.selection import (LABELLED, MAX_SELECTION_IMAGES, OWN, TIMED_INPUTS, JudgingPipeline,
                                          SelectionJudge, accuracy_control)
from utils.checks.accuracy.label_free import JUDGE_VIEWS, PseudoTruth

HEIGHT, WIDTH = 48, 64
SQUARE = [10.0, 8.0, 30.0, 28.0]  # x1 y1 x2 y2 of the white square drawn on every "square" image
# A box 2 pixels to the right of a 20 x 20 square: IoU 360 / 440 = 0.818, a hit at the IoU thresholds
# 0.50 ... 0.80 (7 of 10), so its mAP@0.5:0.95 is 0.7 where the square's own is 1.0.
SHIFTED_DROP = 0.3


class Post(BaseModel):
    conf_thres: float = 0.001
    iou_thres: float = 0.65


class FakePipeline:
    """Preprocess: BGR / 255 as a (1, 3, H, W) tensor; forward: the prepared forward; postprocess: (1, n, 6) rows
    x1 y1 x2 y2 score class as Detections."""

    def __init__(self, prepared):
        self.prepared = prepared

    def stages(self):
        def preprocess(images):
            return torch.from_numpy(np.stack(images).transpose(0, 3, 1, 2).astype(np.float32) / 255.0)

        def postprocess(raw):
            return [Detections(rows[:, :4], rows[:, 4], rows[:, 5].long()) for rows in raw]

        return (Stage("preprocess", preprocess), Stage("forward", self.prepared), Stage("postprocess", postprocess))


class FakeFamily:
    def __init__(self):
        self.built = []

    def build_pipeline(self, network, prepared, preprocess, postprocess):
        self.built.append((network, preprocess, postprocess))
        return FakePipeline(prepared)


class SquareFinder:
    """The box around the pixels brighter than half (the white square), score 0.9, class 1, moved `shift` pixels
    right; `only_width`: sees nothing on inputs of another width (a shifted mirror view is wider). Counts calls."""

    def __init__(self, shift: float = 0.0, only_width: int | None = None, score: float = 0.9):
        self.shift, self.only_width, self.score = shift, only_width, score
        self.calls = 0

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        assert isinstance(batch, np.ndarray) and batch.dtype == np.float32
        self.calls += 1
        ys, xs = np.nonzero(batch[0].max(axis=0) > 0.5)
        if not len(xs) or (self.only_width is not None and batch.shape[-1] != self.only_width):
            return np.zeros((1, 0, 6), np.float32)
        row = [xs.min() + self.shift, ys.min(), xs.max() + 1 + self.shift, ys.max() + 1, self.score, 1]
        return np.array([[row]], np.float32)


def draw(folder, name: str, square: bool = True, size=(HEIGHT, WIDTH)):
    image = np.zeros((*size, 3), np.uint8)
    if square:
        x1, y1, x2, y2 = (int(v) for v in SQUARE)
        image[y1:y2, x1:x2] = 255
    path = folder / name
    cv2.imwrite(str(path), image)
    return path


def truth(*boxes) -> PseudoTruth:
    return PseudoTruth(np.array(boxes, np.float64).reshape(-1, 4), np.ones(len(boxes), np.int64))


def judge(paths, truths=None, views=len(JUDGE_VIEWS), conf_thres=0.25, max_pixels=None, family=None):
    return SelectionJudge(JudgingPipeline(family or FakeFamily(), "network", "preprocess", Post(), conf_thres),
                          DatasetBatches(paths, 1, max_pixels), truths, views)


# --- which images judge, and the figure ----------------------------------------------------------------------

def test_the_figure_names_the_stand_in(tmp_path):
    paths = [draw(tmp_path, "a.png")]
    assert judge(paths, [truth(SQUARE)]).figure == LABELLED == "mAP@0.5:0.95 drop against the labels"
    assert judge(paths).figure == "mAP@0.5:0.95 drop against the float model's detections on 5 mirror view(s)"
    assert judge(paths, views=2).figure.endswith("on 2 mirror view(s)")
    assert judge(paths, views=0).figure == OWN == "mAP@0.5:0.95 drop against the float model's own detections"


def test_an_undecodable_image_is_left_out_with_its_label(tmp_path):
    first, third = draw(tmp_path, "a.png"), draw(tmp_path, "c.png")
    broken = tmp_path / "b.png"
    broken.write_bytes(b"")
    far_away = truth([40.0, 30.0, 60.0, 45.0])  # the broken image's label: taken for c.png it would cost a miss
    chosen = judge([first, broken, third], [truth(SQUARE), far_away, truth(SQUARE)])
    assert len(chosen.images) == 2
    chosen.reference(SquareFinder())
    assert chosen.drop(SquareFinder()) == pytest.approx(0.0)
    assert chosen.drop(SquareFinder(shift=2)) == pytest.approx(SHIFTED_DROP)


def test_at_most_max_selection_images_are_decoded(tmp_path):
    one = draw(tmp_path, "a.png", size=(8, 8), square=False)
    assert len(judge([one] * (MAX_SELECTION_IMAGES + 1)).images) == MAX_SELECTION_IMAGES == 64


def test_images_above_max_pixels_do_not_judge(tmp_path):
    small, large = draw(tmp_path, "small.png", size=(8, 8)), draw(tmp_path, "large.png")
    assert [image.shape[:2] for image in judge([small, large], max_pixels=100).images] == [(8, 8)]


# --- the stand-ins and the drop ------------------------------------------------------------------------------

def test_labels_judge_with_one_forward_per_image(tmp_path):
    paths = [draw(tmp_path, f"{i}.png") for i in range(3)]
    family = FakeFamily()
    chosen = judge(paths, [truth(SQUARE)] * 3, family=family)
    reference = SquareFinder()
    chosen.reference(reference)
    assert reference.calls == 3  # no mirror view where labels stand
    assert chosen.drop(SquareFinder()) == pytest.approx(0.0)
    assert chosen.drop(SquareFinder(shift=2)) == pytest.approx(SHIFTED_DROP)
    network, preprocess, postprocess = family.built[0]
    assert (network, preprocess, postprocess) == ("network", "preprocess", Post())


def test_against_labels_the_float_model_pays_for_its_own_misses(tmp_path):
    # Two objects, the float model finds one: recall 0.5 at precision 1 is 51 of the 101 recall points, so its
    # mAP is 51/101 and the shifted box's 0.7 x 51/101.
    chosen = judge([draw(tmp_path, "a.png")], [truth(SQUARE, [40.0, 30.0, 60.0, 45.0])])
    chosen.reference(SquareFinder())
    assert chosen.drop(SquareFinder(shift=2)) == pytest.approx(SHIFTED_DROP * 51 / 101)


def test_mirror_views_stand_in_without_labels(tmp_path):
    paths = [draw(tmp_path, f"{i}.png") for i in range(2)]
    chosen = judge(paths)
    reference = SquareFinder()
    chosen.reference(reference)
    assert reference.calls == 2 * (1 + 5)  # the images, then each of the 5 views of them
    # Each view's detections mapped back land on the square itself, so the float model loses nothing.
    assert chosen.drop(SquareFinder()) == pytest.approx(0.0)
    assert chosen.drop(SquareFinder(shift=2)) == pytest.approx(SHIFTED_DROP)


def test_a_view_mapped_back_lands_where_the_image_has_its_object(tmp_path):
    chosen = judge([draw(tmp_path, "a.png")])
    for view in JUDGE_VIEWS:
        found = chosen.detections(SquareFinder(), view=view)[0]
        assert found.boxes.tolist() == [SQUARE], view


def test_without_views_the_float_model_judges_its_own_detections_above_conf_thres(tmp_path):
    paths = [draw(tmp_path, "a.png")]
    reference = SquareFinder()
    own = judge(paths, views=0)
    own.reference(reference)
    assert reference.calls == 1
    assert own.drop(SquareFinder(shift=2)) == pytest.approx(SHIFTED_DROP)
    above = judge(paths, views=0, conf_thres=0.95)  # the 0.9 detection is not shown: no object to compare
    above.reference(SquareFinder())
    assert above.drop(SquareFinder(shift=2)) is None


def test_no_object_anywhere_reads_no_drop(tmp_path):
    blank = [draw(tmp_path, "blank.png", square=False)]
    mirrored = judge(blank)
    mirrored.reference(SquareFinder())
    assert mirrored.drop(SquareFinder()) is None
    labelled = judge([draw(tmp_path, "a.png")], [truth()])
    labelled.reference(SquareFinder())
    assert labelled.drop(SquareFinder()) is None


def test_ranking_reads_the_first_images_on_the_first_view_alone(tmp_path):
    # The finder sees the square only at the image's own width: not on the views shifted sideways (wider).
    paths = [draw(tmp_path, "0.png"), draw(tmp_path, "1.png", square=False)]
    chosen = judge(paths)
    chosen.reference(SquareFinder(only_width=WIDTH))
    candidate = SquareFinder(shift=2, only_width=WIDTH)
    assert chosen.drop(candidate) is None  # the shifted views stand in for no object
    assert chosen.drop(candidate, first=1) == pytest.approx(SHIFTED_DROP)
    assert candidate.calls == 1  # the run that read a drop saw the first image only
    later = judge(list(reversed(paths)))
    later.reference(SquareFinder(only_width=WIDTH))
    assert later.drop(candidate, first=1) is None  # its first image holds no object


# --- the control handed to the quantizer ---------------------------------------------------------------------

def calibration(count: int = 6, digest: str = "images-digest") -> Calibration:
    return Calibration(inputs=lambda: (np.full((1, 3, 2, 2), i, np.float32) for i in range(count)), images=count,
                       digest=digest)


def test_the_control_carries_the_judge_and_the_first_timed_inputs(tmp_path):
    chosen = judge([draw(tmp_path, f"{i}.png") for i in range(3)])
    control = accuracy_control(chosen, 0.02, calibration(), 40)
    assert (control.budget, control.images, control.figure, control.evaluations) == (0.02, 3, chosen.figure, 40)
    for _ in range(2):  # fresh on every call
        inputs = control.inputs()
        assert len(inputs) == TIMED_INPUTS == 4 and [float(x[0, 0, 0, 0]) for x in inputs] == [0, 1, 2, 3]
    control.reference(SquareFinder())
    assert control.drop(SquareFinder(shift=2), None) == pytest.approx(SHIFTED_DROP)


def test_the_control_digest_is_of_every_setting_that_decides_its_choice(tmp_path, monkeypatch):
    monkeypatch.setattr(int8_selection, "_instruction_sets", lambda: {"sse4_2", "avx2"})
    monkeypatch.setattr(int8_selection.platform, "machine", lambda: "x86_64")
    chosen = judge([draw(tmp_path, "a.png")], [truth(SQUARE)])
    control = accuracy_control(chosen, 0.02, calibration(), 80)
    assert control.digest == parts_digest({
        "budget": "0.02", "evaluations": "80", "figure": LABELLED, "conf_thres": "0.25",
        "postprocess": '{"conf_thres":0.001,"iou_thres":0.65}', "images": "images-digest", "cpu": "avx2,sse4_2",
        "machine": "x86_64"})
    assert accuracy_control(chosen, 0.02, calibration(), 80).digest == control.digest
    others = [accuracy_control(chosen, 0.03, calibration(), 80), accuracy_control(chosen, 0.02, calibration(), 81),
              accuracy_control(chosen, 0.02, calibration(digest="other"), 80),
              accuracy_control(judge([draw(tmp_path, "a.png")]), 0.02, calibration(), 80)]
    assert len({control.digest, *(other.digest for other in others)}) == 5
    monkeypatch.setattr(int8_selection, "_instruction_sets", lambda: {"avx2"})
    assert accuracy_control(chosen, 0.02, calibration(), 80).digest != control.digest


class FakePath:
    def __init__(self, text: str | None):
        self.text = text

    def __call__(self, name: str) -> "FakePath":
        assert name == "/proc/cpuinfo"
        return self

    def read_text(self) -> str:
        if self.text is None:
            raise PermissionError("no /proc here")
        return self.text


def test_the_instruction_sets_are_the_vector_flags_of_cpuinfo(monkeypatch):
    cpuinfo = "processor\t: 0\nflags\t\t: fpu sse sse4_2 avx avx512_vnni amx_tile fma ht lm vnni_x\nbugs\t: none\n"
    monkeypatch.setattr(int8_selection, "Path", FakePath(cpuinfo))
    assert int8_selection._instruction_sets() == {"sse", "sse4_2", "avx", "avx512_vnni", "amx_tile", "fma", "vnni_x"}
    monkeypatch.setattr(int8_selection, "Path", FakePath(None))
    assert int8_selection._instruction_sets() == set()


def test_a_raw_forward_becomes_a_torch_forward_of_one_or_several_outputs():
    batch = torch.arange(6, dtype=torch.float64).reshape(1, 1, 2, 3)
    one = int8_selection._torch_forward(lambda x: x[..., ::-1])(batch)  # a view with a negative stride
    assert isinstance(one, torch.Tensor) and one.dtype == torch.float32
    assert one.tolist() == [[[[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]]]
    both = int8_selection._torch_forward(lambda x: (x * 2, x[0, 0, :, :1]))(batch)
    assert isinstance(both, tuple) and [value.tolist() for value in both] == [
        [[[[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]]], [[0.0], [3.0]]]
