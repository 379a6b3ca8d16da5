"""The race's plan over ways of computing (utils/commands/tune/ways.py): first looks in the order the CPU's facts favour,
one per way; successive halving after them; the precisions a folder is too small to judge; how far each way got."""
from types import SimpleNamespace

import pytest

from utils.core.errors import UsageError
from utils.commands.tune.driver import Tune
from utils.commands.tune.looks import FIRST_LOOK, FULL
from utils.commands.tune.space import BACKEND, BATCH, PINNING, PRECISION, THREADS, Candidate, Space
from utils.commands.tune.state import Entry, Run
from utils.commands.tune.ways import (first_look_order, first_looks, folder_needed, halve, native_parts, undecidable,
                             way_lines, way_rank)

AMX = frozenset({"avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8"})
VNNI_ONLY = frozenset({"avx512f", "avx512_vnni"})
AVX2 = frozenset({"avx2"})


def way(backend, precision):
    return ((BACKEND, backend), (PRECISION, precision))


def candidate(backend, precision, batch="1", threads="2", pinning="false"):
    return Candidate((*way(backend, precision), (BATCH, batch), (THREADS, threads), (PINNING, pinning)))


def test_reduced_precisions_with_their_instructions_come_first_then_fp32_then_emulated():
    ways = [way("torch", "fp32"), way("torch", "bf16"), way("openvino", "fp32"), way("openvino", "int8"),
            way("openvino", "int8+bf16")]
    assert first_look_order(ways, AMX) == [way("torch", "bf16"), way("openvino", "int8"),
                                           way("openvino", "int8+bf16"), way("torch", "fp32"),
                                           way("openvino", "fp32")]
    # int8 with VNNI first; bf16 (and int8 with bf16 floats) emulated here: after fp32.
    assert first_look_order(ways, VNNI_ONLY) == [way("openvino", "int8"), way("torch", "fp32"),
                                                 way("openvino", "fp32"), way("torch", "bf16"),
                                                 way("openvino", "int8+bf16")]
    # Nothing native: fp32 first, in the space's order.
    assert first_look_order(ways, AVX2)[:2] == [way("torch", "fp32"), way("openvino", "fp32")]


def test_native_parts_needs_every_part_of_a_combined_precision():
    assert native_parts("fp32", AVX2) == []
    assert native_parts("int8+bf16", AMX) == ["avx512_vnni", "amx_int8", "avx512_bf16", "amx_bf16"]
    assert native_parts("int8+bf16", VNNI_ONLY) is None
    assert way_rank("bf16", AVX2) == 1 and way_rank("fp32", AVX2) == 0 and way_rank("bf16", AMX) == -1


def test_one_first_look_per_way_at_batch_1_every_thread_unpinned():
    candidates = [candidate("torch", "fp32", batch, threads, pinning) for batch in ("1", "2", "4")
                  for threads, pinning in (("1", "false"), ("2", "false"), ("2", "true"))]
    candidates += [candidate("openvino", "bf16", batch) for batch in ("2", "4")]
    looks = first_looks(candidates, AMX)
    assert looks == [candidate("openvino", "bf16", "2"), candidate("torch", "fp32", "1", "2", "false")]


def test_halving_keeps_the_faster_half_and_those_within_the_slack():
    figures = {way("a", "fp32"): 10.0, way("b", "fp32"): 10.5, way("c", "fp32"): 10.9, way("d", "fp32"): 12.0,
               way("e", "fp32"): 30.0}
    result = halve(figures)
    # ceil(5 / 2) = 3 kept by rank; d is 20% behind: out; e 3x: out.
    assert result.kept == [way("a", "fp32"), way("b", "fp32"), way("c", "fp32")]
    assert set(result.dropped) == {way("d", "fp32"), way("e", "fp32")}
    assert "ranked 4 of 5" in result.dropped[way("d", "fp32")] and "x1.20" in result.dropped[way("d", "fp32")]
    # Within 10% of the fastest: kept beyond the half.
    close = halve({way("a", "fp32"): 10.0, way("b", "fp32"): 10.2, way("c", "fp32"): 10.4, way("d", "fp32"): 10.9,
                   way("e", "fp32"): 11.5})
    assert len(close.kept) == 4 and list(close.dropped) == [way("e", "fp32")]


def test_halving_keeps_two_ways_at_least():
    assert halve({way("a", "fp32"): 1.0, way("b", "fp32"): 5.0}).dropped == {}
    assert halve({}).kept == []


def test_int8_needs_twice_the_images_without_labels():
    # 48 images: int8 calibrates on 24 and scores 24 < 30; 59 calibrate 29 and score 30. bf16 scores all 48.
    refused = undecidable(("fp32", "bf16", "int8"), 48, False, 300, False, 30)
    assert list(refused) == ["int8"]
    assert "48 image(s), of which int8 calibrates on 24: 24 to score" in refused["int8"]
    assert "give 59 images or more" in refused["int8"]
    assert folder_needed(30, 300) == 59 and folder_needed(30, 10) == 40


