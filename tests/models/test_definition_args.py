"""The args column of a model definition (models/definition_args.py): the activations it may name (and nothing that
would run code), the words it may hold, and each module's signature checked before a layer is built."""
import pytest
from torch import nn

from models.definition_args import ActivationSpec, bind_args, parse_activation, resolve_arg


def test_parse_activation_whitelist():
    assert parse_activation("nn.LeakyReLU(0.1)") == ActivationSpec("LeakyReLU", 0.1)
    assert parse_activation("nn.SiLU()") == ActivationSpec("SiLU", None)
    assert parse_activation("ReLU()") == ActivationSpec("ReLU", None)
    for text in ("nn.SiLU(1)", "nn.LeakyReLU(__import__('os'))", "os.system('x')", "nn.Conv2d(1)",
                 "nn.LeakyReLU(0.1).__class__", "eval('1')"):
        assert parse_activation(text) is None, text
    built = parse_activation("nn.LeakyReLU(0.2)").build()
    assert isinstance(built, nn.LeakyReLU) and built.negative_slope == 0.2


def test_the_words_of_the_args_column_and_nothing_else():
    anchors = [[10, 13, 16, 30, 33, 23]]
    assert resolve_arg("None", 80, anchors) is None and resolve_arg("nc", 80, anchors) == 80
    assert resolve_arg("anchors", 80, anchors) is anchors and resolve_arg("bilinear", 80, anchors) == "bilinear"
    assert resolve_arg(3, 80, anchors) == 3 and resolve_arg("nn.SiLU()", 80, anchors) == ActivationSpec("SiLU", None)
    with pytest.raises(ValueError, match="unsupported argument 'open' .*allowed words: None, nc, anchors"):
        resolve_arg("open", 80, anchors)


def test_each_modules_args_are_bound_to_its_signature_with_defaults_and_checked():
    assert bind_args("Conv", [64, 3, 2]) == {"c2": 64, "k": 3, "s": 2, "p": None, "g": 1, "act": True}
    assert bind_args("RepConv", [32])["k"] == 3 and bind_args("SPPCSPC", [16])["k"] == [5, 9, 13]
    assert bind_args("Upsample", [None, 2, "nearest"]) == {"size": None, "scale_factor": 2, "mode": "nearest"}
    with pytest.raises(ValueError, match=r"MP takes at most 1 args \(k\), got 2"):
        bind_args("MP", [2, 2])
    with pytest.raises(ValueError, match="Detect needs arg anchors"):
        bind_args("Detect", [80])
    with pytest.raises(ValueError, match="Conv arg k must be a positive integer, got 0"):
        bind_args("Conv", [64, 0])
    with pytest.raises(ValueError, match="Upsample arg mode must be one of nearest, .*got 'linear'"):
        bind_args("Upsample", [None, 2, "linear"])
