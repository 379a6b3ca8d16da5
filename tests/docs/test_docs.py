"""The README and docs/ stay true: generated reference up to date, every output named, examples run, links resolve."""
import importlib.util
import re

import pytest

from tests.support.paths import ROOT
from utils.commands.compare.timings import COLUMNS as COMPARE_COLUMNS
from utils.checks.accuracy.coco_map import CLASS_COLUMNS
from utils.measure.layers.tables import LAYER_OPS_COLUMNS, LAYER_TIMER_COLUMNS, LAYER_TYPES_COLUMNS
from utils.measure.steps.statistics import STEP_SUMMARY_COLUMNS
from utils.record.steps import STEP_TIMER_COLUMNS
from utils.measure.memory.recorder import MEMORY_COLUMNS, MEMORY_STEP_COLUMNS
from utils.measure.layers.profiler import PROFILER_OPS_COLUMNS
from utils.measure.registry import measurements
from utils.storage import layout
from utils.detections.writer import DETECTION_COLUMNS, SKIPPED_COLUMNS
from utils.commands.sweep.files import FIGURE_COLUMNS
from utils.scenarios.cameras.figures import STREAM_COLUMNS as CAMERA_COLUMNS
from utils.scenarios.cameras.frames import FRAME_COLUMNS as CAMERA_FRAME_COLUMNS

DOCS = ROOT / "docs"


def _builder():
    spec = importlib.util.spec_from_file_location("build_configuration", DOCS / "build_configuration.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configuration_reference_is_generated_from_the_current_schema():
    builder = _builder()
    assert builder.undocumented() == [], "give these keys a Field(description=...) in utils/config/schema.py"
    assert (DOCS / "configuration.md").read_text() == builder.render(), \
        "docs/configuration.md is out of date: run python docs/build_configuration.py"


def test_configuration_reference_lists_every_key_with_its_default():
    text = (DOCS / "configuration.md").read_text()
    for key, default in (("dataset.batch_size", "`1`"), ("benchmark.loadgen.target_latency_percentile", "`0.99`"),
                         ("runtime.calibration.keep_float", "`null`"), ("dataset.path", "(required)")):
        row = next(line for line in text.splitlines() if line.startswith(f"| `{key}` |"))
        assert row.split(" | ")[2] == default
    # What null becomes for each architecture: YOLO keeps its Detect decode in float under int8.
    row = next(line for line in text.splitlines() if line.startswith("| yolo | `yolov7-tiny` |"))
    assert row.split(" | ")[2:4] == ["640", "[0, 0, 0]"] and "[Detect]" in row


def test_every_file_of_the_run_directory_layout_is_in_outputs_doc():
    text = (DOCS / "outputs.md").read_text()
    names = {name: value for name, value in vars(layout).items() if name.isupper() and isinstance(value, str)}
    names.update({f"{m.key} {file}": file for m in measurements() for file in (*m.files, *(p.file for p in m.plots))})
    missing = [f"{name} = {value!r}" for name, value in names.items()
               if f"`{value}`" not in text and f"`{value}/" not in text]
    assert len(names) > 30 and missing == [], f"document these in docs/outputs.md: {missing}"


def test_every_csv_column_is_in_outputs_doc():
    text = (DOCS / "outputs.md").read_text()
    columns = {*STEP_TIMER_COLUMNS, *STEP_SUMMARY_COLUMNS, *DETECTION_COLUMNS, *SKIPPED_COLUMNS, *MEMORY_COLUMNS,
               *MEMORY_STEP_COLUMNS, *PROFILER_OPS_COLUMNS, *LAYER_TIMER_COLUMNS, *LAYER_OPS_COLUMNS,
               *LAYER_TYPES_COLUMNS, *CLASS_COLUMNS, *FIGURE_COLUMNS, *COMPARE_COLUMNS, *CAMERA_COLUMNS,
               *CAMERA_FRAME_COLUMNS, "reference_ap_50_95",
               "tag", "count", "duration_s", "node_id", "node_host"}
    missing = sorted(column for column in columns if f"`{column}`" not in text)
    assert missing == [], f"document these columns in docs/outputs.md: {missing}"


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_readme_is_a_map_and_every_link_resolves():
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) <= 250
    pages = [readme, *sorted(DOCS.glob("*.md"))]
    listed = readme.read_text()
    for page in pages[1:]:
        assert f"docs/{page.name}" in listed, f"the README's Reference list misses docs/{page.name}"
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            assert linked.exists(), f"{page.name} links to {target}, which does not exist"
            if anchor and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.*)$", linked.read_text(), flags=re.M)
                assert anchor in {_slug(h) for h in headings}, f"{page.name} links to {target}: no such heading"


@pytest.mark.slow
def test_layer_timing_notebook_example_runs(monkeypatch, capsys):
    page = (DOCS / "measurement.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    example = next(block for block in blocks if "ModelTiming" in block)
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(example, "docs/measurement.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "Pipeline" in out and "Model/unattributed" in out and "self_ms" in out
    assert len(namespace["detections"]) == 1
    for module in namespace["pipeline"].layer_timing_targets().model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks


def test_the_layout_table_is_generated_from_the_layout_modules():
    spec = importlib.util.spec_from_file_location("build_layouts", DOCS / "build_layouts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = (DOCS / "models.md").read_text()
    assert text == module.render(text), "docs/models.md's layout table is out of date: run python docs/build_layouts.py"
    table = text.split(module.START, 1)[1].split(module.END, 1)[0]
    assert all(f"| `{name}` |" in table for name in module.layouts.names()) and "## Adding a layout" in text
