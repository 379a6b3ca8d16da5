"""How a camera run reads, from summary.json `cameras` alone: the console's lines, the headline, report.html's
section and the figures runs are compared by."""
from tests.support.helpers import section_shape_errors
from utils.record.sections import CamerasSection
from utils.scenarios.cameras.report import console_lines, figures, headline, headline_cells, page_section
from utils.storage.html_page import HtmlPage

ROW = {"stream": "cam0", "source": "rtsp://admin:***@cam/1", "arrived": 60, "decoded": 60, "delivered": 60,
       "detected": 45, "dropped": 15, "not_decoded": 0, "unfinished": 0, "drop_share": 0.25, "fps_delivered": 15.0,
       "fps_detected": 11.25, "latency_p50_ms": 80.0, "latency_p90_ms": 120.0, "latency_p99_ms": 150.0,
       "latency_max_ms": 160.0, "decode_cpu_ms_per_frame": 3.0, "preprocess_cpu_ms_per_frame": 1.0,
       "forward_cpu_ms_per_frame": 40.0, "postprocess_cpu_ms_per_frame": 2.0, "cpu_ms_per_frame": 46.0,
       "corrupt_packets": 0, "concealed_frames": 0, "connections": 2, "gaps": 1, "gap_s": 1.5,
       "ended": "stopped"}
SECTION: CamerasSection = {
    "status": "measured", "definition": "A frame is measured when ...", "cpu_definition": "CPU milliseconds ...",
    "settings": {"cameras": 1, "detector": "shared", "when_busy": "drop", "warmup_s": 2.0},
    "window_s": 4.0, "drain_s": 0.1, "window": {"start_s": 1.0, "end_s": 5.0}, "streams": [ROW],
    "total": {"detected": 45, "delivered": 60, "fps_detected": 11.25, "drop_share": 0.25,
              "latency_ms": {"p50": 80.0, "p90": 120.0, "p99": 150.0, "max": 160.0, "mean": 90.0},
              "cpu_ms_per_frame": {"decode": 3.0, "preprocess": 1.0, "forward": 40.0, "postprocess": 2.0,
                                   "cpu": 46.0}},
    "gaps": [{"stream": "cam0", "start_s": 2.0, "end_s": 3.5, "reason": "no answer for data within 5 s",
              "resumed": True, "attempts": 1}],
    "files": {"streams": "cameras.csv"}}


def test_the_section_is_of_its_declared_shape():
    assert section_shape_errors(SECTION, CamerasSection) == []


def test_the_headline_and_the_console_say_what_was_served():
    assert headline(SECTION) == "1 camera(s): 11.25 frames/s detected, latency p99 150.0 ms, 25.0% dropped"
    lines = console_lines(SECTION)
    assert lines[1] == ("    cam0: 60 arrived, 60 decoded, 45 detected, 15 dropped (25.0%); 11.25 fps; latency p50 "
                        "80.0 p90 120.0 p99 150.0 ms; CPU ms/frame decode 3.0, preprocess 1.0, forward 40.0, "
                        "postprocess 2.0; 1 gap(s), 1.50 s")
    assert lines[2].startswith("    all: 45 of 60 frames detected (11.25 frames/s)")
    unmeasured = {"status": "unavailable", "reason": "the run stopped before its window closed", "settings": {}}
    assert console_lines(unmeasured)[-1] == "    not measured: the run stopped before its window closed"
    assert headline(unmeasured).startswith("cameras: not measured")


def test_the_figures_runs_are_compared_by():
    assert figures(SECTION)["cameras_latency_p99_ms"] == 150.0 and figures(SECTION)["cameras_cpu_ms_per_frame"] == 46.0
    assert figures({"status": "unavailable"}) == {} and figures(None) == {}
    assert headline_cells(SECTION)[0] == ("cameras: frames/s detected", 11.25)


def test_the_page_section_lists_every_camera_and_gap():
    page = HtmlPage("run")
    page_section(page, SECTION, {})
    html = page.render()
    assert 'id="cameras"' in html and "rtsp://admin:***@cam/1" in html and "no answer for data within 5 s" in html
