"""What runtimes' own profilers report (pipelines/runtimes/profiles.py): module scopes from exporter node names, and
the pass's runs among those a profile recorded."""
from __future__ import annotations

import pytest

from pipelines.runtimes.profiles import last_runs, scope_of


def test_scope_of_exporter_names():
    assert scope_of("/model.0/conv/Conv") == ("model.0", "conv")
    assert scope_of("/model.77/m.0/Conv_output_0_nchwc") == ("model.77", "m.0")
    assert scope_of("/model.1/conv/Conv/WithoutBiases") == ("model.1", "conv")
    assert scope_of("/model.77/Concat_22") == ("model.77",)
    assert scope_of("images_abcd_acdb_/model.0/conv/Conv/WithoutBiases") == ()
    assert scope_of("ReorderOutput_token_144") == ()


def test_the_pass_is_the_last_runs_recorded_and_a_short_profile_is_refused():
    assert last_runs(["warm-up", "a", "b"], 2, "a profile") == ["a", "b"]
    assert last_runs(("a",), 1, "a profile") == ("a",)
    with pytest.raises(ValueError, match="the profile: 1 inference\\(s\\) recorded, fewer than the 2 forward"):
        last_runs(["a"], 2, "the profile")
    with pytest.raises(ValueError, match="fewer than the 0 forward"):
        last_runs(["a"], 0, "the profile")
