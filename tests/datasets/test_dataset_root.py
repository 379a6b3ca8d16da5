"""datasets.dataset_root: the dataset folder (or video file) is checked before any image or video library loads, so a
wrong dataset.path is answered at once with the key and the fix.

Tested on a temporary folder, a missing path and files."""
import pytest

from datasets.dataset_root import DatasetError, check_dataset_path, check_dataset_root
from utils.core.errors import UsageError


def test_a_folder_is_returned_as_a_path(tmp_path):
    assert check_dataset_root(str(tmp_path)) == tmp_path


def test_a_missing_folder_names_the_key_and_an_example(tmp_path):
    with pytest.raises(DatasetError, match=r"dataset.path .*nowhere does not exist; point dataset.path at a folder "
                                           r"of images, e.g. --set dataset.path=datasets/samples"):
        check_dataset_root(tmp_path / "nowhere")


def test_a_file_is_no_folder(tmp_path):
    image = tmp_path / "dog.jpg"
    image.write_bytes(b"")
    with pytest.raises(DatasetError, match="dog.jpg is not a folder; point dataset.path at a folder of images"):
        check_dataset_root(image)


def test_a_very_long_path_is_clipped_in_the_message(tmp_path):
    deep = tmp_path.joinpath(*["x" * 200] * 15)  # 3000 characters, each name within the system's limit
    with pytest.raises(DatasetError, match="does not exist") as caught:
        check_dataset_root(deep)
    assert len(str(caught.value)) < 600


def test_a_wrong_dataset_is_a_users_mistake():
    assert issubclass(DatasetError, UsageError)


def test_a_video_file_is_a_dataset_path_and_another_file_is_named_as_neither(tmp_path):
    clip = tmp_path / "street.mkv"
    clip.write_bytes(b"")  # its contents are the probe's to judge
    assert check_dataset_path(clip) == clip and check_dataset_path(tmp_path) == tmp_path
    image = tmp_path / "dog.jpg"
    image.write_bytes(b"")
    with pytest.raises(DatasetError, match=r"dog.jpg is a file but not a video \(.mp4, .* point it at a video, or at "
                                           r"a folder of images or videos"):
        check_dataset_path(image)
    with pytest.raises(DatasetError, match="gone does not exist"):
        check_dataset_path(tmp_path / "gone")
