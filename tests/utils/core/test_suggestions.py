"""utils.core.suggestions: "did you mean ...?" for a misspelt config key or value: the closest allowed name, or nothing.

Tested on the real config schema (utils.config.schema.Config) and plain lists of names: close and unrelated words,
text that is not a name, nested sections, and a value already right."""
import pytest

from utils.config.schema import BenchmarkSection, Config, LoadgenSection
from utils.core.suggestions import closest, key_hint, section_model, value_hint


def test_closest_finds_a_misspelling_and_nothing_for_an_unrelated_word():
    assert closest("backnd", ["backend", "precision", "threads"]) == "backend"
    assert closest("zzzz", ["backend", "precision"]) is None


@pytest.mark.parametrize("word", [4, None, "", "b" * 201])
def test_closest_ignores_what_is_not_a_short_name(word):
    assert closest(word, ["b" * 201, "4"]) is None


def test_section_model_follows_nested_sections_and_stops_at_a_value():
    assert section_model(Config, ()) is Config
    assert section_model(Config, ("benchmark",)) is BenchmarkSection
    assert section_model(Config, ("benchmark", "loadgen")) is LoadgenSection
    assert section_model(Config, ("benchmark", "warmup")) is None
    assert section_model(Config, ("nosuch",)) is None


def test_key_hint_names_the_whole_dotted_key():
    assert key_hint(Config, ("runtime", "backnd")) == "; did you mean `runtime.backend`?"
    assert key_hint(Config, ("benchmark", "loadgen", "mdoe")) == "; did you mean `benchmark.loadgen.mode`?"
    assert key_hint(Config, ("datset",)) == "; did you mean `dataset`?"


def test_key_hint_is_empty_without_a_close_key_or_section():
    assert key_hint(Config, ("runtime", "zzzz")) == ""
    assert key_hint(Config, ("nosuch", "backend")) == ""


def test_value_hint_suggests_only_another_value():
    assert value_hint("openvno", ["torch", "openvino"]) == "; did you mean `openvino`?"
    assert value_hint("torch", ["torch", "openvino"]) == ""
    assert value_hint("tf", ["torch", "openvino"]) == ""
