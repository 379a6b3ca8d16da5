"""What a runtime states about itself (pipelines/runtimes/spec.py): which precisions quantize, and what a spec says
where it names nothing. Each runtime's own spec is checked against its folder by test_registry.py."""
from pipelines.runtimes.spec import KernelSource, RuntimeOptions, RuntimeSpec, quantizes


def test_int8_and_int8_with_float_layers_at_bf16_quantize_and_nothing_else_does():
    assert quantizes("int8") and quantizes("int8+bf16")
    assert not any(quantizes(precision) for precision in ("fp32", "bf16", "int16", "fp8"))


def test_a_spec_that_names_nothing_offers_nothing_beyond_its_session():
    spec = RuntimeSpec(name="plain", precisions=("fp32",), session="session:Plain")
    assert spec.options is RuntimeOptions and RuntimeOptions.model_fields == {}
    assert (spec.caches, spec.reference, spec.keeps_modules, spec.file_kinds) == (False, False, False, ())
    assert spec.layer_reader is spec.trace_reader is spec.native is None and spec.refusals == {}
    assert spec.kernels == KernelSource("unavailable", reason="the runtime names no kernels")
