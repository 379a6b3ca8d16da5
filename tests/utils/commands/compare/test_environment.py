"""utils.commands.compare.environment: what differs between the machines and settings of two runs (env.json, summary.json,
config.yaml), the usual suspects of a speed difference listed first.

Tested on hand-made dictionaries and one tiny run directory: dotted flattening, the order and counts of
differences, long values compared by digest, per-run identity fields and thread ids left out."""
import hashlib
import json

from utils.commands.compare.environment import differences, flatten, settings
from utils.storage.finished_run import FinishedRun
from utils.storage import layout


def test_flatten_dots_nested_keys_and_keeps_lists_whole():
    assert flatten({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": None}, "env") == {
        "env.a.b": 1, "env.a.c.d": [1, 2], "env.e": None}
    assert flatten(3, "summary.threads") == {"summary.threads": 3}


def test_differences_list_the_usual_suspects_first_then_the_rest_sorted():
    a = {"config.z": 1, "config.a": 1, "env.torch": "2.1", "env.cpu_model": "Xeon", "same": 0}
    b = {"config.z": 2, "config.a": 2, "env.torch": "2.2", "env.cpu_model": "EPYC", "same": 0}
    rows, same = differences(a, b)
    assert [row["field"] for row in rows] == ["env.cpu_model", "env.torch", "config.a", "config.z"]
    assert rows[0] == {"field": "env.cpu_model", "a": "Xeon", "b": "EPYC"}
    assert same == 1


def test_a_field_one_side_lacks_is_a_difference():
    rows, same = differences({"only.a": 1}, {"only.b": None})
    assert rows == [{"field": "only.a", "a": 1, "b": None}]
    assert same == 1  # only.b is None on both sides


def write_run(folder, env, summary, config):
    folder.mkdir()
    (folder / layout.SUMMARY).write_text(json.dumps(summary))
    (folder / layout.ENV).write_text(json.dumps(env))
    (folder / layout.CONFIG).write_text(config)
    return FinishedRun(folder)


def test_settings_leave_out_identity_fields_and_digest_long_text(tmp_path):
    build = "USE_MKLDNN=ON " * 20
    run = write_run(tmp_path / "run", {"torch_build_config": build, "runtime": {"preparation_s": 3}},
                    {"model": "yolov7-tiny", "runtime": {"backend": "torch", "preparation": {"s": 1.5}}},
                    "run:\n  id: abc\n  output_dir: outputs\ndataset:\n  batch_size: 2\n")
    found = settings(run)
    assert found["env.torch_build_config"] == (f"sha1:{hashlib.sha1(build.encode()).hexdigest()[:12]} "
                                               f"({len(build)} chars)")
    assert found["summary.runtime.backend"] == "torch" and found["config.dataset.batch_size"] == 2
    assert not [key for key in found if key.startswith(("config.run.", "summary.runtime.preparation",
                                                        "env.runtime"))]


def test_thread_ids_are_no_difference_but_their_masks_are(tmp_path):
    def runtime(*threads):
        return {"runtime": {"pinned_threads": [{"tid": tid, "cpus": cpus} for tid, cpus in threads]}}

    first = settings(write_run(tmp_path / "a", {}, runtime((101, [0]), (102, [1])), ""))
    renumbered = settings(write_run(tmp_path / "b", {}, runtime((202, [1]), (201, [0])), ""))
    moved = settings(write_run(tmp_path / "c", {}, runtime((101, [0]), (102, [0])), ""))
    assert differences(first, renumbered)[0] == []
    assert [row["field"] for row in differences(first, moved)[0]] == ["summary.runtime.pinned_threads"]
