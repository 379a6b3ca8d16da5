"""Numbers as people write them (`1e9`, `1_000`, `2.5e-3`) in the YAML file and in --set, with strictness kept
elsewhere; and the closest allowed name suggested for a misspelt key or value."""
from fractions import Fraction

import pytest
import yaml
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from utils.config import strict_yaml
from utils.config.schema import ConfigError, load_config


def config_file(tmp_path, text: str):
    path = tmp_path / "c.yaml"
    path.write_text("dataset:\n  path: datasets/samples\n" + text)
    return path


@pytest.mark.parametrize("text, value", [("1e9", 1_000_000_000), ("1_000", 1000), ("2.5e-3", 0.0025),
                                         ("2.5e3", 2500), ("1.0E+2", 100), (".5e1", 5), ("-1e-3", -0.001),
                                         ("1e400", float("inf"))])
def test_exponent_and_underscore_forms_read_as_numbers(text, value):
    assert strict_yaml.load(text) == value
    assert type(strict_yaml.load(text)) is type(value)


def test_plain_yaml_would_read_1e9_as_text():
    # Why the loader adds a resolver: YAML 1.1 floats need a dot and a signed exponent.
    assert yaml.safe_load("1e9") == "1e9"


@pytest.mark.parametrize("text", ["1e", "e9", "1e9x", "'1e9'", "1e9 ms", "1_0e1_0"])
def test_other_text_stays_text(text):
    assert isinstance(strict_yaml.load(text), str)


def test_numbers_in_the_file_reach_int_and_float_keys(tmp_path):
    config = load_config(config_file(tmp_path, "benchmark:\n  scenario: server\n  loadgen:\n    target_qps: 1e3\n"
                                     "    target_latency_ms: 2.5e2\n    min_query_count: 1_000\n"
                                     "    min_duration_s: 2.5e-3\n"))
    loadgen = config.benchmark.loadgen
    assert (loadgen.target_qps, loadgen.target_latency_ms, loadgen.min_query_count, loadgen.min_duration_s) == \
        (1000.0, 250.0, 1000, 0.0025)


def test_numbers_in_set(tmp_path):
    config = load_config(config_file(tmp_path, ""), ["dataset.limit=1e2", "benchmark.max_time_s=1_200",
                                                     "postprocess.conf_thres=2.5e-1"])
    assert (config.dataset.limit, config.benchmark.max_time_s, config.postprocess.conf_thres) == (100, 1200.0, 0.25)


def test_quoted_number_is_still_refused_where_an_int_belongs(tmp_path):
    with pytest.raises(ConfigError, match=r"dataset.batch_size: must be a whole number written without quotes"):
        load_config(config_file(tmp_path, ""), ["dataset.batch_size='4'"])
    with pytest.raises(ConfigError, match=r"dataset.limit: must be a whole number.*\(got 0.0025\)"):
        load_config(config_file(tmp_path, ""), ["dataset.limit=2.5e-3"])


def test_text_in_a_number_place_names_the_key_and_the_value_as_read(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(config_file(tmp_path, "benchmark:\n  loadgen:\n    target_qps: 10 per second\n"))
    message = str(info.value)
    assert "benchmark.loadgen.target_qps: must be a number" in message
    assert "read as the text '10 per second'" in message
    assert "quotes" not in message


def test_overflowing_exponent_is_refused_by_name(tmp_path):
    with pytest.raises(ConfigError, match=r"benchmark.max_time_s: Input should be a finite number"):
        load_config(config_file(tmp_path, ""), ["benchmark.max_time_s=1e400"])


@pytest.mark.parametrize("override, hint", [
    ("runtime.backnd=openvino", "did you mean `runtime.backend`?"),
    ("runtime.backend=openvno", "did you mean `openvino`?"),
    ("benchmark.loadgen.min_duraton_s=5", "did you mean `benchmark.loadgen.min_duration_s`?"),
    ("model.arch=yolov7-tny", "did you mean `yolov7-tiny`?"),
    ("benchmark.scenario=ofline", "did you mean `offline`?"),
    ("runtime.precision=int9", "did you mean `int8`?"),
    ("datset.path=x", "did you mean `dataset`?"),
])
def test_did_you_mean(tmp_path, override, hint):
    with pytest.raises(ConfigError) as info:
        load_config(config_file(tmp_path, ""), [override])
    assert hint in str(info.value)


def test_no_suggestion_for_an_unrelated_name(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(config_file(tmp_path, ""), ["runtime.zzzqqq=1"])
    assert "did you mean" not in str(info.value) and "check its spelling" in str(info.value)


@hypothesis_settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9), st.integers(-12, 12), st.booleans(), st.sampled_from(["e", "E", "e+"]))
def test_exponent_numbers_read_exactly(mantissa, exponent, underscores, marker):
    digits = f"{mantissa:_}" if underscores else str(mantissa)
    if exponent < 0 and marker == "e+":
        marker = "e"
    value = strict_yaml.load(f"{digits}{marker}{exponent}")
    exact = Fraction(mantissa) * Fraction(10) ** exponent
    if exact.denominator == 1 and exact < 2**63:  # whole values an int key can hold are ints
        assert type(value) is int and value == exact
    else:
        assert type(value) is float and value == pytest.approx(float(exact), rel=1e-15)
