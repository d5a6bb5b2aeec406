"""The daemon's view of the memory manager checkpoint: optional, re-read on change, never fatal."""

import logging
import os
from pathlib import Path

import pytest

from rte.agent.scanner import MemoryStateCache
from tests.helpers.paths import R640_MEMORY_STATE

CHECKPOINT = R640_MEMORY_STATE


def test_a_missing_checkpoint_is_simply_absent(tmp_path: Path) -> None:
    assert MemoryStateCache(tmp_path / "memory_manager_state").get() is None
    assert MemoryStateCache(None).get() is None


def test_the_checkpoint_is_read_and_re_read_only_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "memory_manager_state"
    path.write_bytes(CHECKPOINT.read_bytes())
    cache = MemoryStateCache(path)
    first = cache.get()
    assert first is not None and first.policy == "static"
    assert cache.get() is first  # unchanged file: the same object, no re-parse
    replacement = tmp_path / "new"
    replacement.write_bytes(CHECKPOINT.read_bytes())
    os.replace(replacement, path)  # the kubelet replaces it by rename
    second = cache.get()
    assert second == first and second is not first


def test_a_malformed_checkpoint_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "memory_manager_state"
    path.write_text("{not json")
    with caplog.at_level(logging.WARNING):
        assert MemoryStateCache(path).get() is None
    assert "memory_manager_state" in caplog.text
