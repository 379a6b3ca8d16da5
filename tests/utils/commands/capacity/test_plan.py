"""The runs capacity starts, as their --set arguments: the command's own keys last, the user's before them, and the
keys it owns refused with the flag to use."""
import json

import pytest

from utils.commands.capacity.plan import (FLAT_OUT_CAMERAS, CapacityRequest, arguments, check_sets, flat_out_sets,
                                          point_sets, refuse_owned, stream_probe)
from utils.core.errors import UsageError

REQUEST = CapacityRequest("c.yaml", ["model.arch=yolov7-tiny"], [], fps=5.0, point_s=8.0, warmup_s=1.5)
CANDIDATE = ["runtime.backend=onnxruntime", "dataset.batch_size=2"]


def settings(sets):
    return dict(item.split("=", 1) for item in sets)


def test_a_point_runs_n_cameras_in_real_time_at_the_rate_asked():
    sets = point_sets(REQUEST, "clips/a b.mp4", CANDIDATE, 6, 16.0)
    values = settings(sets)
    assert values["benchmark.scenario"] == "cameras" and values["cameras.count"] == "6"
    assert json.loads(values["cameras.sources"]) == ["clips/a b.mp4"]
    assert (values["cameras.realtime"], values["cameras.duration_s"], values["cameras.warmup_s"]) == ("true", "16", "1.5")
    assert values["cameras.fps"] == "5" and values["outputs.save_images"] == "false"
    assert sets.index("model.arch=yolov7-tiny") < sets.index("runtime.backend=onnxruntime")


def test_a_flat_out_run_reads_its_files_as_fast_as_the_detector_takes_them():
    values = settings(flat_out_sets(REQUEST, "a.mp4", CANDIDATE))
    assert values["cameras.realtime"] == "false" and values["cameras.count"] == str(FLAT_OUT_CAMERAS)


def test_a_check_runs_single_stream_on_the_images_and_a_comparison_skips_the_checks():
    checking = settings(check_sets(REQUEST, "imgs", CANDIDATE, True, 40))
    assert checking["benchmark.scenario"] == "single_stream" and json.loads(checking["dataset.path"]) == "imgs"
    assert checking["benchmark.accuracy.max_images"] == "40"
    comparing = settings(check_sets(REQUEST, "imgs", CANDIDATE, False, 40))
    assert comparing["benchmark.accuracy.enabled"] == "false" and comparing["benchmark.agreement.enabled"] == "false"


def test_the_run_id_comes_last():
    words = arguments(REQUEST, ["run.id=mine", "a=1"], "p,cameras=3")
    assert words[:2] == ["--config", "c.yaml"] and words[-1] == 'run.id="p,cameras=3"'


@pytest.mark.parametrize("item, flag", [("cameras.count=4", "the search sets N"), ("dataset.path=x", "--source"),
                                        ("cameras.fps=5", "--fps"), ("benchmark.scenario=offline", "scenario")])
def test_keys_the_command_sets_itself_are_refused_with_the_flag_to_use(item, flag):
    with pytest.raises(UsageError, match=flag):
        refuse_owned([item], [])
    refuse_owned(["run.id=mine", "run.output_dir=/tmp/x"], [])  # they name the capacity directory


def test_a_streams_race_saturates_the_detector():
    assert stream_probe(None) == 2 and stream_probe(0.4) == 2 and stream_probe(3.2) == 7


def test_a_request_comes_back_from_capacity_json_as_it_was_for_resume():
    again = CapacityRequest.from_document(json.loads(json.dumps(REQUEST.document())))
    assert again == REQUEST and again.bounds.budget_ms == REQUEST.budget_ms
