"""pytest fixtures for the apiserver double.

Enable with ``pytest_plugins = ["rte.testing.apiserver.pytest_plugin"]`` in the top-level
``conftest.py`` (this repository's tests do so in ``tests/conftest.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .server import FakeApiServer


@pytest.fixture
def fake_apiserver() -> Iterator[FakeApiServer]:
    """A started server with the NRT CRD installed and no objects; stopped after the test."""
    with FakeApiServer() as server:
        yield server


@pytest.fixture
def kube_api_client(fake_apiserver: FakeApiServer) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient`` bound to ``fake_apiserver`` (the global default untouched)."""
    api_client = fake_apiserver.api_client()
    try:
        yield api_client
    finally:
        api_client.close()


@pytest.fixture
def fake_kubeconfig(fake_apiserver: FakeApiServer, tmp_path: Path) -> Path:
    """A kubeconfig file for ``fake_apiserver``, for code that loads one itself."""
    return fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
