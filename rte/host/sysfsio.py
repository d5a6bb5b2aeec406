"""Reading sysfs files under an injected root: the only place that touches the file system.

Kept apart from the parsers so they stay pure (text in, value out), and shared by the NUMA/CPU
reader and the PCI reader. Missing files are ``None`` (fewer facts); any other failure, and any
parser's ``ValueError``, becomes an :class:`~rte.errors.InputError` naming the path.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import TypeVar

from rte.errors import InputError

T = TypeVar("T")

# sysfs attributes print at most one page, so one read of this size gets a whole attribute;
# regular files (fixture trees) larger than this are read in a loop.
_CHUNK = 1 << 16


def read_text(path: str) -> str | None:
    """The file's contents (latin-1, never fails to decode), or ``None`` when it does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise InputError(path, f"cannot open: {e.strerror}") from e
    try:
        chunks = [os.read(fd, _CHUNK)]
        while len(chunks[-1]) == _CHUNK:
            chunks.append(os.read(fd, _CHUNK))
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror}") from e
    finally:
        os.close(fd)
    return b"".join(chunks).decode("latin-1")


def read_parsed(path: str, parse: Callable[[str], T]) -> T | None:
    """``parse`` applied to the file's text; ``None`` when the file is absent."""
    text = read_text(path)
    if text is None:
        return None
    return parse_at(path, text, parse)


def parse_at(source: str, text: str, parse: Callable[[str], T]) -> T:
    """``parse(text)``, turning its ``ValueError`` into an InputError that names ``source``."""
    try:
        return parse(text)
    except ValueError as e:
        raise InputError(source, str(e)) from e


def link_target(path: str) -> str | None:
    """Where a symlink points (unresolved), or ``None`` when the entry is absent.

    Some sysfs snapshots, and copies made without preserving links, store a link as a small
    regular file holding the target text; that form is accepted so such trees read the same.
    """
    try:
        return os.readlink(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        if e.errno != errno.EINVAL:  # EINVAL: exists but is not a symlink
            raise InputError(path, f"cannot read link: {e.strerror}") from e
    if os.path.isdir(path):
        return None  # a dereferenced copy: callers that need the target use the path itself
    text = read_text(path)
    if text is None:
        return None
    target = text.replace("\x00", "").strip()
    if not target or "\n" in target:
        raise InputError(path, f"neither a symlink nor a stored link target: {text[:80]!r}")
    return target


def link_name(path: str) -> str | None:
    """The last component of a link's target (a driver or device name), ``None`` if absent."""
    target = link_target(path)
    if target is None:
        return None
    return target.rstrip("/").rpartition("/")[2] or None


def resolve_under(root: str, link_dir: str, target: str, source: str) -> str:
    """Join a relative link target to its directory, refusing anything that leaves ``root``.

    Following an absolute or escaping link would read the host's (or container's) own /sys
    instead of the injected tree, which is exactly the mistake this reader must not make.
    """
    resolved = os.path.normpath(os.path.join(link_dir, target))
    if resolved != root and not resolved.startswith(root + os.sep):
        raise InputError(source, f"link target {target!r} leaves the sysfs root {root}")
    return resolved


def list_dir(path: str) -> list[str] | None:
    """Entry names of a directory, or ``None`` when it does not exist."""
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise InputError(path, f"cannot list: {e.strerror}") from e


def parse_int(text: str) -> int:
    """A decimal integer attribute ("42\\n", NUL bytes tolerated)."""
    cleaned = text.replace("\x00", "").strip()
    digits = cleaned[1:] if cleaned.startswith("-") else cleaned
    # int() alone would also take "+5", "1_000" and " 5 " inside; sysfs never writes those
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"not an integer: {text.strip()[:80]!r}")
    return int(cleaned)


def parse_optional_id(text: str) -> int | None:
    """An id attribute where the kernel writes -1 for "unknown" (numa_node, die_id, ...)."""
    value = parse_int(text)
    if value == -1:
        return None
    if value < 0:
        raise ValueError(f"negative id other than -1: {text.strip()[:80]!r}")
    return value
