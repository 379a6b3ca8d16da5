"""The journal of rows any thread appends (a camera run's frames)."""
import threading

import pandas as pd

from utils.measure.steps.journal import RowJournal


def test_rows_appended_from_several_threads_are_on_disk_whole_at_once(tmp_path):
    journal = RowJournal(tmp_path / "frames.csv", ("stream", "frame"))
    threads = [threading.Thread(target=lambda name=name: [journal.append([{"stream": name, "frame": index}])
                                                          for index in range(50)]) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = pd.read_csv(tmp_path / "frames.csv")  # before close: each append reached the operating system
    assert len(rows) == 100 and sorted(rows[rows["stream"] == "b"]["frame"]) == list(range(50))
    journal.append([])
    journal.close()
    assert (tmp_path / "frames.csv").read_text().count("\n") == 101
