"""utils/ in wings, from the ground up: a wing imports only the wings below it, and no module of the product
imports itself back through others (an import circle). The order is the README's map of where each concern lives."""
import ast
from pathlib import Path

from tests.support.paths import ROOT

# Ground floor first. A wing may import any wing before it in this tuple, never one after it.
WINGS = ("core", "config", "record", "storage", "detections", "measure", "preflight", "checks", "scenarios",
         "reporting", "tracking", "launchers", "assembly", "commands")
PRODUCT = ("utils", "pipelines", "models", "datasets")


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def product_modules() -> dict[str, Path]:
    return {module_of(path): path for top in PRODUCT for path in (ROOT / top).rglob("*.py")}


MODULES = product_modules()


def imported(path: Path) -> set[str]:
    """Every product module the file imports, at any depth of its code (a deferred import is an import too).
    `from package import module` imports that module; `from module import name`, the module."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & MODULES.keys()
            names.update(submodules or {node.module})
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name.split(".")[0] in PRODUCT}


def test_every_wing_of_utils_is_in_the_order():
    wings = {path.name for path in (ROOT / "utils").iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert wings == set(WINGS)


def test_no_wing_imports_a_wing_above_it():
    upward = []
    for module, path in MODULES.items():
        parts = module.split(".")
        if parts[0] != "utils" or len(parts) < 3:
            continue
        floor = WINGS.index(parts[1])
        for name in imported(path):
            target = name.split(".")
            if target[0] == "utils" and len(target) > 1 and target[1] in WINGS and WINGS.index(target[1]) > floor:
                upward.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not upward, "\n".join(sorted(upward))


def test_no_import_circle_among_the_products_modules():
    modules = MODULES
    edges = {module: {name for name in imported(path) if name in modules and name != module}
             for module, path in modules.items()}
    state, circles = {}, []

    def visit(module, trail):
        state[module] = "open"
        for target in sorted(edges[module]):
            if state.get(target) == "open":
                circles.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif target not in state:
                visit(target, trail + [target])
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert not circles, "\n".join(circles)
