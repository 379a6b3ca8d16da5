"""The commands of benchmark.py beside a plain run (utils/commands/registry.py): each one's main loads from a module
of utils/commands/, and --help shows its usage and purpose."""
import inspect

from utils.commands.registry import COMMANDS, command_lines


def test_every_command_loads_its_main_from_its_folder():
    for name, command in COMMANDS.items():
        assert command.name == name and command.main.startswith("utils.commands.")
        main = command.load()
        assert callable(main) and len(inspect.signature(main).parameters) == (2 if command.runs_in_process else 1)


def test_help_shows_each_commands_usage_then_its_purpose():
    lines = command_lines()
    assert len(lines) == 2 * len(COMMANDS)
    for index, command in enumerate(COMMANDS.values()):
        assert lines[2 * index] == f"  python benchmark.py {command.usage}"
        assert lines[2 * index + 1] == f"      {command.purpose}"
