"""Mistakes given to `benchmark.py capacity`, each one message and exit status 2 before anything runs: bounds that
mean nothing, keys the command sets itself, a source that is no video or stream, a config that cannot run, several
ways with no images to judge them on, and a resume of a folder that holds no search."""
import pytest

from tests.support.clips import moving_shapes, write_clip
from tests.support.paths import CONFIGS
from utils.commands.capacity.command import capacity_main

pytestmark = pytest.mark.slow  # each looks at its source with the real decoder and validates the real config


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return write_clip(tmp_path_factory.mktemp("clip") / "shapes.mp4", moving_shapes(160, 96, 8), fps=15)


def capacity(tmp_path, *arguments, config="cameras.yaml"):
    return capacity_main(["--config", str(CONFIGS / config), "--set", f"run.output_dir={tmp_path}",
                          "--set", "preprocess.img_size=64", *arguments])


@pytest.mark.parametrize("flag, value, says", [("--budget-ms", "0", "--budget-ms 0: give a positive number"),
                                               ("--max-drop", "1.5", "below 1"), ("--minutes", "-1", "--minutes")])
def test_bounds_that_mean_nothing(tmp_path, capsys, flag, value, says):
    assert capacity(tmp_path, flag, value) == 2
    assert says in capsys.readouterr().err


def test_a_key_the_command_sets_itself(tmp_path, capsys):
    assert capacity(tmp_path, "--set", "cameras.count=3") == 2
    assert "capacity sets cameras.count itself" in capsys.readouterr().err


def test_a_source_that_is_not_a_video(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("not a video")
    assert capacity(tmp_path, "--source", str(text)) == 2
    error = capsys.readouterr().err
    assert "notes.txt" in error and "not a video" in error and "Traceback" not in error


def test_a_folder_of_images_is_no_cameras_source(tmp_path, capsys):
    assert capacity(tmp_path, config="samples_tiny.yaml") == 2  # its dataset.path: the sample photos
    assert "folder of images, which cameras do not read: give the cameras' source with --source" in \
        capsys.readouterr().err


def test_a_config_that_cannot_run(tmp_path, capsys, clip):
    assert capacity(tmp_path, "--source", str(clip), "--set", "runtime.backend=nope") == 2
    assert "runtime.backend" in capsys.readouterr().err


def test_several_ways_need_images_to_judge_them_on(tmp_path, capsys, clip):
    assert capacity(tmp_path, "--source", str(clip), "--set", "runtime.backend=torch",
                    "--sweep", "runtime.precision=fp32,bf16", "--set", "runtime.threads=1") == 2
    assert "give --images DIR" in capsys.readouterr().err


def test_a_resume_of_a_folder_without_a_search(tmp_path, capsys):
    assert capacity_main(["--resume", str(tmp_path)]) == 2
    assert "no capacity.json there" in capsys.readouterr().err
