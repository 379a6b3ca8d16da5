"""The tests mirror the product: every module of utils/, pipelines/, models/ and datasets/ has its tests at
tests/<same folder>/test_<module>.py, unless tests/README.md lists it (the one source of that list) with where its
behaviour is tested instead. A listed entry must still be needed: one naming no module, or only modules that have
their own file now, fails too, so the list shrinks as files appear."""
import fnmatch
import re

from tests.support.paths import ROOT

PRODUCT = ("utils", "pipelines", "models", "datasets")
README = ROOT / "tests" / "README.md"
LISTS = ("## Modules without a test file of their own",)
ENTRY = re.compile(r"^- `([^`]+)`")


def product_modules() -> list[str]:
    return sorted(str(path.relative_to(ROOT)) for top in PRODUCT for path in (ROOT / top).rglob("*.py")
                  if path.name != "__init__.py")


def mirrored(module: str) -> bool:
    folder, _, name = module.rpartition("/")
    return (ROOT / "tests" / folder / f"test_{name}").is_file()


def listed() -> dict[str, str]:
    """Entries of the README's list (a module's path or a glob of paths) -> the heading they are under."""
    entries, heading = {}, None
    for line in README.read_text().splitlines():
        if line.startswith("## "):
            heading = line if line in LISTS else None
        elif heading and (match := ENTRY.match(line)):
            entries[match.group(1)] = heading
    return entries


def test_the_readme_holds_its_list():
    headings = set(listed().values())
    assert LISTS[0] in headings, f"{README} lost its list under {LISTS[0]!r}"


def test_every_product_module_has_its_mirrored_test_file_or_is_listed():
    entries = listed()
    missing = [module for module in product_modules()
               if not mirrored(module) and not any(fnmatch.fnmatchcase(module, entry) for entry in entries)]
    assert missing == [], (
        f"{len(missing)} module(s) without tests/<same folder>/test_<module>.py: {', '.join(missing)}. Put their "
        f"tests there, or list the module in {README.relative_to(ROOT)} with where it is tested and why no file")


def test_every_listed_entry_still_stands_for_a_module_without_its_file():
    modules = product_modules()
    stale = {entry: heading for entry, heading in listed().items()
             if not any(fnmatch.fnmatchcase(module, entry) and not mirrored(module) for module in modules)}
    assert stale == {}, f"listed in {README.relative_to(ROOT)} but no module needs it (remove the line): {stale}"


def test_the_list_of_exceptions_stays_short():
    exceptions = [entry for entry, heading in listed().items() if heading == LISTS[0]]
    assert len(exceptions) <= 25, f"{len(exceptions)} exceptions: a module worth a list line is worth a test file"
