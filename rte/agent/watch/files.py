"""File triggers: call back with a reason when watched files change.

Directories are watched, never the files themselves: the kubelet replaces its checkpoints by
renaming a new file over the old one, and a watch on the old inode would go deaf. A
:class:`WatchSpec` names a directory and the entries in it that matter (or any entry).

With inotify (the normal case):

* the queue is drained completely on every wake-up, and a queue overflow fires every reason,
  since any change may have been lost;
* a watch the kernel drops (the directory was deleted or unmounted) fires its reason and is
  re-armed once the directory exists again; so is a directory that did not exist at start. A
  re-armed watch fires once, because something may have changed while nobody looked.

Without inotify (not Linux, or the per-user instance limit reached) the same specs are polled:
the metadata (inode, size, mtime, ctime) of the watched entries is compared every
``poll_interval``. Slower to notice, equally correct.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rte.agent.watch import inotify as ino

log = logging.getLogger(__name__)

_MASK = (
    ino.IN_ATTRIB
    | ino.IN_CLOSE_WRITE
    | ino.IN_MOVED_FROM
    | ino.IN_MOVED_TO
    | ino.IN_CREATE
    | ino.IN_DELETE
    | ino.IN_DELETE_SELF
    | ino.IN_MOVE_SELF
    | ino.IN_ONLYDIR
)
_GONE = ino.IN_IGNORED | ino.IN_DELETE_SELF | ino.IN_MOVE_SELF | ino.IN_UNMOUNT


@dataclass(frozen=True)
class WatchSpec:
    """Entries ``names`` of ``directory`` (None: any entry); a change fires ``reason``."""

    directory: Path
    names: frozenset[str] | None
    reason: str

    def matches(self, name: str) -> bool:
        return self.names is None or name in self.names


Stamp = tuple[int, int, int, int]


def _stamp(path: str) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def snapshot(spec: WatchSpec) -> dict[str, Stamp | None]:
    """Metadata of the watched entries (the polling fallback compares two of these)."""
    directory = os.fspath(spec.directory)
    if spec.names is not None:
        return {n: _stamp(os.path.join(directory, n)) for n in sorted(spec.names)}
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    return {n: _stamp(os.path.join(directory, n)) for n in sorted(names)}


class FileWatcher:
    """Runs in its own thread; ``on_event(reason)`` is called from that thread."""

    def __init__(
        self,
        specs: Sequence[WatchSpec],
        on_event: Callable[[str], None],
        *,
        use_inotify: bool = True,
        poll_interval: float = 1.0,
        rearm_interval: float = 1.0,
    ) -> None:
        self.specs = tuple(specs)
        self._on_event = on_event
        self._poll_interval = poll_interval
        self._rearm_interval = rearm_interval
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._inotify: ino.Inotify | None = None
        if use_inotify:
            try:
                self._inotify = ino.open_inotify()
            except OSError as e:
                log.warning("inotify unavailable (%s); polling watched files every %.1fs", e, poll_interval)
        self._armed: dict[int, list[WatchSpec]] = {}
        self._unarmed: list[WatchSpec] = list(self.specs)

    @property
    def mode(self) -> str:
        return "inotify" if self._inotify is not None else "polling"

    def start(self) -> None:
        if self._inotify is not None:
            self._arm(initial=True)
        self._thread = threading.Thread(target=self._run, name="rte-file-watch", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout)
        if self._inotify is not None:
            self._inotify.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    # -- inotify -------------------------------------------------------------------------------

    def _arm(self, *, initial: bool = False) -> None:
        assert self._inotify is not None
        still: list[WatchSpec] = []
        for spec in self._unarmed:
            try:
                wd = self._inotify.add_watch(spec.directory, _MASK)
            except OSError as e:
                if initial:
                    log.info("not watching %s yet: %s", spec.directory, e.strerror or e)
                still.append(spec)
                continue
            self._armed.setdefault(wd, []).append(spec)
            if not initial:
                log.info("watching %s again", spec.directory)
                self._fire([spec.reason])
        self._unarmed = still

    def _handle(self, events: Iterable[ino.Event]) -> None:
        reasons: list[str] = []
        for event in events:
            if event.mask & ino.IN_Q_OVERFLOW:
                log.warning("inotify queue overflowed; treating every watched file as changed")
                reasons.extend(s.reason for s in self.specs)
                continue
            specs = self._armed.get(event.wd, [])
            if event.mask & _GONE and not event.name:
                # The directory itself is gone: forget the watch, re-arm when it comes back.
                self._armed.pop(event.wd, None)
                if event.mask & ino.IN_IGNORED == 0 and self._inotify is not None:
                    self._inotify.remove_watch(event.wd)
                self._unarmed.extend(s for s in specs if s not in self._unarmed)
                reasons.extend(s.reason for s in specs)
                continue
            reasons.extend(s.reason for s in specs if s.matches(event.name))
        self._fire(reasons)

    def _run_inotify(self) -> None:
        assert self._inotify is not None
        fd = self._inotify.fileno()
        while not self._stop.is_set():
            timeout = self._rearm_interval if self._unarmed else None
            readable, _, _ = select.select([fd, self._wake_r], [], [], timeout)
            if self._stop.is_set():
                return
            if fd in readable:
                self._handle(self._inotify.read_events())
            if self._unarmed:
                self._arm()

    # -- polling fallback ----------------------------------------------------------------------

    def _run_polling(self) -> None:
        before = {spec: snapshot(spec) for spec in self.specs}
        while not self._stop.wait(self._poll_interval):
            reasons = []
            for spec in self.specs:
                now = snapshot(spec)
                if now != before[spec]:
                    before[spec] = now
                    reasons.append(spec.reason)
            self._fire(reasons)

    # -- common --------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            if self._inotify is not None:
                self._run_inotify()
            else:
                self._run_polling()
        except Exception:  # a watcher bug must not take the agent down; the timer still runs
            log.exception("file watcher stopped")

    def _fire(self, reasons: Iterable[str]) -> None:
        for reason in dict.fromkeys(reasons):
            self._on_event(reason)
