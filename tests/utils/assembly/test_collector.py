"""The garbage collector around a run's start (utils/assembly/collector.py): paused while the run loads, what
loaded frozen out of later collections, given back when the run ends; a start that fails freezes nothing."""
import gc

import pytest

from utils.assembly.collector import loading_without_collection, release_loaded


@pytest.fixture(autouse=True)
def collector_as_it_was():
    yield
    gc.unfreeze()
    gc.enable()


def test_the_start_loads_without_collections_and_what_loaded_is_frozen_until_released():
    before = gc.get_stats()[2]["collections"]
    with loading_without_collection():
        assert not gc.isenabled()
        loaded = [[index] for index in range(200_000)]  # tracked objects, well past every threshold
        assert gc.get_stats()[2]["collections"] == before
    assert gc.isenabled() and gc.get_freeze_count() > len(loaded)
    release_loaded()
    assert gc.get_freeze_count() == 0


def test_a_start_that_fails_freezes_nothing_and_turns_the_collector_back_on():
    with pytest.raises(ValueError):
        with loading_without_collection():
            raise ValueError("a config mistake")
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_collector_the_caller_turned_off_stays_off():
    gc.disable()
    with loading_without_collection():
        pass
    assert not gc.isenabled()
