"""The commands of benchmark.py beside a plain run, one line each: its name, where its main function lives
("module:function", imported only when the command runs, so that `--help` and a plain run load none of them), and
its line in `benchmark.py --help`. A command is a folder of utils/commands/ and one line here.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Command:
    name: str  # benchmark.py's first argument
    main: str  # "module:function": function(argv) -> exit status, or function(argv, run) where `runs_in_process`
    usage: str  # its arguments, as benchmark.py --help shows them
    purpose: str  # what it answers, in one line of --help
    runs_in_process: bool = False  # given benchmark.py's plain run, to start runs in this process

    def load(self) -> Callable[..., int]:
        module, _, function = self.main.partition(":")
        return getattr(importlib.import_module(module), function)


COMMANDS = {command.name: command for command in (
    Command("compare", "utils.commands.compare.command:compare_main",
            "compare RUN_A RUN_B [--out DIR] [--fail-above PCT [--metric M ...]]",
            "what differs between two runs, beyond the noise; with --fail-above, a regression gate for CI"),
    Command("tune", "utils.commands.tune.command:tune_main",
            "tune --config C [--goal latency|throughput|server] [--minutes N] [--rounds N]",
            "a race for the fastest way to run the config's detector on this CPU within its accuracy budget"),
    Command("match", "utils.commands.match.command:match_main",
            "match --config C --against DETECTIONS [--set K=V ...] [--tries N]",
            "the recipe that reproduces your own application's detections of a file, as --set flags"),
    Command("runs", "utils.commands.tune.shared_runs:runs_main", "runs SPEC [--set K=V ...]",
            "several runs in one process, as tune starts them; SPEC is a JSON list of [run id, benchmark.py "
            "arguments]", runs_in_process=True),
)}


def command_lines() -> list[str]:
    return [line for command in COMMANDS.values()
            for line in (f"  python benchmark.py {command.usage}", f"      {command.purpose}")]
