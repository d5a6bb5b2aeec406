"""Fixtures shared by the agent's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rte.runtime.kubeclient import load_api_client
from rte.testing.apiserver import FakeApiServer


@pytest.fixture
def api_client(fake_apiserver: FakeApiServer, tmp_path: Path) -> Iterator[Any]:
    """The agent's own API client (unpaced: qps=0) for the apiserver double, via a kubeconfig: the
    lean one without the generated ``ApiClient``, as ``rte run`` builds it."""
    kubeconfig = str(fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig"))
    client = load_api_client(kubeconfig, qps=0, generated=False)
    try:
        yield client
    finally:
        client.close()