def test_a_tiny_folder_refuses_every_reduced_precision_and_labels_or_own_calibration_lift_it():
    refused = undecidable(("fp32", "bf16", "int8", "int8+bf16"), 6, False, 300, False, 30)
    assert set(refused) == {"bf16", "int8", "int8+bf16"} and "give 30 images" in refused["bf16"]
    assert undecidable(("bf16", "int8"), 6, True, 300, False, 30) == {}
    assert list(undecidable(("int8",), 40, False, 300, True, 30)) == []



def entry_with(candidate_, rounds=(), dropped=None):
    entry = Entry(candidate_, dropped=dropped)
    for number in rounds:
        entry.runs.append(Run(candidate_.name, number, False, f"{candidate_.name},round={number}", status="complete",
                              look=FIRST_LOOK if number == 1 else FULL))
    return entry


def test_way_lines_say_how_far_each_way_got_its_first_look_apart_from_its_full_runs_and_why_it_stopped():
    fast = [entry_with(candidate("openvino", "bf16", b), rounds=(1, 2, 3) if b == "1" else (2,)) for b in ("1", "2")]
    halved = [entry_with(candidate("torch", "fp32"), rounds=(1,), dropped={"round": 1, "reason": "halved: slow"}),
              entry_with(candidate("torch", "fp32", "2"), dropped={"round": 1, "reason": "halved: slow"})]
    never = [entry_with(candidate("onnxruntime", "int8"), dropped={"round": 1, "reason": "not reached: out of time"})]
    figures = {(fast[0].name, FIRST_LOOK): (5.5, "5.50 ms/image"), (fast[0].name, FULL): (5.0, "5.00 ms/image"),
               (fast[1].name, FULL): (6.0, "6.00 ms/image"), (halved[0].name, FIRST_LOOK): (9.0, "9.00 ms/image")}
    lines = way_lines([way("openvino", "bf16"), way("torch", "fp32"), way("onnxruntime", "int8")],
                      fast + halved + never, 3, lambda entry, look: figures.get((entry.name, look)))
    assert lines == [
        "openvino bf16: 2 of 2 schedule(s) run, up to round 3 of 3; first look 5.50 ms/image; best full run "
        "5.00 ms/image; in the race at its end",
        "torch fp32: 1 of 2 schedule(s) run, up to round 1 of 3; first look 9.00 ms/image; no full run; stopped: "
        "halved: slow",
        "onnxruntime int8: no run completed; not reached: out of time"]


def folder(labels=None, accuracy=True):
    """The config facts the race's leave-out step reads (a loaded config's sections)."""
    return SimpleNamespace(benchmark=SimpleNamespace(accuracy=SimpleNamespace(enabled=accuracy)),
                           runtime=SimpleNamespace(calibration=SimpleNamespace(images=300, path=None)),
                           dataset=SimpleNamespace(labels=labels))


def race_over(images, *ways):
    candidates = [candidate(backend, precision) for backend, precision in ways]
    precisions = tuple(dict.fromkeys(precision for _, precision in ways))
    return SimpleNamespace(images=images, space=Space({PRECISION: precisions}, candidates))


def test_the_race_says_at_the_start_which_precisions_the_folder_cannot_judge_and_what_it_answers():
    race = race_over(48, ("openvino", "fp32"), ("openvino", "bf16"), ("onnxruntime", "int8"))
    Tune._leave_out_undecidable(race, folder())
    assert [c.values[PRECISION] for c in race.space.candidates] == ["fp32", "bf16"]
    assert race.space.refusals == ["runtime.precision=int8: cannot be judged here: the folder holds 48 image(s), of "
                                   "which int8 calibrates on 24: 24 to score, fewer than the 30 a verdict without "
                                   "labels needs; give 59 images or more (or runtime.calibration.path, a folder of "
                                   "other images), or labels (dataset.labels)"]
    assert race.space.notes == ["with these images the race answers among: openvino bf16, openvino fp32"]
    # With labels, or with the accuracy check off, nothing is left out.
    for config in (folder(labels="labels/"), folder(accuracy=False)):
        kept = race_over(48, ("openvino", "fp32"), ("onnxruntime", "int8"))
        Tune._leave_out_undecidable(kept, config)
        assert len(kept.space.candidates) == 2 and not kept.space.refusals


def test_a_folder_that_can_judge_no_way_is_refused_with_the_images_it_needs():
    race = race_over(10, ("openvino", "bf16"), ("onnxruntime", "int8"))
    with pytest.raises(UsageError, match="no way of computing can be judged on this folder") as refused:
        Tune._leave_out_undecidable(race, folder())
    assert "give 30 images or more" in str(refused.value) and "give 59 images or more" in str(refused.value)
