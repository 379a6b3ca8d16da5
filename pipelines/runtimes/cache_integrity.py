"""Integrity of the cache of exported models (ONNX, OpenVINO IR, int8): each artefact is recorded with its
checksum and the key it was built for, checked before use and rebuilt, with one line saying so, when it is
truncated, corrupt or built for another key. Builds hold the cache folder's lock, so two runs sharing a cache
never both build one file, and a file only ever appears whole (written under a temporary name, then renamed).
"""
from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence, Union

from pipelines.cache_keys import default_cache_dir, file_sha256
from pipelines.runtimes.base import RuntimeNotSupported

log = logging.getLogger("detbench.cache")
RECORD_SUFFIX = ".check.json"
CONFIG_KEY = "runtime.cache_dir"


class CacheUnusable(RuntimeNotSupported):
    """runtime.cache_dir cannot hold the cache: the message names the key and the fix (exit status 2)."""


def usable_directory(configured: Union[str, Path, None]) -> Path:
    """The folder the cache goes to, created if need be and checked writable. A configured folder that cannot
    be one is refused (CacheUnusable); where the default cannot, the run goes on with a temporary cache
    removed at exit, and says so."""
    directory = Path(configured) if configured is not None else default_cache_dir()
    problem = _why_unwritable(directory)
    if problem is None:
        return directory
    if configured is not None:
        raise CacheUnusable(f"{CONFIG_KEY} {directory} {problem}; point {CONFIG_KEY} at a folder you can write "
                            "(it is created if missing), or remove the key to use the default")
    fallback = Path(tempfile.mkdtemp(prefix="detbench-cache-"))
    log.warning(f"the model cache {directory} {problem}: this run exports into {fallback} and nothing is kept for "
                f"the next run (set {CONFIG_KEY} to a writable folder to keep the cache)")
    return fallback


def _why_unwritable(directory: Path) -> Optional[str]:
    if directory.exists() and not directory.is_dir():
        return "is a file, not a folder"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe, name = tempfile.mkstemp(dir=directory, prefix=".write-check.")
        os.close(probe)
        os.unlink(name)
    except OSError as error:
        if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return "is read-only (a new file cannot be written in it)"
        return f"cannot be used ({error.strerror or error})"
    return None


def record_path(first: Path) -> Path:
    return first.with_name(first.name + RECORD_SUFFIX)


def problem(files: Sequence[Path], key: str) -> Optional[str]:
    """None when every file is whole and was built for `key`; "missing" when none exists (a plain miss);
    otherwise why the cached artefact cannot be used."""
    present = [path.is_file() for path in files]
    record = record_path(files[0])
    if not any(present) and not record.exists():
        return "missing"
    if not all(present):
        return f"is incomplete ({', '.join(p.name for p, here in zip(files, present) if not here)} missing)"
    try:
        written = json.loads(record.read_text(encoding="utf-8"))
        expected = {name: (int(entry["bytes"]), str(entry["sha256"])) for name, entry in written["files"].items()}
        built_for = str(written["key"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "has no readable checksum record (cut short, or written by an older version)"
    if built_for != key:
        return "was built for another key (a foreign file)"
    for path in files:
        size, digest = expected.get(path.name, (None, None))
        actual = path.stat().st_size
        if size is None:
            return f"is not in its checksum record ({path.name})"
        if actual != size:
            return (f"is truncated ({path.name}: {actual:,} of {size:,} bytes)" if actual < size else
                    f"has the wrong size ({path.name}: {actual:,} bytes, {size:,} recorded)")
        if file_sha256(path) != digest:
            return f"is corrupt ({path.name} no longer matches its checksum)"
    return None


def usable(files: Sequence[Path], key: str) -> bool:
    """Whether the cached artefact can be used as it is; a damaged one is announced as rebuilt."""
    found = problem(files, key)
    if found is not None and found != "missing":
        log.warning(f"cache: {files[0]} {found}; rebuilding it")
    return found is None


def record(files: Sequence[Path], key: str) -> None:
    """Writes the checksum record of files just moved into place (the record goes last: no record, no use)."""
    entry = {"key": key, "files": {path.name: {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
                                   for path in files}}
    write_atomically(record_path(files[0]), json.dumps(entry, indent=2).encode())


def write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


@contextmanager
def building(directory: Path) -> Iterator[None]:
    """Holds the cache folder's lock: one process at a time checks and builds, others wait for it."""
    handle = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # closing releases the lock
