"""runtime.allocator (utils/preflight/heap_setting.py): keep_heap refused where it cannot apply (another C library,
a preloaded allocator), inherit changing nothing, and a bad value refused before the run."""
import pytest

from benchmark import main
from tests.support.paths import ROOT
from utils.core.errors import UsageError
from utils.preflight.heap_setting import apply_allocator, keep_heap_refusal
from utils.measure.below_layer.page_faults import (Allocator)


@pytest.mark.parametrize("environ, libc, words", [
    ({}, "", "runs on another C library"),
    ({}, "musl", "runs on musl"),
    ({"LD_PRELOAD": "/opt/libjemalloc.so.2"}, "glibc", "LD_PRELOAD loads jemalloc"),
])
def test_keep_heap_is_refused_where_it_cannot_apply(environ, libc, words):
    assert words in keep_heap_refusal(environ, libc)
    with pytest.raises(UsageError, match="runtime.allocator keep_heap"):
        apply_allocator("keep_heap", environ, libc, maps=environ.get("LD_PRELOAD", ""))


def test_inherit_changes_nothing_and_names_what_the_process_has():
    assert apply_allocator("inherit", {}, "glibc", maps="") == Allocator("glibc's defaults", True)
    assert keep_heap_refusal({}, "glibc") is None


def test_a_bad_allocator_value_is_refused_before_the_run(tmp_path, capsys):
    status = main(["--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--set", "runtime.allocator=jemalloc",
                   "--set", f"run.output_dir={tmp_path}"])
    err = capsys.readouterr().err
    assert status == 2 and "runtime.allocator" in err and "keep_heap" in err
    assert not any(tmp_path.iterdir())
