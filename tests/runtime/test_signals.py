"""The daemons' signal waiter: a signal wakes the wait at once, and handlers are given back."""

from __future__ import annotations

import os
import signal
import threading
import time

from rte.runtime.signals import SignalWaiter


def test_a_signal_wakes_the_waiter_and_the_previous_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with SignalWaiter() as signals:
        assert signal.getsignal(signal.SIGTERM) != before
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM)).start()
        started = time.monotonic()
        assert signals.wait(poll=30) == signal.SIGTERM  # woken by the pipe, not by the poll
        assert time.monotonic() - started < 20
        assert signals.name == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) == before


def test_the_first_signal_is_kept_and_a_second_one_does_not_raise() -> None:
    with SignalWaiter() as signals:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        assert signals.wait() == signal.SIGINT


def test_a_stop_event_set_elsewhere_ends_the_wait_without_a_signal() -> None:
    stop = threading.Event()
    with SignalWaiter() as signals:
        threading.Timer(0.05, stop.set).start()
        assert signals.wait(stop, poll=0.01) is None


def test_a_timeout_ends_the_wait_and_a_signal_noted_before_ends_it_at_once() -> None:
    with SignalWaiter((signal.SIGINT,)) as signals:
        assert signals.wait(timeout=0.02, poll=30) is None  # the timeout, not the poll, ended it
        os.kill(os.getpid(), signal.SIGINT)
        assert signals.wait(timeout=30) == signal.SIGINT
