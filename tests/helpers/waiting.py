"""Polling with a deadline, for tests that wait on another thread or process (never a blind sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout: float = 5.0, what: str = "condition") -> T:
    """Poll ``condition`` until it returns something truthy and return that; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.1f}s waiting for {what}")
        time.sleep(0.01)
