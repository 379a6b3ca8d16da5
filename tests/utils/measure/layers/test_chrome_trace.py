"""Pure trace functions on hand-built traces: integer ids, named tracks, merging another profiler's events,
and the clock of a reported start time."""
import copy

import pytest

from tests.support.helpers import metadata, torch_like_trace
from utils.measure.layers.chrome_trace import (complete_events, integer_ids, lies_within, merge_events, name_tracks,
                                       trace_origin_ns, unix_ns)


def test_string_ids_become_integers_above_the_integer_ones_in_sorted_order():
    original = torch_like_trace()
    trace = integer_ids(original)
    assert all(isinstance(event["pid"], int) and isinstance(event["tid"], int) for event in trace["traceEvents"])
    by_name = {event["name"]: (event["pid"], event["tid"]) for event in trace["traceEvents"]
               if event["ph"] in "Xi"}
    # pids: "" -> 41, "Spans" -> 42, "Traces" -> 43; tids above 41: "" -> 42, "PyTorch Profiler" -> 43, ...
    assert by_name["Record Window End"] == (41, 42)
    assert by_name["PyTorch Profiler (0)"] == (42, 43)
    assert by_name["Iteration Start"] == (43, 44)
    assert by_name["forward"] == (40, 40) and by_name["aten::add"] == (40, 41)
    sort_index = [event for event in trace["traceEvents"] if event["name"] == "process_sort_index"]
    assert sort_index[0]["pid"] == 42  # the same string gets the same number on every event
    assert integer_ids(torch_like_trace()) == trace  # stable
    assert original == torch_like_trace()  # the argument is left as it was


def test_string_ids_keep_their_text_as_track_names():
    trace = integer_ids(torch_like_trace())
    processes, threads = metadata(trace, "process_name"), metadata(trace, "thread_name")
    assert processes[42] == "Spans" and processes[43] == "Traces" and 41 not in processes
    assert threads[(42, 43)] == "PyTorch Profiler" and threads[(43, 44)] == "Trace PyTorch Profiler"
    assert processes[40] == "python"  # named by the trace already: no second name added


def test_numeric_strings_are_their_number():
    trace = integer_ids({"traceEvents": [
        {"ph": "X", "name": "a", "pid": "7", "tid": "8", "ts": 0, "dur": 1},
        {"ph": "X", "name": "b", "pid": 7, "tid": 8, "ts": 1, "dur": 1},
    ]})
    assert [(event["pid"], event["tid"]) for event in trace["traceEvents"]] == [(7, 8), (7, 8)]
    assert metadata(trace, "process_name") == {}


def test_every_track_gets_exactly_one_name_and_given_names_win():
    trace = name_tracks(integer_ids(torch_like_trace()), {40: "detbench yolov7 torch fp32"}, {(40, 40): "main thread"})
    events = trace["traceEvents"]
    process_names = [event for event in events if event["ph"] == "M" and event["name"] == "process_name"]
    thread_names = [event for event in events if event["ph"] == "M" and event["name"] == "thread_name"]
    assert len({event["pid"] for event in process_names}) == len(process_names)
    assert len({(event["pid"], event["tid"]) for event in thread_names}) == len(thread_names)
    processes, threads = metadata(trace, "process_name"), metadata(trace, "thread_name")
    assert processes == {40: "detbench yolov7 torch fp32", 41: "process 41", 42: "Spans", 43: "Traces"}
    assert threads[(40, 40)] == "main thread" and threads[(40, 41)] == "thread 41"
    assert threads[(42, 43)] == "PyTorch Profiler"


def test_nothing_is_lost():
    original = torch_like_trace()
    trace = name_tracks(integer_ids(original), {40: "detbench"}, {(40, 40): "main thread"})
    assert len(complete_events(trace)) == len(complete_events(original)) == 5
    strip = [{key: value for key, value in event.items() if key not in ("pid", "tid")}
             for event in original["traceEvents"] if event["ph"] != "M"]
    kept = [{key: value for key, value in event.items() if key not in ("pid", "tid")}
            for event in trace["traceEvents"] if event["ph"] != "M"]
    assert kept == strip  # same events, same order, same times and names
    assert trace["baseTimeNanoseconds"] == original["baseTimeNanoseconds"]


def test_merged_events_move_onto_the_trace_clock_as_their_own_process_and_threads():
    trace = integer_ids(torch_like_trace())  # pids up to 43, tids up to 44
    others = [{"ph": "X", "cat": "Node", "name": "n", "pid": 40, "tid": 40, "ts": 1000, "dur": 5},
              {"ph": "X", "cat": "Node", "name": "m", "pid": 40, "tid": 7, "ts": 1001, "dur": 2}]
    merged = merge_events(trace, others, -790.0, "runtime", {40: "main thread"}, sort_index=41)
    added = merged["traceEvents"][len(trace["traceEvents"]):]
    # a tid seen in two processes would read as a reused thread: the merged threads get tids of their own
    assert added[0] == {"ph": "X", "cat": "Node", "name": "n", "pid": 44, "tid": 46, "ts": 210.0, "dur": 5}
    assert added[1] == {"ph": "X", "cat": "Node", "name": "m", "pid": 44, "tid": 45, "ts": 211.0, "dur": 2}
    assert metadata(merged, "process_name")[44] == "runtime"
    assert metadata(merged, "thread_name")[(44, 46)] == "main thread"
    assert metadata(merged, "thread_name")[(44, 45)] == "thread 7"
    assert [event["args"] for event in added if event["name"] == "process_sort_index"] == [{"sort_index": 41}]
    assert others[0]["pid"] == 40 and others[0]["ts"] == 1000  # the arguments are left as they were


def test_trace_origin():
    assert trace_origin_ns(torch_like_trace()) == 1_790_000_000_000_000_000
    assert trace_origin_ns({"traceEvents": []}) == 0  # older exports count from the epoch


def test_a_reported_start_is_put_on_the_unix_clock():
    wall, monotonic = 1_795_000_000_000_000_000, 12_000_000_000_000
    assert unix_ns(wall - 5_000, wall, monotonic) == wall - 5_000  # libstdc++: the wall clock already
    assert unix_ns(monotonic - 5_000, wall, monotonic) == wall - 5_000  # libc++: the monotonic clock
    with pytest.raises(ValueError, match="neither"):
        unix_ns(7, wall, monotonic)


def test_lies_within():
    outer = {"ts": 100.0, "dur": 50.0}
    assert lies_within({"ts": 100.0, "dur": 50.0}, [outer])
    assert lies_within({"ts": 120.0, "dur": 10.0}, [{"ts": 0, "dur": 1}, outer])
    assert not lies_within({"ts": 99.0, "dur": 10.0}, [outer])
    assert lies_within({"ts": 99.0, "dur": 10.0}, [outer], slack_us=1.0)
    assert not lies_within({"ts": 145.0, "dur": 10.0}, [outer])


def test_names_are_not_mangled():
    trace = name_tracks(integer_ids(copy.deepcopy(torch_like_trace())), {}, {})
    assert [event["name"] for event in complete_events(trace)] == [
        "forward", "model.0.conv", "aten::conv2d", "aten::add", "PyTorch Profiler (0)"]
    assert {event["cat"] for event in complete_events(trace)} == {"user_annotation", "cpu_op", "Trace"}
