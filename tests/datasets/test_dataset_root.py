"""datasets.dataset_root: the dataset folder is checked before any image library loads, so a wrong dataset.path
is answered at once with the key and the fix.

Tested on a temporary folder, a missing path and a file."""
import pytest

from datasets.dataset_root import DatasetError, check_dataset_root
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
