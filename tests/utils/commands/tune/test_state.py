"""utils/commands/tune/state.py: the race's plain state, as tune.json keeps it for --resume."""
from utils.commands.tune.space import Candidate
from utils.commands.tune.state import Entry, Run, run_dir_name


def test_a_later_attempt_of_a_round_gets_a_new_name_and_nothing_is_overwritten():
    taken = {"a,round=1", "a,round=1,try=2"}
    assert run_dir_name("a", 1, taken.__contains__) == "a,round=1,try=3"
    assert run_dir_name("a", 2, taken.__contains__) == "a,round=2"


def test_a_candidate_can_win_only_on_a_budget_verdict_without_doubt():
    entry = Entry(Candidate((("runtime.backend", "torch"),)))
    assert entry.can_win is None  # unsettled
    entry.verdict = "within_budget"
    assert entry.can_win is True
    entry.doubt = "undecided"
    assert entry.can_win is False
    assert Entry(entry.candidate, verdict="worse").can_win is False


def test_only_complete_runs_count_and_a_runs_document_leaves_its_figures_out():
    done = Run("a", 1, True, "a,round=1", status="complete", figures_row={"fps": 3.0})
    entry = Entry(Candidate((("runtime.backend", "torch"),)), runs=[done, Run("a", 2, False, "a,round=2")])
    assert entry.complete == [done]
    document = done.document()
    assert document["status"] == "complete" and "figures" not in document and "figures_row" not in document
