"""benchmarks/common/machine.py: the CPU's model and flags, read from a cpuinfo file."""
from benchmarks.common import machine

CPUINFO = """processor\t: 0
model name\t: Example CPU 9000
flags\t\t: fpu avx2 avx512f amx_tile amx_bf16 avx512_bf16
processor\t: 1
model name\t: Example CPU 9000
flags\t\t: fpu avx2 avx512f amx_tile amx_bf16 avx512_bf16
"""


def test_the_model_and_flags_come_from_cpuinfo(tmp_path, monkeypatch):
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    monkeypatch.setattr(machine, "CPUINFO", tmp_path / "cpuinfo")
    assert machine.cpu_model() == "Example CPU 9000"
    assert machine.flags_among(("amx_bf16", "avx512_vnni", "avx2")) == ["amx_bf16", "avx2"]  # in the order asked
    assert machine.flags_starting(("amx", "avx512_b")) == ["amx_bf16", "amx_tile", "avx512_bf16"]
    (tmp_path / "cpuinfo").write_text("processor\t: 0\n")
    assert machine.cpu_model() == "?" and machine.flags_among(("avx2",)) == []
