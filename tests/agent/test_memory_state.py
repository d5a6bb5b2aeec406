"""The daemon's view of the memory manager checkpoint: optional, re-read on change, never fatal."""

import logging
import os
from pathlib import Path

import pytest

from rte.agent.scanner import CheckpointFiles
from tests.helpers.paths import R640_MEMORY_STATE

CHECKPOINT = R640_MEMORY_STATE


def test_a_missing_checkpoint_is_simply_absent(tmp_path: Path) -> None:
    assert CheckpointFiles(tmp_path).read().memory is None
    assert CheckpointFiles(None).read().memory is None


def test_the_checkpoint_is_read_and_re_read_only_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "memory_manager_state"
    path.write_bytes(CHECKPOINT.read_bytes())
    files = CheckpointFiles(tmp_path)
    first = files.read().memory
    assert first is not None and first.policy == "static"
    assert files.read().memory is first  # unchanged file: the same object, no re-parse
    replacement = tmp_path / "new"
    replacement.write_bytes(CHECKPOINT.read_bytes())
    os.replace(replacement, path)  # the kubelet replaces it by rename
    second = files.read().memory
    assert second == first and second is not first


def test_a_malformed_checkpoint_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "memory_manager_state"
    path.write_text("{not json")
    with caplog.at_level(logging.WARNING):
        assert CheckpointFiles(tmp_path).read().memory is None
    assert "memory_manager_state" in caplog.text
