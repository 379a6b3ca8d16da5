"""Files written whole or not at all: each goes to a hidden temporary name beside its target, then is renamed
over it, so no reader (and no later crash) ever sees a truncated file.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from utils.core.errors import EnvironmentFault


class OutputWriteError(EnvironmentFault):
    """A file of the run could not be written; names the path and the operating system's reason."""

    def __init__(self, path: Path, cause: OSError):
        self.path = Path(path)
        self.cause = cause
        reason = cause.strerror or str(cause)
        super().__init__(f"could not write {self.path}: {reason}")


def temporary_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


@contextmanager
def atomic_file(target: Path | str, mode: str = "w", newline: str | None = None) -> Iterator[IO]:
    """Open a temporary file for writing; on success it replaces `target`, on any error it is removed."""
    target = Path(target)
    temporary = temporary_name(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, mode, **({"newline": newline} if "b" not in mode else {})) as handle:
            yield handle
        os.replace(temporary, target)
    except OSError as error:
        _remove_quietly(temporary)
        raise OutputWriteError(target, error) from error
    except BaseException:
        _remove_quietly(temporary)
        raise


def atomic_write_bytes(target: Path | str, data: bytes) -> Path:
    with atomic_file(target, "wb") as handle:
        handle.write(data)
    return Path(target)


def atomic_write_text(target: Path | str, text: str) -> Path:
    with atomic_file(target, "w") as handle:
        handle.write(text)
    return Path(target)


def _remove_quietly(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
