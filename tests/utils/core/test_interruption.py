"""How a run stops (utils/core/interruption.py): the first stop inside the passes raises there, later ones
wait for the record, and a stop whose raise Python drops still ends the passes or the start-up."""
import gc
import signal
import sys

import pytest

from utils.core.interruption import RunStops, Stopped, stop_signals_interrupt


class StoppedInAFinalizer:
    """Python drops an exception raised in __del__ ("Exception ignored in ..."), as in an at-fork callback:
    a stop handler that runs there raises into nothing."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)


def _stop_inside_a_finalizer() -> None:
    StoppedInAFinalizer()
    gc.collect()


def test_a_stop_whose_raise_python_dropped_ends_the_passes_at_the_next_batch(monkeypatch):
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)
    stops, ran = RunStops(lambda line: None), []
    with stops.handled():
        with pytest.raises(Stopped) as stopped:
            with stops.ending_passes():
                _stop_inside_a_finalizer()
                ran.append("a batch after the stop")  # the raise went nowhere
                stops.deliver()
                ran.append("never")
    assert ran == ["a batch after the stop"] and stopped.value.signal_number == signal.SIGINT
    assert [type(drop.exc_value) for drop in dropped] == [Stopped] and stops.received == signal.SIGINT


def test_passes_without_a_batch_left_raise_the_dropped_stop_as_they_end(monkeypatch):
    monkeypatch.setattr(sys, "unraisablehook", lambda drop: None)
    stops = RunStops(lambda line: None)
    with stops.handled():
        with pytest.raises(Stopped):
            with stops.ending_passes():
                _stop_inside_a_finalizer()


def test_a_stop_that_arrived_is_raised_once_and_later_ones_wait_for_the_record():
    said = []
    stops = RunStops(said.append)
    with stops.handled():
        with pytest.raises(Stopped):
            with stops.ending_passes():
                signal.raise_signal(signal.SIGTERM)
        stops.deliver()  # nothing left to deliver: it arrived
        signal.raise_signal(signal.SIGINT)  # while the record is written: noted, not raised
        with pytest.raises(Stopped):  # and no further passes start
            with stops.ending_passes():
                pass
    assert stops.received == signal.SIGTERM and len(said) == 1 and "finishing the run record first" in said[0]


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_during_start_up_whose_raise_python_dropped_is_raised_on_leaving(monkeypatch, number):
    monkeypatch.setattr(sys, "unraisablehook", lambda drop: None)

    class StopInAFinalizer:
        def __del__(self):
            signal.raise_signal(number)

    went_on = []
    with pytest.raises(Stopped) as stopped:
        with stop_signals_interrupt():
            StopInAFinalizer()
            gc.collect()
            went_on.append("the rest of the start-up")  # the raise went nowhere
    assert went_on == ["the rest of the start-up"] and stopped.value.signal_number == number


def test_a_stop_during_start_up_that_arrived_is_raised_once_and_the_handlers_are_restored():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stopped) as stopped:
        with stop_signals_interrupt():
            signal.raise_signal(signal.SIGTERM)
    assert stopped.value.signal_number == signal.SIGTERM and signal.getsignal(signal.SIGTERM) is before
    with stop_signals_interrupt():
        pass  # nothing is left over from the stop before
