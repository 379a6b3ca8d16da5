"""`python benchmark.py tune --config C [--goal latency|throughput|server] [--minutes N] [--rounds N] [--set K=V]
[--sweep K=V1,V2]`:
race the ways of running the detector on this CPU (runtimes, precisions, batch sizes, threads, streams, pinning)
for the fastest whose accuracy holds, in bounded time. `--resume DIR` continues a stopped race."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from utils.commands.prepared_run import prepare_then_run
from utils.core.errors import UsageError

DEFAULT_MINUTES = 30.0


def parse_args(argv: list[str]) -> argparse.Namespace:
    from utils.commands.tune.goals import GOALS, PERCENTILES

    parser = argparse.ArgumentParser(prog="benchmark.py tune", description=__doc__)
    parser.add_argument("--config", help="YAML run configuration (see configs/); not with --resume")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a config key for every run; a key of the space (runtime.backend, runtime.precision, "
                             "dataset.batch_size, runtime.threads, runtime.streams, runtime.pinning) is fixed to it")
    parser.add_argument("--sweep", dest="sweeps", action="append", default=[], metavar="KEY=V1,V2,...",
                        help="the values of one axis of the space (narrowing it), or another key to race over")
    parser.add_argument("--goal", choices=GOALS, default="latency",
                        help="latency: single stream, per image (default); throughput: LoadGen offline "
                             "samples/s; server: LoadGen's highest rate within --target-ms")
    parser.add_argument("--percentile", choices=PERCENTILES, default="p50", help="latency: the figure raced")
    parser.add_argument("--target-ms", type=float, help="server: the latency bound, in milliseconds")
    parser.add_argument("--minutes", type=float,
                        help=f"the time budget, in minutes (default {DEFAULT_MINUTES:g}; with --resume, what "
                             "was left)")
    parser.add_argument("--rounds", type=int, metavar="N",
                        help="at most N rounds (default 6: candidates not told apart by then are within the "
                             "noise); round 1 takes a short first look at each way of computing")
    parser.add_argument("--launcher", choices=("local", "ray"), default="local",
                        help="where the first round runs; the finalists always race here")
    parser.add_argument("--ray-address", metavar="HOST:PORT", help="the Ray cluster for --launcher ray")
    parser.add_argument("--resume", metavar="DIR", help="continue the stopped race in this tune directory")
    return parser.parse_args(argv)


def _request(args: argparse.Namespace):
    """The request from the arguments, or from the stopped race's tune.json; every mistake a UsageError."""
    from utils.commands.tune.driver import TuneRequest
    from utils.commands.tune.goals import Goal
    from utils.commands.tune.files import TUNE_JSON

    if args.minutes is not None and args.minutes <= 0:
        raise UsageError(f"--minutes {args.minutes:g}: give a positive number of minutes (e.g. --minutes 30)")
    if args.rounds is not None and args.rounds < 1:
        raise UsageError(f"--rounds {args.rounds}: give at least 1 (round 1 takes a first look at each way)")
    if args.resume:
        state = Path(args.resume) / TUNE_JSON
        if args.config or args.overrides or args.sweeps:
            raise UsageError("--resume continues a race as it was started; drop --config, --set and --sweep")
        if not state.is_file():
            raise UsageError(f"--resume {args.resume}: no {TUNE_JSON} there; give the directory a tune run printed")
        data = json.loads(state.read_text())
        request = TuneRequest.from_document(data["request"])
        spent_minutes = data["spent_s"] / 60.0
        request.minutes = (spent_minutes + args.minutes if args.minutes is not None
                           else max(request.minutes, spent_minutes))
        if args.rounds is not None:
            request.rounds = args.rounds
        return request
    if not args.config:
        raise UsageError("tune needs --config FILE (or --resume DIR to continue a stopped race)")
    if args.goal == "server" and args.target_ms is None:
        raise UsageError("--goal server needs --target-ms MS, the latency bound its rate must meet")
    if args.goal != "server" and args.target_ms is not None:
        raise UsageError("--target-ms is for --goal server; drop it or add --goal server")
    goal = Goal(args.goal, args.percentile, args.target_ms)
    request = TuneRequest(args.config, args.overrides, args.sweeps, goal, args.minutes or DEFAULT_MINUTES)
    if args.rounds is not None:
        request.rounds = args.rounds
    return request


def tune_main(argv: list[str]) -> int:
    def runner():
        args = parse_args(argv)
        from utils.launchers import make_launcher
        from utils.commands.tune.driver import Tune

        resume = Path(args.resume) if args.resume else None
        return Tune(_request(args), make_launcher(args.launcher, args.ray_address), resume=resume)

    return prepare_then_run(runner, "interrupted before the race started; nothing was run")
