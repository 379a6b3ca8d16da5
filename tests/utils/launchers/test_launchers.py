"""The launchers' face (utils/launchers/__init__.py): the launcher chosen from the flags and the environment, and the
flags that do not fit refused before anything runs (exit status 2). Each launcher is tested beside it."""
import pytest

from benchmark import main
from tests.support.paths import ROOT
from utils.launchers import LauncherError, make_launcher
from utils.launchers.local import LocalLauncher

QUICK = ["--config", str(ROOT / "configs" / "samples_tiny.yaml"),
         "--set", f"dataset.path={ROOT / 'datasets' / 'samples'}", "--set", "dataset.limit=2"]


def test_the_launcher_comes_from_the_flags_and_the_environment():
    assert isinstance(make_launcher("local", None, {}), LocalLauncher)
    assert make_launcher("ray", None, {"RAY_ADDRESS": "10.0.0.5:6379"}).address == "10.0.0.5:6379"
    assert make_launcher("ray", "head:6380", {"RAY_ADDRESS": "10.0.0.5:6379"}).address == "head:6380"
    with pytest.raises(LauncherError, match="needs the cluster's address"):
        make_launcher("ray", None, {})
    with pytest.raises(LauncherError, match="only for --launcher ray"):
        make_launcher("local", "head:6380", {})


@pytest.mark.parametrize("arguments, named", [
    (["--sweep", "node=a,b"], "placed on machines only by --launcher ray"),
    (["--sweep", "dataset.batch_size=1,2", "--ray-address", "head:6379"], "only for --launcher ray"),
    (["--launcher", "ray"], "--launcher, --ray-address and --rounds are for sweeps"),
])
def test_flags_that_do_not_fit_refuse_before_anything_runs(arguments, named, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert main(QUICK + ["--set", f"run.output_dir={tmp_path}", *arguments]) == 2
    assert named in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
