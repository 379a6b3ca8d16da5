"""report.html of a real yolov7-tiny run: parsed for its figures, links and images, and loaded in a real headless
Chromium (Debian's `chromium` package) for console errors, decoded images and the headline in the rendered DOM."""
import base64
import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest

from benchmark import main
from tests.support.paths import ROOT
from utils.config.schema import ConfigError, load_config
from utils.record.run_record import RunIdentity, RunRecord, Status
from utils.storage.run_directory import RunDirectory
from utils.reporting.run_writer import RunWriter

CHROMIUM = shutil.which("chromium")
NO_CHROMIUM = ("Debian's chromium package is not installed, so report.html cannot be checked in a real browser: "
               "install it with `apt-get install -y chromium` (.ci/run does)")
# Injected into a copy of the page under test: records failed loads and script errors, then, once the page has
# loaded, each image's decoded size, into a <pre> that --dump-dom prints.
CHECK_SCRIPT = """<script>
var detbenchErrors = [];
window.addEventListener("error", function (event) {
  detbenchErrors.push(event.message || ("failed to load " + (event.target.src || event.target.tagName)));
}, true);
window.addEventListener("load", function () {
  var out = document.createElement("pre");
  out.id = "detbench-check";
  out.textContent = JSON.stringify({errors: detbenchErrors, images: Array.prototype.map.call(
    document.images, function (img) { return [img.complete, img.naturalWidth, img.naturalHeight]; })});
  document.body.appendChild(out);
});
</script>"""


class Page(HTMLParser):
    """The parts of a report the checks need: headline figures, src/href values, images, SVG hover texts."""

    def __init__(self, markup: str):
        super().__init__()
        self.figures: dict[str, str] = {}  # label -> data-value
        self.links: list[str] = []
        self.images: list[str] = []
        self.titles: list[str] = []
        self.banners: list[str] = []
        self._value, self._text = None, None
        self.check = None
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.links += [attrs[name] for name in ("src", "href") if name in attrs]
        if tag == "img":
            self.images.append(attrs["src"])
        if "figure" in (attrs.get("class") or "").split() and "data-value" in attrs:
            self._value = attrs["data-value"]
        if tag == "pre" and attrs.get("id") == "detbench-check":
            self._text = "check"
        elif tag == "title" or attrs.get("class") in ("label", "banner"):
            self._text = attrs.get("class") or tag
        else:
            self._text = None

    def handle_data(self, data):
        if self._text == "label" and self._value is not None:
            self.figures[data] = self._value
            self._value = None
        elif self._text == "title":
            self.titles.append(data)
        elif self._text == "banner":
            self.banners.append(data)
        elif self._text == "check":
            self.check = json.loads(data)
        self._text = None


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    outputs = tmp_path_factory.mktemp("outputs")
    code = main(["--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--set", "preprocess.img_size=160",
                 "--set", "dataset.limit=2", "--set", "dataset.batch_size=2", "--set", "benchmark.repeats=2",
                 "--set", "benchmark.profiler=true", "--set", f"dataset.path={ROOT / 'datasets' / 'samples'}",
                 "--set", f"run.output_dir={outputs}", "--set", "run.id=report"])
    assert code == 0
    run_dir = outputs / "report"
    return run_dir, json.loads((run_dir / "summary.json").read_text())


def headline_expected(summary: dict) -> dict[str, float]:
    latency = summary["pipeline_latency"]
    return {"images/s (pipeline)": latency["images_per_s"], "p50 ms per image": latency["p50_ms_per_image"],
            "p90 ms per image": latency["p90_ms_per_image"],
            "forward p50 ms per image": summary["forward"]["p50_ms_per_image"],
            "peak PSS (MiB)": summary["memory"]["peak_pss_mib"]}


@pytest.mark.slow
def test_report_holds_the_summary_figures_and_nothing_from_a_network(run):
    run_dir, summary = run
    assert summary["report"] == "report.html"
    markup = (run_dir / "report.html").read_text()
    page = Page(markup)
    for label, value in headline_expected(summary).items():
        assert float(page.figures[label]) == value, label
    assert all(link.startswith(("data:", "#")) for link in page.links), page.links
    assert not re.search(r"https?://", markup)
    assert len(page.images) >= 2  # the step latency and memory plots
    for source in page.images:
        encoded = source.removeprefix("data:image/png;base64,")
        image = cv2.imdecode(np.frombuffer(base64.b64decode(encoded), np.uint8), cv2.IMREAD_COLOR)
        assert image is not None and image.shape[0] > 50 and image.shape[1] > 50
    assert any("RANDOM WEIGHTS (seed 0)" in text for text in page.banners)
    assert all(html.escape(warning) in markup for warning in summary["warnings"])
    assert "Not measured" in markup or summary["energy"]["status"] == "measured"
    assert "ui.perfetto.dev" in markup and "chrome://tracing" in markup and "<code>trace.json</code>" in markup
    # The steps table shows both spreads as percentages: over images, and the same batch over the two passes.
    pipeline = pd.read_csv(run_dir / "steps_summary.csv").set_index("step").loc["pipeline"]
    cells = re.findall(r'<td class="">([^<]*)</td>', markup)
    assert f"{pipeline['spread_per_image']:.1%}" in cells and f"{pipeline['repeat_spread']:.1%}" in cells


