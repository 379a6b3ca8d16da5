"""A folder where a file is expected, and a file where a folder is, are named as such (exit 2)."""

import pytest

from benchmark import main
from tests.support.paths import ROOT


@pytest.mark.parametrize("config, override, fragment", [
    ("samples_tiny.yaml", "model.weights={folder}", "model.weights {folder} is a folder, not a file"),
    ("samples_fasterrcnn.yaml", "model.weights={folder}", "model.weights {folder} is a folder, not a file"),
    ("samples_tiny.yaml", "model.arch={folder}/defs.yaml", "model.arch {folder}/defs.yaml is a folder, not a file"),
    ("samples_tiny.yaml", "dataset.path={file}", "dataset.path {file} is a file but not a video"),
])
def test_folder_and_file_mix_ups(tmp_path, capsys, config, override, fragment):
    folder, file = tmp_path / "things", tmp_path / "one.jpg"
    (folder / "defs.yaml").mkdir(parents=True)
    file.write_bytes(b"")
    values = {"folder": folder, "file": file}
    code = main(["--config", str(ROOT / "configs" / config), "--set", override.format(**values),
                 "--set", f"run.output_dir={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert fragment.format(**values) in err
