"""A quiet console: the log lines of the libraries detbench drives (NNCF, OpenVINO, ONNX Runtime, Ray, LoadGen)
go to the run's log file; the console keeps detbench's own lines and progress bars, and a dependency's warning
or error still reaches it as one line that points to the file.

NNCF alone wrote about 100 `INFO:nncf:` lines per int8 run, through a stdout handler it installs when imported
(often after the run started); ONNX Runtime's quantizer logs through the root logger. So loggers are adopted
when they exist and again as soon as their package is imported, records reaching the root logger are routed
by the package that logged them, and everything is put back as it was when the run ends.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from pathlib import Path
from typing import Callable, Optional

from pipelines.runtimes.registry import SPECS

# The runtimes' libraries (each spec's log_sources), the sweep launcher's and LoadGen's.
DEPENDENCIES = (*(source for spec in SPECS.values() for source in spec.log_sources), "ray", "mlperf_loadgen")
FORMAT = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
MAX_CONSOLE_LINE = 240


def _dependency_of(record: logging.LogRecord) -> Optional[str]:
    """The dependency a record comes from: by its logger's name, or for the root logger by the file that
    logged it."""
    top = record.name.split(".")[0]
    if top in DEPENDENCIES:
        return top
    if record.name == "root":
        parts = Path(record.pathname).parts
        return next((name for name in DEPENDENCIES if name in parts), None)
    return None


class _Router(logging.Handler):
    """Every record to the log file (kept in memory until the file exists); a warning or worse also to the
    console, as one line naming the file."""

    def __init__(self, console: Callable[[str], None], log_file: Path):
        super().__init__(logging.NOTSET)
        self.console, self.log_file = console, log_file
        self.pending: list[str] = []
        self.stream = None
        self.ready = False  # the run directory exists: the file is made at the first line

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.pending.append(FORMAT.format(record))
            if self.ready:
                self._write()
            if record.levelno >= logging.WARNING:
                first = record.getMessage().strip().splitlines()[0] if record.getMessage().strip() else ""
                first = first if len(first) <= MAX_CONSOLE_LINE else first[:MAX_CONSOLE_LINE - 3] + "..."
                self.console(f"{_dependency_of(record) or record.name} {record.levelname.lower()}: {first} "
                             f"(full log: {self.log_file})")
        except Exception:
            self.handleError(record)

    def open(self) -> None:
        self.ready = True
        if self.pending:
            self._write()

    def _write(self) -> None:
        if self.stream is None:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            self.stream = open(self.log_file, "a", encoding="utf-8")
        self.stream.writelines(line + "\n" for line in self.pending)
        self.stream.flush()
        self.pending.clear()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None
        super().close()


class _RootFilter(logging.Filter):
    """On the root logger's handlers: a dependency's record goes to the router instead."""

    def __init__(self, router: _Router):
        super().__init__()
        self.router = router

    def filter(self, record: logging.LogRecord) -> bool:
        return _dependency_of(record) is None


class _AdoptOnImport(importlib.abc.MetaPathFinder):
    """Adopts a dependency's loggers right after its package is imported (its import may add handlers)."""

    def __init__(self, routing: "DependencyLogs"):
        self.routing = routing

    def find_spec(self, name, path=None, target=None):
        if name not in DEPENDENCIES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            self.routing.adopt_all()
        spec.loader.exec_module = exec_module
        return spec


class DependencyLogs:
    """start() before the dependencies run, open() once the run directory exists, stop() at the end."""

    def __init__(self, console: Callable[[str], None], log_file: Path):
        self.router = _Router(console, log_file)
        self.root_filter = _RootFilter(self.router)
        self.finder = _AdoptOnImport(self)
        self.saved: dict[str, tuple[list, bool]] = {}
        self.root_state: Optional[tuple[list, int]] = None
        self.lock = threading.Lock()

    def start(self) -> None:
        root = logging.getLogger()
        self.root_state = (list(root.handlers), root.level)
        for handler in root.handlers:
            handler.addFilter(self.root_filter)
        # Also keeps a dependency's basicConfig() from taking the root logger.
        root.addHandler(_RootRouter(self.router, printing=not root.handlers))
        sys.meta_path.insert(0, self.finder)
        self.adopt_all()

    def adopt_all(self) -> None:
        """Every logger of a dependency that exists now and would print on its own: its records go to the
        router only (a child that hands its records up reaches the router through its parent or the root)."""
        with self.lock:
            for name, logger in list(logging.Logger.manager.loggerDict.items()):
                if (not isinstance(logger, logging.Logger) or name.split(".")[0] not in DEPENDENCIES
                        or name in self.saved or (logger.propagate and not logger.handlers and "." in name)):
                    continue
                self.saved[name] = (list(logger.handlers), logger.propagate)
                logger.handlers = [self.router]
                logger.propagate = False

    def open(self) -> None:
        self.router.open()

    def stop(self) -> None:
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        with self.lock:
            for name, (handlers, propagate) in self.saved.items():
                logger = logging.getLogger(name)
                logger.handlers, logger.propagate = handlers, propagate
            self.saved.clear()
        root = logging.getLogger()
        if self.root_state is not None:
            handlers, level = self.root_state
            for handler in handlers:
                handler.removeFilter(self.root_filter)
            root.handlers, root.level = handlers, level
            self.root_state = None
        self.router.close()


class _RootRouter(logging.Handler):
    """On the root logger: what a dependency logs there goes to the router. A warning of detbench's own goes
    to the console as Python's last-resort handler would have printed it, where the root had no handler."""

    def __init__(self, router: _Router, printing: bool):
        super().__init__(logging.NOTSET)
        self.router, self.printing = router, printing

    def emit(self, record: logging.LogRecord) -> None:
        if _dependency_of(record) is not None:
            self.router.handle(record)
        elif self.printing and record.levelno >= logging.WARNING:
            self.router.console(record.getMessage())
