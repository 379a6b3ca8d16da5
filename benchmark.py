"""detbench: where every millisecond, joule and megabyte of a CPU detection pipeline goes.

    python benchmark.py --config configs/samples.yaml [--set dotted.key=value ...]
    python benchmark.py --config C --sweep KEY=V1,V2,... [--sweep KEY2=...]   (one run per point)
    python benchmark.py --config C --sweep ... --launcher ray [--ray-address HOST:PORT]   (points on a Ray cluster)
    python benchmark.py --config C --sweep ... --rounds N   (every point N times, the rounds interleaved)

Exit status (utils/core/errors.py, ExitStatus): 0 complete; 1 the environment failed (an output that cannot be
written, a missing dependency) or the run did; 2 a mistake in the arguments, the config or the inputs;
128 + the signal's number when SIGHUP (129: the terminal closed), Ctrl-C (130) or SIGTERM (143) stopped
the run.
"""
from __future__ import annotations

import argparse
import os
import sys

# Standard library only up to the point where the arguments and the config are checked: `--help` and a
# mistake in the config are answered before torch, OpenCV or pandas load.
from utils.commands.registry import COMMANDS, command_lines
from utils.core import exit_hooks
from utils.core.errors import DetbenchError, ExitStatus, UsageError, command_status
from utils.core.interruption import signal_of, stop_signals_interrupt
from utils.core.steady_console import steady_console

# Set before torch loads: hides the CUDA build's harmless profiler ERROR line.
os.environ.setdefault("KINETO_LOG_LEVEL", "5")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="commands:\n" + "\n".join(command_lines()))
    parser.add_argument("--config", required=True, help="YAML run configuration (see configs/)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, value parsed as YAML; repeatable "
                             "(e.g. --set dataset.batch_size=4 --set model.arch=yolov7-tiny)")
    parser.add_argument("--sweep", dest="sweeps", action="append", default=[], metavar="KEY=V1,V2,...",
                        help="run every combination of these values, each point in its own process, under "
                             "<run.output_dir>/<run.id>/<point>/; repeatable (e.g. --sweep dataset.batch_size=1,2)")
    parser.add_argument("--launcher", choices=("local", "ray"), default="local",
                        help="how a sweep's points run: local (one after another here, the default) or ray (one "
                             "task per point on the nodes of a Ray cluster; --sweep node=NAME,... pins them)")
    parser.add_argument("--ray-address", metavar="HOST:PORT",
                        help="the Ray cluster for --launcher ray (default: RAY_ADDRESS)")
    parser.add_argument("--rounds", type=int, default=1, metavar="N",
                        help="run every sweep point N times, the rounds interleaved (every other one in reverse "
                             "order), and call a margin beyond the noise only if it holds in every round")
    return parser.parse_args(argv)


def prepare(args: argparse.Namespace):
    """The config and the inputs it names, then everything the run needs (the run directory is claimed last).
    Raises UsageError for a user's mistake, EnvironmentFault for an output that cannot be written."""
    from datasets.dataset_root import check_dataset_path
    from utils.config.schema import load_config

    config = load_config(args.config, args.overrides)
    if config.reads_image_folder:
        check_dataset_path(config.dataset.path)

    from utils.assembly.collector import loading_without_collection
    with loading_without_collection():
        from utils.assembly.composition import Benchmark

        benchmark = Benchmark(config, args.config)
        benchmark.prepare()
    return benchmark


def sweep(args: argparse.Namespace) -> int:
    """Every point validated before any runs; then one benchmark.py process per point."""
    from utils.commands.sweep.driver import Sweep
    from utils.launchers import make_launcher

    from utils.commands.prepared_run import prepare_then_run

    return prepare_then_run(lambda: Sweep(args.config, args.overrides, args.sweeps,
                                          launcher=make_launcher(args.launcher, args.ray_address), rounds=args.rounds),
                            "interrupted before the sweep started; nothing was written")


def print_tune_advice(summary: dict, args: argparse.Namespace) -> None:
    """What this CPU makes worth trying that the run did not, and the command that races it."""
    from utils.config.schema import ConfigError, load_config
    from utils.commands.tune.advice import advice_lines
    from utils.commands.tune.space import this_machine

    def refuse(overrides: list[str]):
        try:
            load_config(args.config, [*args.overrides, *overrides])
        except ConfigError as error:
            return str(error)
        return None

    cameras = (summary.get("scenario") or {}).get("name") == "cameras"
    for line in advice_lines(summary.get("runtime") or {}, this_machine(), args.config, args.overrides, refuse,
                             cameras):
        print(line)


def main(argv: list[str] | None = None) -> int:
    # A console that goes away (a closed pipe or terminal) costs the lines it would have shown, never the run.
    with steady_console():
        return _main(sys.argv[1:] if argv is None else list(argv))


def _main(arguments: list[str]) -> int:
    command = COMMANDS.get(arguments[0]) if arguments else None
    if command is not None:
        main_of_command = command.load()
        return main_of_command(arguments[1:], main) if command.runs_in_process else main_of_command(arguments[1:])
    try:
        # Until the run starts nothing is written, so SIGTERM may end it at once, as Ctrl-C does.
        with stop_signals_interrupt():
            args = parse_args(arguments)
            if not args.sweeps and (args.launcher != "local" or args.ray_address or args.rounds != 1):
                raise UsageError("--launcher, --ray-address and --rounds are for sweeps; add --sweep KEY=V1,V2,... "
                                 "or drop them")
            benchmark = None if args.sweeps else prepare(args)
    except DetbenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.status
    except KeyboardInterrupt as stop:
        print("interrupted before the run started; nothing was written", file=sys.stderr)
        return ExitStatus.stopped_by(signal_of(stop))
    if benchmark is None:
        return sweep(args)
    from utils.assembly.collector import release_loaded
    try:
        outcome = benchmark.execute()
    finally:
        release_loaded()
    print(outcome.report)
    if outcome.exit_status == ExitStatus.OK:
        print_tune_advice(outcome.summary, args)
    if outcome.exit_status == ExitStatus.FAILED:
        print(f"error: {outcome.summary.get('stop_reason')}; summary.json says status: failed where it could "
              "still be written", file=sys.stderr)
    elif outcome.exit_status == ExitStatus.USAGE:
        print(f"error: {outcome.summary.get('stop_reason')}", file=sys.stderr)
    return outcome.exit_status


if __name__ == "__main__":
    with steady_console():
        # A Python without the dependencies gets a setup instruction from command_status, not a traceback.
        status = command_status(main)
        status = exit_hooks.leave(status)  # past a thread a stop left running (utils/core/exit_hooks.py)
    sys.exit(status)
