"""File triggers over real inotify (and the polling fallback) in a temporary directory."""

from __future__ import annotations

import os
import queue
import shutil
import struct
import threading
from pathlib import Path

import pytest

from rte.agent.watch import inotify
from rte.agent.watch.files import FileWatcher, WatchSpec

pytestmark = pytest.mark.skipif(not Path("/proc/sys/fs/inotify").exists(), reason="needs Linux inotify")


class Events:
    """Collects the reasons a watcher fires, from its thread."""

    def __init__(self) -> None:
        self.q: queue.Queue[str] = queue.Queue()

    def __call__(self, reason: str) -> None:
        self.q.put(reason)

    def next(self, timeout: float = 2.0) -> str:
        return self.q.get(timeout=timeout)

    def settle(self, quiet: float = 0.15) -> set[str]:
        """The distinct reasons of one change: the first, then any more until ``quiet`` passes.

        One change is several inotify events (a touch of a new file is IN_CREATE, IN_ATTRIB and
        IN_CLOSE_WRITE) that may arrive in one read or in several, so the watcher may fire once
        or a few times for it; the agent's loop coalesces them. What matters is which reasons fire.
        """
        reasons = {self.next()}
        while True:
            try:
                reasons.add(self.q.get(timeout=quiet))
            except queue.Empty:
                return reasons

    def none_within(self, seconds: float) -> bool:
        try:
            self.q.get(timeout=seconds)
        except queue.Empty:
            return True
        return False


@pytest.fixture
def watched(tmp_path: Path) -> tuple[Path, Path]:
    state = tmp_path / "kubelet"
    plugins = state / "device-plugins"
    plugins.mkdir(parents=True)
    return state, plugins


def _specs(state: Path, plugins: Path) -> list[WatchSpec]:
    return [
        WatchSpec(state, frozenset({"cpu_manager_state", "notify"}), "state"),
        WatchSpec(plugins, None, "plugins"),
    ]


def test_parse_events_reads_names_and_skips_padding() -> None:
    name = b"cpu_manager_state".ljust(32, b"\0")
    data = struct.pack("iIII", 3, inotify.IN_CLOSE_WRITE, 0, len(name)) + name
    data += struct.pack("iIII", -1, inotify.IN_Q_OVERFLOW, 0, 0)
    events = inotify.parse_events(data)
    assert events == [
        inotify.Event(3, inotify.IN_CLOSE_WRITE, "cpu_manager_state"),
        inotify.Event(-1, inotify.IN_Q_OVERFLOW, ""),
    ]


def test_writing_touching_and_renaming_over_a_watched_file_each_fire(watched: tuple[Path, Path]) -> None:
    state, plugins = watched
    events = Events()
    watcher = FileWatcher(_specs(state, plugins), events)
    assert watcher.mode == "inotify"
    watcher.start()
    try:
        (state / "notify").touch()  # created
        assert events.settle() == {"state"}
        os.utime(state / "notify")  # touched: what an OCI hook does
        assert events.settle() == {"state"}
        tmp = state / ".cpu_manager_state.tmp"
        tmp.write_text("{}")
        tmp.rename(state / "cpu_manager_state")  # how the kubelet replaces a checkpoint
        assert events.settle() == {"state"}
        (state / "unrelated").write_text("x")
        assert events.none_within(0.2)
        (plugins / "vendor.sock").touch()  # any entry of device-plugins/
        assert events.next() == "plugins"
    finally:
        watcher.stop()


def test_a_deleted_directory_fires_and_is_watched_again_once_it_is_back(watched: tuple[Path, Path]) -> None:
    state, plugins = watched
    events = Events()
    watcher = FileWatcher(_specs(state, plugins), events, rearm_interval=0.05)
    watcher.start()
    try:
        shutil.rmtree(plugins)
        assert events.next() == "plugins"
        plugins.mkdir()
        assert events.next() == "plugins"  # re-armed: something may have changed meanwhile
        (plugins / "late.sock").touch()
        assert events.next() == "plugins"
    finally:
        watcher.stop()


def test_a_directory_missing_at_start_is_watched_once_it_appears(tmp_path: Path) -> None:
    events = Events()
    later = tmp_path / "later"
    watcher = FileWatcher([WatchSpec(later, None, "late")], events, rearm_interval=0.05)
    watcher.start()
    try:
        later.mkdir()
        assert events.next() == "late"
        (later / "x").touch()
        assert events.next() == "late"
    finally:
        watcher.stop()


def test_a_queue_overflow_fires_every_reason(watched: tuple[Path, Path]) -> None:
    state, plugins = watched
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip("the inotify queue is too long to overflow quickly here")
    release, entered = threading.Event(), threading.Event()
    fired: list[str] = []

    def slow(reason: str) -> None:  # the first callback blocks, so nobody drains the queue
        fired.append(reason)
        entered.set()
        release.wait(10)

    watcher = FileWatcher(_specs(state, plugins), slow)
    watcher.start()
    try:
        (plugins / "first").touch()
        assert entered.wait(2)
        a, b = plugins / "a", plugins / "b"
        a.touch()
        b.touch()
        for _ in range(limit // 2 + 10):  # alternate files: the kernel merges identical events
            os.utime(a)
            os.utime(b)
        release.set()
        pause = threading.Event()
        for _ in range(200):
            if "state" in fired:
                break
            pause.wait(0.01)
        assert "state" in fired  # nothing happened in state/, but an overflow may hide anything
    finally:
        release.set()
        watcher.stop()


def test_without_inotify_the_watcher_polls_file_metadata(watched: tuple[Path, Path]) -> None:
    state, plugins = watched
    (state / "cpu_manager_state").write_text("{}")
    events = Events()
    watcher = FileWatcher(_specs(state, plugins), events, use_inotify=False, poll_interval=0.02)
    assert watcher.mode == "polling"
    watcher.start()
    try:
        assert events.none_within(0.1)
        (state / "cpu_manager_state").write_text('{"policyName": "static"}')
        assert events.next() == "state"
        (plugins / "new.sock").touch()
        assert events.next() == "plugins"
    finally:
        watcher.stop()
