"""detbench: where every millisecond, joule and megabyte of a CPU detection pipeline goes.

    python benchmark.py --config configs/samples.yaml [--set dotted.key=value ...]
    python benchmark.py --config C --sweep KEY=V1,V2,... [--sweep KEY2=...]   (one run per point)
    python benchmark.py --config C --sweep ... --launcher ray [--ray-address HOST:PORT]   (points on a Ray cluster)
    python benchmark.py compare RUN_A RUN_B [--out DIR]

Exit status: 0 complete; 1 an output could not be written; 2 a mistake in the config or the inputs;
128 + the signal's number when Ctrl-C (130) or SIGTERM (143) stopped the run.
"""
from __future__ import annotations

import argparse
import os
import sys

from utils.harness.interruption import exit_status, signal_of, stop_signals_interrupt

# Set before torch loads: hides the CUDA build's harmless profiler ERROR line.
os.environ.setdefault("KINETO_LOG_LEVEL", "5")

EXIT_FAILED = 1
EXIT_USAGE = 2


class CannotStart(Exception):
    """The run cannot start: carries the exit status and the reason, printed as one `error:` line."""

    def __init__(self, status: int, reason: Exception):
        super().__init__(str(reason))
        self.status = status


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    return parser.parse_args(argv)


def prepare(args: argparse.Namespace):
    """The config, then everything the run needs (the run directory is claimed last). Raises CannotStart for a
    user mistake (exit status 2) or an output that cannot be written (1)."""
    from utils.config import ConfigError, load_config

    try:
        config = load_config(args.config, args.overrides)
    except ConfigError as exc:
        raise CannotStart(EXIT_USAGE, exc) from None

    from datasets.image_folder import DatasetError
    from models import CheckpointError, ModelDefinitionError
    from pipelines.registry import UnknownArchitecture
    from pipelines.runtimes.base import RuntimeNotSupported
    from utils.harness.composition import Benchmark
    from utils.harness.start_refusals import StartRefused
    from utils.harness.scenario import LoadgenMissing
    from utils.writers.atomic import OutputWriteError
    from utils.writers.run_directory import RunDirectoryError

    benchmark = Benchmark(config, args.config)
    try:
        benchmark.prepare()
    except (DatasetError, CheckpointError, ModelDefinitionError, RunDirectoryError, UnknownArchitecture,
            RuntimeNotSupported, StartRefused, LoadgenMissing) as exc:
        raise CannotStart(EXIT_USAGE, exc) from None
    except OutputWriteError as exc:
        raise CannotStart(EXIT_FAILED, exc) from None
    return benchmark


def sweep(args: argparse.Namespace) -> int:
    """Every point validated before any runs; then one benchmark.py process per point."""
    from utils.config import ConfigError
    from utils.sweep.driver import Sweep
    from utils.sweep.launchers import LauncherError, make_launcher
    from utils.sweep.plan import SweepError
    from utils.writers.atomic import OutputWriteError
    from utils.writers.run_directory import RunDirectoryError

    try:
        with stop_signals_interrupt():
            runner = Sweep(args.config, args.overrides, args.sweeps,
                           launcher=make_launcher(args.launcher, args.ray_address))
            runner.prepare()
    except (ConfigError, SweepError, RunDirectoryError, LauncherError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OutputWriteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt as stop:
        print("interrupted before the sweep started; nothing was written", file=sys.stderr)
        return exit_status(signal_of(stop))
    return runner.run()


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["compare"]:
        from utils.compare.command import compare_main

        return compare_main(arguments[1:])
    try:
        # Until the run starts nothing is written, so SIGTERM may end it at once, as Ctrl-C does.
        with stop_signals_interrupt():
            args = parse_args(arguments)
            if not args.sweeps and (args.launcher != "local" or args.ray_address):
                raise CannotStart(EXIT_USAGE, ValueError("--launcher and --ray-address are for sweeps; add --sweep "
                                                         "KEY=V1,V2,... or drop them"))
            benchmark = None if args.sweeps else prepare(args)
    except CannotStart as refused:
        print(f"error: {refused}", file=sys.stderr)
        return refused.status
    except KeyboardInterrupt as stop:
        print("interrupted before the run started; nothing was written", file=sys.stderr)
        return exit_status(signal_of(stop))
    if benchmark is None:
        return sweep(args)
    outcome = benchmark.execute()
    print(outcome.report)
    if outcome.exit_status == EXIT_FAILED:
        print(f"error: {outcome.summary.get('stop_reason')}; summary.json says status: failed where it could "
              "still be written", file=sys.stderr)
    elif outcome.exit_status == EXIT_USAGE:
        print(f"error: {outcome.summary.get('stop_reason')}", file=sys.stderr)
    return outcome.exit_status


if __name__ == "__main__":
    from utils.harness.scenario import leave_past_running_tests

    sys.exit(leave_past_running_tests(main()))
