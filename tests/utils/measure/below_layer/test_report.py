"""utils.measure.below_layer.report: report.html's "Below the layer" section, built from summary.json's native_time,
cpu_counters, kernels and itt keys.

Tested by rendering the section alone into a page from hand-made summaries: what it says when nothing ran,
each part's paragraphs and tables when measured, and the reason it gives when a part is unavailable."""
from utils.measure.below_layer.native_time import CATEGORIES, CATEGORY_TITLES
from utils.storage import layout
from utils.storage.html_page import HtmlPage
from utils.measure.below_layer.report import below_section

PASS = {"pass_index": 0, "wall_ms": 100.0, "cpu_ms": 150.0, "voluntary_switches": 10, "involuntary_switches": 2,
        "cpu_migrations": 1, "minor_faults": 300, "major_faults": 0, "ipc": 1.5, "images": 6}


def section(summary) -> str:
    page = HtmlPage("report")
    below_section(page, summary)
    return page.render()


def test_nothing_measured_points_at_the_settings():
    html = section({"native_time": None, "kernels": {}})
    assert '<h2 id="below">Below the layer</h2>' in html
    assert "Nothing below the layer was measured (see profiling.* in the config)." in html


def test_measured_native_time_lists_lines_and_a_share_table():
    steps = {"forward": {"occurrences": 3, "sampled_ms": 42.0, **{f"{c}_share": 0.25 for c in CATEGORIES}}}
    html = section({"native_time": {"status": "measured", "rate_hz": 97, "samples": 40, "errors": 1,
                                    "lines": ["forward: mostly native"], "steps": steps, "gil": "held"}})
    assert "(40 samples, 1 errors)" in html
    assert "<li>forward: mostly native</li>" in html
    assert all(f">{title}</th>" in html for title in CATEGORY_TITLES.values())
    assert layout.SAMPLES_SPEEDSCOPE in html


def test_unavailable_native_time_says_why():
    html = section({"native_time": {"status": "unavailable", "reason": "py-spy is not installed"}})
    assert "Python against native time: unavailable (py-spy is not installed)." in html
    assert "<table>" not in html


def test_measured_counters_get_a_row_per_pass_and_name_what_was_refused():
    html = section({"cpu_counters": {"status": "measured", "passes": [PASS],
                                     "unavailable": {"LLC misses": "not counted in this VM"}}})
    assert "CPU counters over 1 timed pass(es): CPU 1.50x wall" in html
    assert html.count("<tr>") == 2  # the header and the one pass
    assert "LLC misses: unavailable, not counted in this VM." in html
    assert f"Per thread: {layout.CPU_COUNTERS}." in html


def test_unavailable_counters_are_one_line_without_a_table():
    html = section({"cpu_counters": {"status": "unavailable", "reason": "perf_event_paranoid is 4"}})
    assert "CPU counters: unavailable (perf_event_paranoid is 4)" in html
    assert "<table>" not in html


def test_kernels_name_each_convolution_implementation_or_their_source():
    html = section({"kernels": {"convolution_kernels": {"brg_conv": 3}, "source": "oneDNN verbose",
                                "onednn": {"isa": "AVX-512"}}})
    assert "Convolution kernels (oneDNN verbose; AVX-512): brg_conv (3 layers)." in html
    assert layout.ONEDNN_VERBOSE in html
    html = section({"kernels": {"status": "unavailable", "reason": "the runtime names no kernels"}})
    assert "Kernels: the runtime names no kernels." in html


def test_itt_says_how_to_see_the_tasks():
    html = section({"itt": {"tasks": 12, "api": "torch.profiler.itt"}})
    assert "ITT: 12 tasks (steps and layers of the timed passes) via torch.profiler.itt" in html
    assert "vtune -collect hotspots" in html
