"""The project's rule on signatures, kept by reading the product's source (its syntax tree; nothing is imported):
no function takes more than MAX_PARAMETERS parameters (self and cls not counted; *args and **kwargs count one
each) but a typed object that says what it holds; no parameter or field `config` is left untyped or typed Any;
and below the composition root (utils/assembly/composition.py) nothing takes the whole Config, only the
sections it reads (utils/record/built_run.py).

It lives at the root of tests/ as the rule covers the whole product: utils/, pipelines/, models/, datasets/ and
benchmark.py."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator

from tests.support.paths import ROOT

MAX_PARAMETERS = 7
PRODUCT = ("utils", "pipelines", "models", "datasets", "benchmark.py")
# Where the whole Config may be taken: its own wing, the composition root, and what stands above the root.
WHOLE_CONFIG_READERS = ("utils/config/", "utils/assembly/composition.py", "utils/commands/", "utils/launchers/",
                        "benchmark.py")


def product_files() -> Iterator[Path]:
    for name in PRODUCT:
        path = ROOT / name
        yield from [path] if path.is_file() else sorted(path.rglob("*.py"))


def _is_any(annotation: ast.expr | None) -> bool:
    """An annotation that says nothing: none at all, Any or typing.Any."""
    return (annotation is None or (isinstance(annotation, ast.Name) and annotation.id == "Any")
            or (isinstance(annotation, ast.Attribute) and annotation.attr == "Any"))


def _is_whole_config(annotation: ast.expr | None) -> bool:
    """utils.config.schema.Config, alone or inside (Optional[Config], Config | None ...)."""
    return annotation is not None and any(
        (isinstance(part, ast.Name) and part.id == "Config") or (isinstance(part, ast.Attribute) and part.attr == "Config")
        for part in ast.walk(annotation))


def _definitions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, node) of every function, and of every annotated name in a class body, in source order."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + child.name
            if not isinstance(child, ast.ClassDef):
                yield name, child
            yield from _definitions(child, name + ".")
        elif isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
            yield prefix + child.target.id, child
        elif not isinstance(child, ast.expr):  # into if/try/with blocks, not into expressions
            yield from _definitions(child, prefix)


def problems(source: str, name: str) -> list[str]:
    """What in one module breaks the rule, one line each, `name:line` and the function or field first."""
    found = []
    may_take_config = name.startswith(WHOLE_CONFIG_READERS)
    for qualified, node in _definitions(ast.parse(source, name)):
        where = f"{name}:{node.lineno} {qualified}"
        if isinstance(node, ast.AnnAssign):
            if node.target.id == "config" and _is_any(node.annotation):
                found.append(f"{where}: field `config` typed Any: hold the typed sections it reads")
            continue
        arguments = node.args
        named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        counted = [a for a in named if a.arg not in ("self", "cls")] + [
            a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        if len(counted) > MAX_PARAMETERS:
            found.append(f"{where}: {len(counted)} parameters (at most {MAX_PARAMETERS}: pass a typed object that "
                         "says what it holds)")
        for argument in named:
            if argument.arg == "config" and _is_any(argument.annotation):
                found.append(f"{where}: `config` typed Any: take the typed sections it reads")
            if _is_whole_config(argument.annotation) and not may_take_config:
                found.append(f"{where}: the whole Config below the composition root: take the sections it reads")
    return found


def test_no_product_function_takes_too_many_parameters_or_an_untyped_config():
    broken = [line for path in product_files()
              for line in problems(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert not broken, "\n".join(broken)


def test_the_check_names_each_kind_of_break():
    source = '''
from typing import Any
import typing

def wide(a, b, c, d, e, f, g, h): ...
def seven(self, a, b, c, d, e, f, *rest): ...
def bagged(a, b, c, d, e, f, *rest, **options): ...
def untyped(config): ...
def loose(config: typing.Any): ...
def whole(sections, config: Optional[Config]): ...
class Method:
    def fine(self, a, b, c, d, e, f, g): ...
    def wide(cls, a, b, c, d, e, f, g, h): ...
if True:
    @dataclass
    class Held:
        config: Any
        sections: Any
'''
    found = problems(source, "utils/checks/example.py")
    assert [line.split(": ")[0] for line in found] == [
        "utils/checks/example.py:5 wide", "utils/checks/example.py:7 bagged", "utils/checks/example.py:8 untyped",
        "utils/checks/example.py:9 loose", "utils/checks/example.py:10 whole", "utils/checks/example.py:13 Method.wide",
        "utils/checks/example.py:17 Held.config"]
    assert "8 parameters (at most 7" in found[0] and "the whole Config below the composition root" in found[4]
    # The composition root reads the whole config; so do the commands above it.
    assert problems("def run_sections(config: Config): ...", "utils/assembly/composition.py") == []
    assert problems("def sweep(config: Config): ...", "utils/commands/sweep/points.py") == []
