"""Hand-edited configs: a key twice, an alias bomb, a folder or a huge file are refused at once, by name."""
import time

import pytest
import yaml

from benchmark import main
from utils.config.schema import MAX_CONFIG_BYTES, ConfigError, load_config
from utils.config.strict_yaml import MAX_VALUES, StrictYamlError, expanded_size, load


def alias_bomb(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines)


def refused(tmp_path, text: str, *overrides: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, list(overrides))
    return str(info.value)


def test_second_section_of_the_same_name_is_refused_with_both_lines(tmp_path):
    message = refused(tmp_path, "model:\n  arch: yolov7-tiny\n  fuse: false\ndataset:\n  path: x\nmodel:\n"
                                "  weights: null\n")
    assert "key 'model' appears twice in one mapping, at line 1 and at line 6" in message


def test_duplicate_key_inside_a_section(tmp_path):
    message = refused(tmp_path, "dataset:\n  path: x\n  batch_size: 2\n  batch_size: 4\n")
    assert "key 'batch_size' appears twice" in message and "line 3 and at line 4" in message


def test_duplicate_key_in_a_set_value(tmp_path):
    message = refused(tmp_path, "dataset:\n  path: x\n", "dataset={path: a, path: b}")
    assert "--set 'dataset={path: a, path: b}'" in message and "key 'path' appears twice" in message


def test_merge_keys_may_be_overridden():
    assert load("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  x: 3\n")["m"] == {"x": 3, "y": 2}


def test_alias_bomb_is_refused_within_a_second_and_briefly(tmp_path):
    text = alias_bomb(9) + "\ndataset:\n  path: *a8\n  extra: *a8\nunknown: *a8\n"
    started = time.process_time()  # CPU time: other jobs on the cores do not stretch it
    message = refused(tmp_path, text)
    assert time.process_time() - started < 1.0
    assert f"more than {MAX_VALUES:,} values once its aliases" in message
    assert len(message) < 400


def test_small_alias_use_is_still_allowed(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("run: {seed: &s 3}\ndataset: {path: datasets/samples, batch_size: *s}\n")
    assert load_config(path).dataset.batch_size == 3


def test_expanded_size_counts_shared_nodes_once_per_use():
    root = yaml.compose(alias_bomb(3), Loader=yaml.SafeLoader)
    # a mapping of 3 keys; a0: 1 + 9, a1: 1 + 9 * 10, a2: 1 + 9 * 91
    assert expanded_size(root, 10**9) == 1 + 3 + 10 + 91 + 820
    assert expanded_size(root, 100) == 101


def test_self_containing_alias_is_refused():
    with pytest.raises(StrictYamlError, match="contains it"):
        load("a: &a [1, *a]")


def test_unknown_keys_echo_a_bounded_value(tmp_path):
    big = "[" + ", ".join(["[1, 2, 3, 4, 5, 6, 7, 8]"] * 200) + "]"
    message = refused(tmp_path, f"dataset:\n  path: x\n  huge: {big}\n")
    assert "dataset.huge: unknown key" in message and "(a list of 200 items nested 2 deep)" in message
    assert len(message) < 400


def test_many_problems_are_listed_up_to_a_bound(tmp_path):
    text = "dataset:\n  path: x\n" + "".join(f"wrong{i}: 1\n" for i in range(500))
    message = refused(tmp_path, text)
    assert message.count("unknown key") == 20 and "and 480 more problems" in message


def test_a_long_set_is_shown_shortened(tmp_path):
    message = refused(tmp_path, "dataset:\n  path: x\n", "dataset.batch_size=" + "9" * 100000 + "x")
    assert "dataset.batch_size" in message and len(message) < 600


def test_folder_as_config_is_called_a_folder(tmp_path, capsys):
    assert main(["--config", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"--config {tmp_path} is a folder, not a file" in err and "Traceback" not in err


def test_oversized_config_is_refused_before_parsing(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("# " + "x" * MAX_CONFIG_BYTES + "\ndataset: {path: x}\n")
    with pytest.raises(ConfigError, match="more than a config can need"):
        load_config(path)


@pytest.mark.parametrize("key", ["dataset.path", "model.weights", "runtime.cache_dir", "run.output_dir"])
def test_paths_no_file_system_can_hold_are_refused(tmp_path, key):
    message = refused(tmp_path, "dataset:\n  path: x\n", f"{key}={'x' * 5000}")
    assert f"{key}: is too long for a path on this system" in message and "(text of 5,000 characters)" in message
    assert len(message) < 600
    assert "contains a NUL character" in refused(tmp_path, "dataset:\n  path: x\n", f'{key}="a\\0b"')


def test_run_id_longer_than_a_folder_name(tmp_path):
    assert "longer than a directory name can be" in refused(tmp_path, "dataset:\n  path: x\n", "run.id=" + "r" * 256)
