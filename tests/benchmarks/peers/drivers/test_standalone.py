"""benchmarks/peers/drivers/: every driver is a program a peer's own Python runs, where detbench is not installed.
Read here as source, never run: the peers' packages are not in detbench's environment."""
import ast
import sys

import pytest

from benchmarks.peers import venvs

DRIVERS = sorted(venvs.DRIVERS.glob("*.py"))
SIBLINGS = {path.stem for path in DRIVERS}
DETBENCH = {"benchmarks", "datasets", "pipelines", "tests"}  # detbench's own packages no official code shares
OFFICIAL_YOLOV7 = {"run_yolov7_detect", "run_yolov7_test"}  # their `models` and `utils` are the official code's


def imported(path) -> set[str]:
    """The top-level modules a file imports, anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_there_are_drivers():
    assert {"export_common", "run_yolov7_detect", "run_ultralytics_benchmark"} <= SIBLINGS


@pytest.mark.parametrize("path", DRIVERS, ids=lambda path: path.name)
def test_a_driver_imports_nothing_of_detbench(path):
    names = imported(path)
    assert not names & DETBENCH, names & DETBENCH
    if path.stem not in OFFICIAL_YOLOV7:
        assert not names & {"models", "utils"}, "detbench's models/utils are not in a peer's venv"


@pytest.mark.parametrize("path", DRIVERS, ids=lambda path: path.name)
def test_a_driver_runs_no_code_from_strings(path):
    calls = {node.func.id for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name)}
    assert not calls & {"exec", "eval", "compile"}


def test_no_driver_is_named_like_a_module_another_imports():
    """A driver runs with its own folder first on sys.path: a file named `yolox.py` there would be what
    `import yolox` finds."""
    imports = set().union(*(imported(path) for path in DRIVERS)) - SIBLINGS
    assert not SIBLINGS & (imports | set(sys.stdlib_module_names))


def test_every_export_driver_shares_one_prelude():
    exports = [path for path in DRIVERS if path.stem.startswith("export_") and path.stem != "export_common"]
    assert len(exports) == 6 and all("export_common" in imported(path) for path in exports)
