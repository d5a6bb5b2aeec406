"""Linux inotify through ctypes on libc: no extra dependency, no compiled code.

Only what the agent's file watcher needs: a non-blocking, close-on-exec instance, adding and
removing watches, and draining every queued event in one call. :func:`open_inotify` raises
:class:`OSError` when inotify is unavailable (not Linux, no libc symbol, or the per-user
instance limit reached); callers then fall back to polling file metadata.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
from dataclasses import dataclass

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000

_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name
_READ_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True)
class Event:
    """One inotify event; ``wd`` is -1 for a queue overflow, ``name`` is "" for the directory itself."""

    wd: int
    mask: int
    name: str


def _libc() -> ctypes.CDLL:
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError) as e:
        raise OSError(errno.ENOSYS, f"inotify is not available: {e}") from e
    return libc


def parse_events(data: bytes) -> list[Event]:
    """Decode a buffer read from an inotify descriptor (whole events only)."""
    events = []
    offset = 0
    while offset + _HEADER.size <= len(data):
        wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
        offset += _HEADER.size
        raw = data[offset : offset + length]
        offset += length
        events.append(Event(wd, mask, os.fsdecode(raw.split(b"\0", 1)[0])))
    return events


class Inotify:
    """One inotify instance; use :func:`open_inotify` to create it."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self._libc = libc
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def add_watch(self, path: str | os.PathLike[str], mask: int) -> int:
        """Watch ``path``; the same inode always gets the same descriptor back."""
        wd = int(self._libc.inotify_add_watch(self._fd, os.fsencode(path), mask))
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), os.fspath(path))
        return wd

    def remove_watch(self, wd: int) -> None:
        # EINVAL means the kernel already dropped it (the directory went away): nothing to do.
        self._libc.inotify_rm_watch(self._fd, wd)

    def read_events(self) -> list[Event]:
        """Every event queued now; [] when none. Never blocks."""
        chunks = []
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                break
            if not data:
                break
            chunks.append(data)
        return [e for chunk in chunks for e in parse_events(chunk)]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def open_inotify() -> Inotify:
    """A non-blocking, close-on-exec inotify instance; :class:`OSError` when unavailable."""
    libc = _libc()
    fd = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"inotify_init1: {os.strerror(code)}")
    return Inotify(libc, fd)
