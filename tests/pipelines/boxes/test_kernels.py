"""NMS and IoU without torchvision's Python package (pipelines/boxes/kernels.py): hand-computed cases, torchvision's own
ops as the independent reference, and a YOLO process that never imports torchvision."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torchvision

from pipelines.boxes import kernels as box_kernels
from tests.support.paths import ROOT


def random_boxes(generator: torch.Generator, count: int) -> torch.Tensor:
    corners = torch.rand(count, 2, generator=generator) * 100
    sizes = torch.rand(count, 2, generator=generator) * 40
    return torch.cat((corners, corners + sizes), dim=1)


def test_iou_hand_case():
    a = torch.tensor([[0.0, 0.0, 2.0, 2.0]], dtype=torch.float64)
    b = torch.tensor([[1.0, 1.0, 3.0, 3.0], [2.0, 2.0, 4.0, 4.0], [0.0, 0.0, 2.0, 2.0], [5.0, 5.0, 6.0, 6.0]],
                     dtype=torch.float64)
    # Overlap 1 of union 4 + 4 - 1; touching corners; the same box; apart.
    assert box_kernels.box_iou(a, b).tolist() == [[1 / 7, 0.0, 1.0, 0.0]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_iou_equals_torchvisions(dtype):
    generator = torch.Generator().manual_seed(0)
    a, b = random_boxes(generator, 50).to(dtype), random_boxes(generator, 70).to(dtype)
    assert torch.allclose(box_kernels.box_iou(a, b), torchvision.ops.box_iou(a, b), rtol=0, atol=1e-6)


def test_two_zero_area_boxes_have_no_union_as_in_torchvision():
    point = torch.tensor([[3.0, 3.0, 3.0, 3.0]])
    assert torch.isnan(box_kernels.box_iou(point, point)).all()
    assert torch.isnan(torchvision.ops.box_iou(point, point)).all()


def test_nms_hand_case():
    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0], [20.0, 20.0, 30.0, 30.0]])
    scores = torch.tensor([0.8, 0.9, 0.7])
    # The second box (0.9) suppresses the first (IoU 81/119 = 0.68); the third overlaps neither.
    assert box_kernels.nms(boxes, scores, 0.5).tolist() == [1, 2]
    assert box_kernels.nms(boxes, scores, 0.7).tolist() == [1, 0, 2]


def test_nms_equals_torchvisions():
    generator = torch.Generator().manual_seed(1)
    boxes, scores = random_boxes(generator, 500), torch.rand(500, generator=generator)
    for threshold in (0.3, 0.45, 0.65):
        assert torch.equal(box_kernels.nms(boxes, scores, threshold), torchvision.ops.nms(boxes, scores, threshold))


def test_the_extension_library_is_found_in_the_installed_torchvision(tmp_path):
    assert box_kernels.extension_library(tmp_path) is None
    package = Path(importlib.util.find_spec("torchvision").origin).parent
    found = box_kernels.extension_library(package)
    assert found is not None and found.name.startswith(box_kernels.EXTENSION_NAMES)


def test_a_yolo_process_suppresses_without_importing_torchvision_and_torchvision_loads_after():
    script = (
        "import sys, torch\n"
        "from pipelines.boxes.nms import NmsSettings, non_max_suppression\n"
        "rows = torch.zeros(1, 3, 8)\n"
        "rows[0, :, :4] = torch.tensor([[5., 5., 4., 4.], [5.5, 5., 4., 4.], [30., 30., 4., 4.]])\n"
        "rows[0, :, 4] = torch.tensor([0.9, 0.8, 0.7]); rows[0, :, 5] = 1.0\n"
        "kept = non_max_suppression(rows, NmsSettings(conf_thres=0.25, iou_thres=0.45))[0]\n"
        "print(len(kept), 'torchvision' in sys.modules)\n"
        "import torchvision\n"  # the same library again, through the package: no second registration
        "print(torchvision.ops.nms(kept[:, :4], kept[:, 4], 0.45).tolist())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["2 False", "[0, 1]"]


def test_a_python_without_torchvision_is_told_at_import_with_the_setup_instruction():
    script = (
        "import importlib.util, sys\n"
        "found = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *rest: None if name == 'torchvision' else found(name, *rest)\n"
        "from utils.core.errors import missing_dependency\n"
        "try:\n"
        "    import pipelines.boxes.kernels\n"
        "except ModuleNotFoundError as error:\n"
        "    print(missing_dependency(error))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "cannot import 'torchvision', which detbench needs" in result.stdout
