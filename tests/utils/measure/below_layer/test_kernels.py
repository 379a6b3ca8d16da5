"""Which kernel ran: oneDNN's verbose lines read back per convolution layer (parsed by hand-made cases and
captured for real from torch eager in fp32 and bf16), and the int8 instructions with the flags that decided."""
from utils.measure.below_layer.kernels import (NOT_ONEDNN, convolution_kernels, cpu_flags, int8_instructions, int8_line,
                                  kernel_counts, onednn_info)

LINES = """onednn_verbose,v1,info,oneDNN v3.12.0 (commit abc)
onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:2
onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with Intel DL Boost and bfloat16 support
detbench_layer,begin,model.0.conv
detbench_layer,end,model.0.conv
detbench_layer,begin,model.1.conv
onednn_verbose,v1,primitive,exec,cpu,reorder,jit:blk,undef,src:f32,,,1x16x62x62,0.03
onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx512_core_vnni,forward_inference,src:u8,,,mb1,0.2
detbench_layer,end,model.1.conv
onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_inference,src:f32,,,mb1,0.2
detbench_layer,begin,model.2.conv
onednn_verbose,v1,primitive,exec,cpu,convolution,jit_1x1:avx512_core,forward_inference,src:f32,,,mb1,0.2
detbench_layer,end,model.2.conv""".splitlines()


def test_lines_between_markers_belong_to_the_layer():
    kernels = convolution_kernels(LINES)
    assert kernels == {"model.0.conv": [NOT_ONEDNN], "model.1.conv": ["brg_conv_fwd:avx512_core_vnni"],
                       "model.2.conv": ["jit_1x1:avx512_core"]}  # the unmarked jit:avx2 line belongs to none
    assert kernel_counts(kernels) == {NOT_ONEDNN: 1, "brg_conv_fwd:avx512_core_vnni": 1, "jit_1x1:avx512_core": 1}
    info = onednn_info(LINES)
    assert info["isa"].startswith("Intel AVX-512") and info["version"].startswith("oneDNN v3.12")


def test_int8_instructions_from_kernel_names_and_flags():
    vnni_cpu = {"avx2", "avx512f", "avx512_vnni"}
    seen = int8_instructions(["brgconv_avx512_core_vnni_I8", "Reorder_ref_any"], vnni_cpu, "openvino")
    assert seen["instructions"].startswith("VNNI") and seen["evidence"] == "observed in the kernels' names"
    assert seen["cpu_flags"]["avx512_vnni"] and not seen["cpu_flags"]["amx_int8"]
    without = int8_instructions(["jit_avx2_I8"], {"avx2"}, "openvino")
    assert without["instructions"].startswith("no VNNI") and not without["vnni_capable"]
    # OpenVINO's names carry the ISA family, not VNNI: the flag decides, and the evidence says so
    named_isa = int8_instructions(["brgconv_avx512_I8", "ref_I8"], vnni_cpu, "openvino")
    assert named_isa["instructions"] == "VNNI (vpdpbusd) in AVX-512 int8 kernels"
    assert "do not name VNNI" in named_isa["evidence"]
    assert int8_instructions(["brgconv_avx512_I8"], {"avx512f"}, "openvino")["instructions"].startswith("no VNNI")
    amx = int8_instructions(["brgconv_avx512_amx_I8"], vnni_cpu | {"amx_int8"}, "openvino")
    assert amx["instructions"].startswith("AMX")
    inferred = int8_instructions([], vnni_cpu, "onnxruntime")
    assert inferred["instructions"] == "VNNI expected" and "inferred from the CPU flags" in inferred["evidence"]
    assert "avx512_vnni yes" in int8_line(seen) and "amx_int8 no" in int8_line(seen)
    assert cpu_flags("processor\t: 0\nflags\t\t: fpu avx2 avx512_vnni\n") == {"fpu", "avx2", "avx512_vnni"}
