"""A plain run's last lines (utils/tune/advice.py): what the CPU makes worth trying, from facts, and tune."""
from pipelines.runtimes.registry import SPECS
from utils.tune.advice import advice_lines
from utils.tune.space import Machine

ALL = tuple(SPECS)


def offered(precision):
    return [name for name in ALL if precision in SPECS[name].precisions]


def test_names_the_untried_native_precisions_and_the_command():
    machine = Machine(frozenset({"avx2", "avx512_bf16", "amx_int8"}), 2, ALL)
    lines = advice_lines({"backend": ALL[0], "precision": "fp32"}, machine, "configs/x.yaml",
                         ["runtime.threads=2", "dataset.path=data"])
    assert len(lines) == 2
    if offered("bf16"):
        assert "bf16 on" in lines[0] and "avx512_bf16" in lines[0]
    # Keys tune races are not carried into its command; the others are.
    assert lines[1].endswith("python benchmark.py tune --config configs/x.yaml --set dataset.path=data")


def test_no_bf16_without_its_flags_and_no_int8_without_vnni_or_amx():
    machine = Machine(frozenset({"avx2"}), 2, ALL)
    lines = advice_lines({"backend": ALL[0], "precision": "fp32"}, machine, "c.yaml", [])
    text = " ".join(lines)
    assert "bf16" not in text and "int8" not in text


def test_nothing_to_say_when_one_runtime_ran_its_only_precision():
    machine = Machine(frozenset({"avx2"}), 2, (ALL[0],))
    assert advice_lines({"backend": ALL[0], "precision": "fp32"}, machine, "c.yaml", []) == []
