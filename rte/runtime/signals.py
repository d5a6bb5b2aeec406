"""How the daemons wait for SIGTERM or SIGINT: the handler only notes the signal.

A Python signal handler runs in the main thread between two bytecodes, possibly while that
thread holds a lock: inside ``Event.wait`` or ``Event.set`` (a Condition's lock), or a log
write (the handler's lock). Setting an Event or logging from the handler can then deadlock the
main thread against itself. So the handler records the signal number and writes one byte to a
pipe, both lock-free; the main thread waits in ``select`` on that pipe and does the rest (logs,
stops the app) outside the handler.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from collections.abc import Iterable
from types import FrameType, TracebackType
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class SignalWaiter:
    """Notes the first of ``signals`` and wakes :meth:`wait`. Install it from the main thread.

    Used as a context manager, it restores the previous handlers on exit.
    """

    def __init__(self, signals: Iterable[signal.Signals] = STOP_SIGNALS) -> None:
        self.signals = tuple(signals)
        self.received: int | None = None
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._previous: dict[signal.Signals, Any] = {}

    @property
    def name(self) -> str:
        """The received signal's name (``SIGTERM``), or an empty string."""
        return signal.Signals(self.received).name if self.received is not None else ""

    def install(self) -> SignalWaiter:
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        # No lock, no logging, no Event: see the module's docstring.
        if self.received is None:
            self.received = signum
        with contextlib.suppress(OSError):
            os.write(self._write, b"x")

    def wait(
        self, stop: threading.Event | None = None, *, poll: float = 0.5, timeout: float | None = None
    ) -> int | None:
        """Until a signal arrives (its number is returned), ``stop`` is set elsewhere or
        ``timeout`` seconds passed (None).

        ``stop`` is looked at every ``poll`` seconds; a signal wakes the wait at once.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.received is None and not (stop is not None and stop.is_set()):
            pause = poll if deadline is None else min(poll, deadline - time.monotonic())
            if pause <= 0:
                break
            select.select([self._read], [], [], pause)
        return self.received

    def __enter__(self) -> SignalWaiter:
        return self.install()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.restore()
