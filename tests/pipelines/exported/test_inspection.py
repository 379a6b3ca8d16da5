"""pipelines/exported/inspection.py: the files refused before anything is read from them, and what an ONNX file
says about itself."""
import pytest

from pipelines.exported.inspection import ExportedFileError, read_exported


def test_a_checkpoint_another_suffix_or_a_missing_file_is_refused_naming_the_fix(tmp_path):
    (tmp_path / "model.pt").write_bytes(b"not unpickled")
    with pytest.raises(ExportedFileError, match="does not unpickle"):
        read_exported(tmp_path / "model.pt")
    with pytest.raises(ExportedFileError, match="not an ONNX"):
        read_exported(tmp_path / "model.bin")
    with pytest.raises(ExportedFileError, match="no such file"):
        read_exported(tmp_path / "absent.onnx")


def test_bytes_that_are_not_a_model_are_refused_and_left_as_they_are(tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07garbage")
    with pytest.raises(ExportedFileError, match="not a readable ONNX model|holds no graph"):
        read_exported(broken)
    assert broken.read_bytes() == b"\x08\x07garbage"


def test_an_onnx_files_shapes_metadata_and_tail_are_read(tmp_path):
    from onnx import TensorProto, helper, save

    graph = helper.make_graph([helper.make_node("Sigmoid", ["images"], ["output"])], "g",
                              [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, 64, 64])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", 3, 64, 64])])
    model = helper.make_model(graph)
    helper.set_model_props(model, {"names": "{0: 'a', 1: 'b'}", "author": "me"})
    save(model, str(tmp_path / "m.onnx"))
    file = read_exported(tmp_path / "m.onnx")
    assert file.format == "onnx" and file.inputs[0].shape == ("N", 3, 64, 64) and file.inputs[0].dtype == "float32"
    assert file.names() == ["a", "b"] and file.metadata["author"] == "me"  # names as a Python literal, author as text
    assert file.after_convolutions is None and file.digest  # no convolution to be after; the bytes' digest