@pytest.mark.slow
def test_layer_bars_carry_path_type_calls_and_shapes_on_hover(run):
    run_dir, _ = run
    page = Page((run_dir / "report.html").read_text())
    layers = pd.read_csv(run_dir / "layer_timer.csv")
    # The network's own layers (unattributed rows have no shapes): at 160 px the letterbox or NMS around it can
    # outweigh any one of them, and their shapes are images and lists, not batched maps.
    modules = layers[(layers["depth"] >= 2) & (layers["type"] != "unattributed")
                     & ~layers["parent"].isin(["Preprocessing", "Postprocessing"])]
    heaviest = modules.sort_values("self_ms", ascending=False).iloc[0]
    hover = next(title for title in page.titles if title.startswith(f"path {heaviest['path']}\n"))
    assert f"type {heaviest['type']}" in hover and f"calls {heaviest['calls']}" in hover
    # which layer is heaviest depends on the machine: a conv (one input) or Detect (three inputs, one output)
    assert re.search(r"shapes 2x\d+x\d+x\d+(, 2x\d+x\d+x\d+)* -> 2(x\d+)+", hover), hover
    types = pd.read_csv(run_dir / "layer_types.csv")
    assert any(title.startswith(f"type {types['type'][0]}\n") and "heaviest call paths" in title
               for title in page.titles)


def identity() -> RunIdentity:
    return RunIdentity(run_id="empty", config_file="x.yaml", family="yolo", arch="yolov7-tiny",
                       weights="random (seed 0)", random_weights=True, seed=0, img_size=160, batch_size=1,
                       runtime={"backend": "torch", "precision": "fp32"}, step_order=("pipeline", "forward"))


def test_a_run_stopped_before_any_batch_still_gets_a_report_and_the_key_turns_it_off(tmp_path):
    for name, report in (("on", True), ("off", False)):
        run_dir = RunDirectory(tmp_path, name)
        run_dir.create()
        record = RunRecord(identity())
        record.finish(Status.INTERRUPTED, "SIGINT")
        summary = RunWriter(run_dir, plots=True, report=report).write_record(record)
        assert (run_dir.path / "report.html").exists() is report
        assert ("report" in summary) is report
    markup = (tmp_path / "on" / "report.html").read_text()
    assert "interrupted (SIGINT)" in markup and "No timed batch was recorded" in markup
    assert Page(markup).figures == {}  # n/a figures carry no value to mistake for a measurement


def test_outputs_report_defaults_on_and_takes_booleans_only():
    config = ROOT / "configs" / "samples_tiny.yaml"
    assert load_config(config).outputs.report is True
    assert load_config(config, ["outputs.report=false"]).outputs.report is False
    with pytest.raises(ConfigError, match="outputs.report"):
        load_config(config, ["outputs.report=sometimes"])


def chromium_check(page: Path, work: Path) -> tuple[dict, list[str], str]:
    """Loads a copy of `page` with CHECK_SCRIPT in headless Chromium: (the check, console lines, the DOM)."""
    checked = work / f"checked_{page.name}"
    checked.write_text(page.read_text().replace("<head>", "<head>" + CHECK_SCRIPT, 1))
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={work / 'profile'}",
         "--enable-logging=stderr", "--v=0", "--dump-dom", checked.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    console = [line for line in result.stderr.splitlines() if re.search(r"CONSOLE[:(]", line)]
    dom = Page(result.stdout)
    assert dom.check is not None, "the check script did not run: " + result.stderr[-2000:]
    return dom.check, console, result.stdout


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_chromium_check_catches_a_broken_page(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"><title>x</title></head><body>'
                      '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAE=" alt="truncated">'
                      '<script>console.error("deliberate"); notDefined();</script></body></html>')
    check, console, _ = chromium_check(broken, tmp_path)
    assert any("deliberate" in line for line in console)
    assert any("notDefined" in error for error in check["errors"])
    assert check["images"] == [[True, 0, 0]]


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_report_in_chromium_has_no_console_error_decodes_every_image_and_shows_the_headline(run, tmp_path):
    run_dir, summary = run
    report = run_dir / "report.html"
    check, console, dom = chromium_check(report, tmp_path)
    assert console == [] and check["errors"] == []
    assert len(check["images"]) == len(Page(report.read_text()).images) >= 2
    assert all(complete and width > 0 and height > 0 for complete, width, height in check["images"])
    rendered = Page(dom)
    for label, value in headline_expected(summary).items():
        assert float(rendered.figures[label]) == value, label


def test_each_measurement_section_follows_the_one_it_names_and_an_unknown_one_is_refused(monkeypatch):
    from tests.support import fake_measurement as fake
    from utils.measure.contract import PageSection
    from utils.measure import registry
    from utils.reporting.run_report import page_sections

    assert [entry.anchor for entry in page_sections()] == ["steps", "cameras", "layers", "memory", "energy",
                                                          "agreement", "accuracy", "environment", "trace", "below"]
    fake.registered(monkeypatch)
    assert [entry.anchor for entry in page_sections()][3:6] == ["memory", "energy", "batches"]
    lost = fake.fake_measurement(page=PageSection("x", "X", after="nowhere", render=fake.render))
    monkeypatch.setattr(registry, "MEASUREMENTS", registry.MEASUREMENTS[:-1] + (lost,))
    with pytest.raises(ValueError, match="no section nowhere for batches_seen to follow"):
        page_sections()
