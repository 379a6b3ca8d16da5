"""Values shown in messages stay short, say what was cut, and cost little to show however large they are."""
import time

import yaml

from utils.core.bounded_text import LIMIT, clipped, nesting_depth, shown


def nested(levels: int, width: int) -> list:
    value: list = ["x"] * width
    for _ in range(levels - 1):
        value = [value] * width  # shared, as YAML aliases build it: 9**9 leaves in a few objects
    return value


def test_short_values_are_shown_as_repr():
    assert shown("abc") == "'abc'"
    assert shown([0, 2]) == "[0, 2]"
    assert shown({"a": 1}) == "{'a': 1}"
    assert shown(3.5) == "3.5" and shown(None) == "None"


def test_long_text_says_how_long():
    text = shown("y" * 5000)
    assert len(text) < LIMIT + 40
    assert text.endswith("(text of 5,000 characters)")
    assert shown(b"\0" * 300).endswith("(300 bytes)")


def test_alias_expanded_list_is_described_not_walked():
    started = time.process_time()  # CPU time: other jobs on the cores do not stretch it
    text = shown(nested(9, 9))
    assert time.process_time() - started < 0.5
    assert text.endswith("(a list of 9 items nested 9 deep)")
    assert len(text) < LIMIT + 40


def test_depth_counts_levels_and_stops_on_self_nesting():
    assert nesting_depth([1, [2, [3]]]) == 3
    assert nesting_depth({"a": {"b": 1}}) == 2
    itself: list = []
    itself.append(itself)
    assert "nested more than 20 deep" in shown(itself)


def test_a_wide_mapping_says_how_many_keys():
    text = shown({f"key{i}": i for i in range(500)})
    assert text.endswith("(a mapping of 500 items)") and len(text) < LIMIT + 40


def test_clipped_free_text():
    assert clipped("short") == "short"
    assert clipped("z" * 1000, 50) == "z" * 50 + "... (1,000 characters in all)"


def test_a_yaml_bomb_value_is_shown_quickly():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    data = yaml.safe_load("\n".join(lines))
    assert shown(data["a8"]).endswith("(a list of 9 items nested 9 deep)")
