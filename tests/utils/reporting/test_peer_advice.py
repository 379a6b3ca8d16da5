"""OpenVINO's own choice beside what a run ran (utils/reporting/peer_advice.py): each difference as a --set that runs
the peer's choice in detbench, an int8 run told to keep its float layers where OpenVINO would, and no advice where
both agree."""
from utils.reporting.peer_advice import peer_lines, peer_settings


PEER = {"inference_precision": "bf16", "streams": 2, "threads": 2, "source": "test"}


def test_peer_settings_name_each_difference():
    ran = {"precision": "fp32", "streams": 1, "threads": 1, "openvino_defaults": PEER}
    assert peer_settings(ran, "single_stream") == ["runtime.precision=bf16", "runtime.streams=2",
                                                   "benchmark.scenario=offline", "runtime.threads=2"]
    assert peer_settings(ran, "offline") == ["runtime.precision=bf16", "runtime.streams=2", "runtime.threads=2"]
    same = {"precision": "bf16", "streams": 2, "threads": 2, "openvino_defaults": PEER}
    assert peer_settings(same, "offline") == []
    assert peer_settings({"precision": "fp32"}, "offline") is None  # not an OpenVINO run


def test_an_int8_run_is_told_to_keep_its_float_layers_where_openvino_would():
    int8 = {"precision": "int8", "streams": 2, "threads": 2, "openvino_defaults": PEER}
    assert peer_settings(int8, "offline") == ["runtime.precision=int8+bf16"]
    assert peer_settings({**int8, "precision": "int8+bf16"}, "offline") == []
    at_f32 = {**PEER, "inference_precision": "f32"}
    assert peer_settings({**int8, "openvino_defaults": at_f32}, "offline") == []
    assert peer_settings({**int8, "precision": "int8+bf16", "openvino_defaults": at_f32}, "offline") == [
        "runtime.precision=int8"]


def test_peer_lines_state_both_and_one_line_to_run_the_peers_choice():
    ran = {"precision": "fp32", "streams": 1, "threads": 2, "openvino_defaults": PEER}
    lines = peer_lines(ran, "single_stream")
    assert lines[0] == ("  openvino: ran fp32, 1 stream, 2 threads; OpenVINO's own choice on this CPU "
                        "(-hint throughput): bf16, 2 streams, 2 threads")
    assert lines[1].startswith("  to run OpenVINO's choice in detbench: --set runtime.precision=bf16 "
                               "--set runtime.streams=2 --set benchmark.scenario=offline")
    assert len(peer_lines({**ran, "precision": "bf16", "streams": 2}, "offline")) == 1  # the same: no advice
