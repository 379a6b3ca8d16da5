"""The pure parts of TensorBoard and MLflow output: flattening, headline figures, hparam values, URIs."""
import pytest

from utils.config.schema import ConfigError, load_config
from utils.tracking.mlflow_runs import artifact_location, param_text
from utils.reporting.run_figures import flatten, headline_figures, weights_kind
from utils.reporting.tensorboard_events import hparam_values

CONFIG = "configs/samples_tiny.yaml"


def test_flatten_dots_nested_keys_and_keeps_lists_as_json():
    assert flatten({"a": {"b": 1, "c": {"d": None}}, "e": [0, 2], "f": "x"}) == {
        "a.b": 1, "a.c.d": None, "e": "[0, 2]", "f": "x"}


def test_headline_figures_leave_out_what_was_not_measured():
    summary = {"pipeline_latency": {"images_per_s": 4.0, "p50_ms_per_image": 250.0, "ms_per_image": None},
               "forward": {"p50_ms_per_image": 200}, "memory": {"status": "unavailable"},
               "energy": {"status": "unavailable", "joules_per_image": {"package": 1.0}}, "images_timed": 8,
               "random_weights": True}
    assert headline_figures(summary) == {"images_per_s": 4.0, "p50_ms_per_image": 250.0,
                                               "forward_p50_ms_per_image": 200.0, "images_timed": 8.0}
    measured = dict(summary, pipeline_latency=dict(summary["pipeline_latency"], p90_ms_per_image=300.0), energy={"status": "measured", "joules_per_image": {"package": 1.5},
                                     "average_watts": {"package": 6.0}},
                    agreement={"verdict": "equal", "strict": {"recall": 1.0, "precision": 0.99},
                               "raw_output": {"max_abs": 0.01}})
    figures = headline_figures(measured)
    assert figures["joules_per_image_package"] == 1.5 and figures["average_watts_package"] == 6.0
    assert figures["agreement_strict_precision"] == 0.99 and figures["p90_ms_per_image"] == 300.0
    assert weights_kind(summary) == "random" and weights_kind({"random_weights": False}) == "checkpoint"


def test_hparam_values_and_params_spell_null_and_booleans_as_the_yaml_does():
    assert hparam_values({"a": None, "b": True, "c": 3, "d": "x"}) == {"a": "null", "b": "true", "c": 3, "d": "x"}
    assert [param_text(v) for v in (None, False, 4, 0.5, "yolov7")] == ["null", "false", "4", "0.5", "yolov7"]


def test_sqlite_artifacts_go_beside_the_database(tmp_path):
    assert artifact_location(f"sqlite:///{tmp_path}/db/mlflow.db") == (tmp_path / "db" / "mlartifacts").as_uri()
    assert artifact_location("http://server:5000") is None


@pytest.mark.parametrize("uri, says", [
    ("ftp://host/x", "scheme 'ftp' is not a store"),
    ("outputs/mlruns", "file store, which MLflow 3 refuses"),
    ("sqlite://", "needs a database file"),
])
def test_tracking_uri_is_checked_when_the_config_loads(uri, says):
    with pytest.raises(ConfigError, match="outputs.mlflow.tracking_uri") as error:
        load_config(CONFIG, [f"outputs.mlflow.tracking_uri={uri}"])
    assert says in str(error.value)
    assert load_config(CONFIG, ["outputs.mlflow.tracking_uri=http://server:5000"]).outputs.mlflow.experiment == "detbench"
