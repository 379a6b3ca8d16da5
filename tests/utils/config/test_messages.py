"""utils.config.messages: a config's mistakes as readable messages: YAML syntax errors with line and column, and
pydantic's validation errors as one line per key saying what to write instead and which file or --set gave it.

Tested on a small strict schema of the same shape as the real one: each kind of error's line, where the value is
blamed (the file, or the last --set that covers the key), the cap on listed errors, and YAML errors' positions."""
from typing import Literal

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from utils.config.messages import MAX_LISTED_ERRORS, describe_errors, yaml_error


class Runtime(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    backend: Literal["torch", "openvino"] = "torch"
    threads: int = 1
    scale: float = 1.0


class Dataset(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    path: str
    batch_size: int = 1
    images: int = 10

    @model_validator(mode="after")
    def _batch_fits(self):
        if self.batch_size > self.images:
            raise ValueError("dataset.batch_size is larger than dataset.images; lower dataset.batch_size")
        return self


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    runtime: Runtime = Runtime()
    dataset: Dataset


def message(data, overrides=None) -> str:
    with pytest.raises(ValidationError) as caught:
        Config.model_validate(data)
    return describe_errors(caught.value, "configs/x.yaml", overrides or {}, Config)


def test_a_misspelt_key_gets_the_closest_name():
    assert message({"runtime": {"backnd": "torch"}, "dataset": {"path": "d"}}) == (
        "invalid configuration in configs/x.yaml:\n"
        "  runtime.backnd: unknown key (value 'torch'); did you mean `runtime.backend`?")


def test_an_unknown_key_with_no_close_name_points_at_the_reference():
    assert message({"zzz": 1, "dataset": {"path": "d"}}).endswith(
        "  zzz: unknown key (value 1); check its spelling against docs/configuration.md")


def test_a_missing_required_key_is_named():
    assert message({}) == "invalid configuration in configs/x.yaml:\n  dataset: required key is missing"


def test_a_quoted_number_is_told_to_lose_its_quotes():
    assert message({"runtime": {"threads": "4"}, "dataset": {"path": "d"}}).endswith(
        "  runtime.threads: must be a whole number written without quotes, e.g. 4 (got '4')")


def test_text_where_a_number_belongs_says_what_it_was_read_as():
    assert message({"runtime": {"scale": "half"}, "dataset": {"path": "d"}}).endswith(
        "  runtime.scale: must be a number, e.g. 0.5 (1e9, 1_000 and 2.5e-3 are numbers too); it was read as "
        "the text 'half'")


def test_a_wrong_choice_gets_the_closest_allowed_value():
    assert "  runtime.backend: Input should be 'torch' or 'openvino'; did you mean `openvino`? (got 'openvno')" in \
        message({"runtime": {"backend": "openvno"}, "dataset": {"path": "d"}})


def test_a_value_from_a_set_is_blamed_on_that_set_and_the_rest_on_the_file():
    text = message({"runtime": {"threads": "4", "backend": "tf"}, "dataset": {"path": "d"}},
                   {("runtime", "threads"): "runtime.threads='4'"})
    assert text.splitlines() == [
        "invalid configuration:",
        "  runtime.backend: Input should be 'torch' or 'openvino' (got 'tf') (in configs/x.yaml)",
        "  runtime.threads: must be a whole number written without quotes, e.g. 4 (got '4') "
        "(from --set runtime.threads='4')"]


def test_the_last_set_covering_a_key_wins():
    text = message({"runtime": {"threads": "4"}, "dataset": {"path": "d"}},
                   {("runtime",): "runtime={threads: '8'}", ("runtime", "threads"): "runtime.threads='4'"})
    assert text.endswith("(from --set runtime.threads='4')")


def test_a_whole_section_check_blames_the_set_of_a_key_it_names():
    text = message({"dataset": {"path": "d", "batch_size": 20}}, {("dataset", "batch_size"): "dataset.batch_size=20"})
    assert text == ("invalid configuration:\n  dataset: dataset.batch_size is larger than dataset.images; lower "
                    "dataset.batch_size (from --set dataset.batch_size=20)")


def test_only_the_first_errors_are_listed():
    extra = {f"key{i}": i for i in range(MAX_LISTED_ERRORS + 3)}
    lines = message({**extra, "dataset": {"path": "d"}}).splitlines()
    assert len(lines) == 1 + MAX_LISTED_ERRORS + 1
    assert lines[-1] == "  ... and 3 more problems, listed once these are fixed"


def yaml_failure(text):
    with pytest.raises(yaml.YAMLError) as caught:
        yaml.safe_load(text)
    return yaml_error(caught.value, text)


def test_a_yaml_syntax_error_gives_line_and_column_of_the_problem_and_its_context():
    assert yaml_failure("a: 1\nb: [1, 2\nc: 3\n") == (
        "expected ',' or ']', but got ':' at line 3, column 2 (while parsing a flow sequence that starts at line "
        "2, column 4)")


def test_a_character_yaml_forbids_is_located():
    assert yaml_failure("a: 1\nb: x\x07y\n") == "character '\\x07' is not allowed at line 2, column 5"
