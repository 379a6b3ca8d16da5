"""Which kernel ran: oneDNN's verbose lines matched to the layers that ran them, and which int8 instructions
a run used, with the CPU flags that decided it. Pure functions over text.

oneDNN prints one line per primitive it executes (`onednn_verbose,v1,primitive,exec,cpu,convolution,
brg_conv_fwd:avx512_core,...`); field 6 is the implementation: its kind before the colon, the ISA after it.
The capture writes a `detbench_layer,begin,<path>` line before and a `detbench_layer,end,<path>` line after every
convolution module's call into the same stream, so the lines between them are that module's.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MARKER = "detbench_layer"
VERBOSE_PREFIX = "onednn_verbose"
# CPU flags (as /proc/cpuinfo spells them) that decide int8 and bf16 kernels.
DECIDING_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8",
                  "amx_bf16")
NOT_ONEDNN = "aten (not oneDNN)"


def convolution_kernels(lines: Iterable[str]) -> dict[str, list[str]]:
    """Module path -> the implementations of the convolutions that ran between its markers, in call order.
    A convolution module with no oneDNN line ran one of ATen's own kernels (NOT_ONEDNN)."""
    kernels: dict[str, list[str]] = {}
    open_paths: list[str] = []
    for line in lines:
        fields = line.strip().split(",")
        if fields[0] == MARKER and len(fields) >= 3:
            path = ",".join(fields[2:])
            if fields[1] == "begin":
                open_paths.append(path)
                kernels.setdefault(path, [])
            elif open_paths and open_paths[-1] == path:
                if not kernels[path]:
                    kernels[path].append(NOT_ONEDNN)
                open_paths.pop()
        elif (fields[0] == VERBOSE_PREFIX and len(fields) > 6 and fields[2] == "primitive" and fields[3] == "exec"
              and fields[5] == "convolution" and open_paths):
            implementation = fields[6]
            if implementation not in kernels[open_paths[-1]]:
                kernels[open_paths[-1]].append(implementation)
    return kernels


def kernel_by_path(kernels: Mapping[str, Sequence[str]]) -> dict[str, str]:
    return {path: "+".join(names) for path, names in kernels.items()}


def kernel_counts(kernels: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """How many convolution layers ran each implementation, most first."""
    counts: dict[str, int] = {}
    for names in kernels.values():
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def onednn_info(lines: Iterable[str]) -> dict[str, str]:
    """oneDNN's own header: its version, the ISA it detected, its threading runtime."""
    info = {}
    for line in lines:
        fields = line.strip().split(",")
        if fields[:3] == [VERBOSE_PREFIX, "v1", "info"]:
            text = ",".join(fields[3:])
            if text.startswith("oneDNN"):
                info["version"] = text
            elif text.startswith("cpu,isa:"):
                info["isa"] = text[len("cpu,isa:"):]
            elif text.startswith("cpu,runtime:"):
                info["runtime"] = text[len("cpu,"):]
    return info


def cpu_flags(cpuinfo: str) -> set[str]:
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def deciding_flags(flags: set[str]) -> dict[str, bool]:
    return {flag: flag in flags for flag in DECIDING_FLAGS}


def int8_instructions(kernel_names: Iterable[str], flags: set[str], backend: str) -> dict[str, Any]:
    """Which int8 instructions ran, from the kernels' names (OpenVINO's exec types, oneDNN's implementations),
    with the CPU flags that decided it; where a runtime names no kernels, what its flags imply, said as such."""
    names = sorted({name for name in kernel_names if name})
    int8 = [name for name in names if any(tag in name.lower() for tag in ("i8", "u8", "int8"))]
    decided = deciding_flags(flags)
    lowered = " ".join(int8).lower()
    if int8:
        isa = "AVX-512" if "avx512" in lowered else "AVX2" if "avx2" in lowered else None
        vnni_flag = decided["avx512_vnni"] if isa == "AVX-512" else decided["avx_vnni"] or decided["avx512_vnni"]
        if "amx" in lowered:
            used, evidence = "AMX-INT8 (tile matrix multiply)", "observed in the kernels' names"
        elif "vnni" in lowered:
            used, evidence = "VNNI (vpdpbusd)", "observed in the kernels' names"
        elif isa is not None:
            # OpenVINO's exec types name the ISA family (brgconv_avx512_I8) but not VNNI: oneDNN's int8 kernels use
            # VNNI wherever the CPU has it, so the flag decides.
            used = (f"VNNI (vpdpbusd) in {isa} int8 kernels" if vnni_flag else
                    f"no VNNI: {isa} int8 kernels multiply-add with vpmaddubsw + vpmaddwd pairs")
            evidence = (f"{isa} int8 kernels observed in the kernels' names, which do not name VNNI; VNNI from "
                        "the CPU flags (oneDNN uses it wherever the CPU has it)")
        else:
            used, evidence = "reference (non-vector) int8 kernels", "observed in the kernels' names"
    else:
        if decided["amx_int8"]:
            used = "AMX-INT8 expected"
        elif decided["avx512_vnni"] or decided["avx_vnni"]:
            used = "VNNI expected"
        else:
            used = "no VNNI expected (vpmaddubsw + vpmaddwd pairs)"
        evidence = (f"inferred from the CPU flags: {backend} names no int8 kernels"
                    if not names else f"inferred from the CPU flags: none of {backend}'s kernel names says int8")
    return {"instructions": used, "evidence": evidence, "int8_kernels": int8[:20],
            "cpu_flags": decided, "vnni_capable": decided["avx512_vnni"] or decided["avx_vnni"]}


def int8_line(verdict: Mapping[str, Any]) -> str:
    flags = verdict["cpu_flags"]
    shown = ", ".join(f"{flag} {'yes' if flags[flag] else 'no'}" for flag in
                      ("avx512_vnni", "avx_vnni", "amx_int8"))
    return f"int8 instructions: {verdict['instructions']} ({verdict['evidence']}; CPU flags: {shown})"
