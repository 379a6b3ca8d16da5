"""oneDNN's verbose output of one batch (utils/measure/below_layer/onednn_verbose.py): each convolution's kernel
captured at fp32 and bf16, and the process's stdout and the model's hooks given back afterwards."""
import torch
from torch import nn

from utils.measure.below_layer.kernels import (NOT_ONEDNN, convolution_kernels, cpu_flags)
from utils.measure.below_layer.onednn_verbose import capture_onednn_verbose


def _model():
    return nn.Sequential(nn.Conv2d(3, 16, 3), nn.LeakyReLU(0.1), nn.Conv2d(16, 32, 3, padding=1),
                         nn.Conv2d(32, 32, 1)).eval()


def test_torch_eager_kernels_are_captured(tmp_path, capfd):
    model, x = _model(), torch.randn(1, 3, 64, 64)
    with torch.inference_mode():
        model(x)
        text = capture_onednn_verbose(lambda: model(x), model, tmp_path / "fp32.txt")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            model(x)
            bf16 = capture_onednn_verbose(lambda: model(x), model, tmp_path / "bf16.txt")
    fp32 = convolution_kernels(text.splitlines())
    assert set(fp32) == {"0", "2", "3"}
    onednn = [name for names in fp32.values() for name in names if name != NOT_ONEDNN]
    assert onednn and all(":" in name for name in onednn)  # kind:isa, e.g. jit_1x1:avx512_core
    bf16_kernels = convolution_kernels(bf16.splitlines())
    flags = cpu_flags(open("/proc/cpuinfo").read())
    if "amx_bf16" in flags:  # AMX's tile kernels take bf16 without saying it: brg_conv_fwd:avx10_1_512_amx
        assert any("amx" in name for names in bf16_kernels.values() for name in names)
    elif "avx512_bf16" in flags:
        assert any("bf16" in name for names in bf16_kernels.values() for name in names)
    # the capture gives fd 1 back: what is printed afterwards reaches the test's stdout, not the file
    print("after the capture")
    assert "after the capture" in capfd.readouterr().out
    assert "after the capture" not in (tmp_path / "fp32.txt").read_text()
    assert not model._forward_hooks and not model[0]._forward_pre_hooks
